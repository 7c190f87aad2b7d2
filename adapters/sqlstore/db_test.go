package sqlstore_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"github.com/seckill/seckill/adapters/sqlstore"
	"github.com/seckill/seckill/domain"
	"github.com/seckill/seckill/ports"
)

func TestOpenRejectsBadDSN(t *testing.T) {
	for name, dsn := range map[string]string{
		"malformed":   "postgres://seckill:s3cret@127.0.0.1:notaport/seckill",
		"unreachable": "postgres://seckill:s3cret@127.0.0.1:1/seckill?sslmode=disable&connect_timeout=5",
	} {
		t.Run(name, func(t *testing.T) {
			db, err := sqlstore.Open(context.Background(), dsn)
			if err == nil {
				_ = db.Close()
				t.Fatal("Open succeeded, want an error")
			}
			if strings.Contains(err.Error(), "s3cret") {
				t.Fatalf("error reveals the password: %v", err)
			}
		})
	}
}

func TestOpenPings(t *testing.T) {
	db := openDB(t)
	var got int
	if err := db.NewRaw("SELECT 1").Scan(context.Background(), &got); err != nil {
		t.Fatalf("select: %v", err)
	}
	if want := 1; got != want {
		t.Fatalf("SELECT 1 = %d, want %d", got, want)
	}
}

func TestSQLitePath(t *testing.T) {
	for _, tc := range []struct {
		url, path string
		sqlite    bool
		bad       bool
	}{
		{url: "sqlite:seckill.db", path: "seckill.db", sqlite: true},
		{url: "sqlite:data/seckill.db", path: "data/seckill.db", sqlite: true},
		{url: "sqlite:///var/lib/seckill.db", path: "/var/lib/seckill.db", sqlite: true},
		{url: "sqlite:", sqlite: true, bad: true},
		{url: "sqlite://", sqlite: true, bad: true},
		{url: "sqlite:a.db?mode=ro", sqlite: true, bad: true},
		{url: "postgres://127.0.0.1/seckill"},
		{url: "host=127.0.0.1 dbname=seckill"},
	} {
		path, ok, err := sqlstore.SQLitePath(tc.url)
		if ok != tc.sqlite || (err != nil) != tc.bad || path != tc.path {
			t.Errorf("SQLitePath(%q) = %q, %v, %v; want %q, %v, error %v", tc.url, path, ok, err, tc.path, tc.sqlite, tc.bad)
		}
	}
}

// openSQLite opens a migrated SQLite file of the test's own, whatever database the
// run tests: SQLite is part of the binary, so these tests need no service.
func openSQLite(t *testing.T, url string) *bun.DB {
	t.Helper()
	db, err := sqlstore.Open(context.Background(), url)
	if err != nil {
		t.Fatalf("open %s: %v", url, err)
	}
	t.Cleanup(func() { _ = db.Close() })
	if _, err := sqlstore.MigrateUp(context.Background(), db); err != nil {
		t.Fatalf("migrate up: %v", err)
	}
	return db
}

// A SQLite database is one connection with write-ahead logging, foreign keys enforced
// and a busy timeout, whose transactions take the write lock when they begin.
func TestSQLiteConnectionSettings(t *testing.T) {
	ctx := context.Background()
	url := sqlstore.SQLiteScheme + filepath.Join(t.TempDir(), "s.db")
	db := openSQLite(t, url)
	for pragma, want := range map[string]string{"journal_mode": "wal", "foreign_keys": "1", "busy_timeout": "5000"} {
		var got string
		if err := db.NewRaw("PRAGMA "+pragma).Scan(ctx, &got); err != nil {
			t.Fatalf("PRAGMA %s: %v", pragma, err)
		}
		if got != want {
			t.Errorf("PRAGMA %s = %q, want %q", pragma, got, want)
		}
	}

	if got, want := db.Stats().MaxOpenConnections, 1; got != want {
		t.Errorf("pool of %d connections, want %d", got, want)
	}

	// A transaction holds the write lock from BEGIN, before it writes anything: one
	// on another handle (another process) cannot even begin until the first ends.
	other := openSQLite(t, url)
	first, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatalf("begin: %v", err)
	}
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	if second, err := other.BeginTx(short, nil); err == nil {
		_ = second.Rollback()
		t.Fatal("a second transaction began while the first held the write lock")
	}
	if err := first.Rollback(); err != nil {
		t.Fatalf("rollback: %v", err)
	}
	second, err := other.BeginTx(ctx, nil)
	if err != nil {
		t.Fatalf("begin after the first ended: %v", err)
	}
	_ = second.Rollback()
}

// A SQLite file another process keeps locked past the busy timeout is
// domain.ErrUnavailable, as an unreachable PostgreSQL is: the worker keeps its batch
// and retries. Once the lock is gone the same call succeeds.
func TestSQLiteLockedIsUnavailable(t *testing.T) {
	ctx := context.Background()
	url := sqlstore.SQLiteScheme + filepath.Join(t.TempDir(), "s.db")
	db := openSQLite(t, url)
	other := openSQLite(t, url) // another handle on the file: a process of its own
	v := newVoucher("locked", t0, t0.Add(time.Hour))
	if err := sqlstore.NewVouchers(db).Create(ctx, &v, domain.Author{}, nil); err != nil {
		t.Fatalf("create: %v", err)
	}

	lock, err := other.BeginTx(ctx, nil)
	if err != nil {
		t.Fatalf("begin: %v", err)
	}
	r := reserve(1, v.ID, 1, 1)
	orders := sqlstore.NewOrders(db)
	if _, err := orders.Persist(ctx, []domain.Reservation{r}); !errors.Is(err, domain.ErrUnavailable) {
		t.Fatalf("Persist on a locked file: %v, want domain.ErrUnavailable", err)
	}
	if err := lock.Rollback(); err != nil {
		t.Fatalf("rollback: %v", err)
	}
	got, err := orders.Persist(ctx, []domain.Reservation{r})
	if err != nil || got[0].Outcome != ports.Persisted {
		t.Fatalf("Persist once unlocked = %+v, %v; want persisted", got, err)
	}
}
