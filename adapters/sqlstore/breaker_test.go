package sqlstore_test

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/sony/gobreaker/v2"
	"github.com/uptrace/bun"

	"github.com/seckill/seckill/adapters/breaker"
	"github.com/seckill/seckill/adapters/sqlstore"
	"github.com/seckill/seckill/adapters/testenv"
	"github.com/seckill/seckill/domain"
	"github.com/seckill/seckill/ports"
)

// guarded returns the repositories of a migrated database of their own, reached
// through a link the test can cut or hang, opened with OpenGuarded.
func guarded(t *testing.T, opts sqlstore.GuardOptions) (*bun.DB, *sqlstore.Vouchers, *testenv.Link) {
	t.Helper()
	ctx := context.Background()
	direct := testenv.PostgresURL(t)
	mig, err := sqlstore.Open(ctx, direct)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	if _, err := sqlstore.MigrateUp(ctx, mig); err != nil {
		t.Fatalf("migrate up: %v", err)
	}
	_ = mig.Close()

	u, err := url.Parse(direct)
	if err != nil {
		t.Fatal(err)
	}
	l := testenv.NewLink(t, u.Host)
	u.Host = l.Addr()
	// The first connection is the set-up's, not what the test is about: under the
	// short ConnectTimeout a busy machine may miss it once, so it is tried again.
	var db *bun.DB
	testenv.Eventually(t, testenv.Patience, "the guarded database opened", func() (bool, string) {
		var err error
		db, err = sqlstore.OpenGuarded(ctx, u.String(), opts)
		if err != nil {
			return false, err.Error()
		}
		return true, ""
	})
	// Closed before testenv drops the database, and before the link goes.
	t.Cleanup(func() { _ = db.Close() })
	return db, sqlstore.NewVouchers(db), l
}

// waitRecovered lists vouchers until it works again.
func waitRecovered(t *testing.T, vs *sqlstore.Vouchers, want int) {
	t.Helper()
	testenv.Eventually(t, testenv.Patience, "recovery after the database came back", func() (bool, string) {
		got, err := vs.List(context.Background(), ports.VoucherQuery{Limit: 1000})
		if err == nil && len(got) != want {
			t.Fatalf("after recovery: %d vouchers, want %d", len(got), want)
		}
		if err != nil && !errors.Is(err, domain.ErrUnavailable) {
			t.Fatalf("list while the database comes back: %v", err)
		}
		return err == nil, fmt.Sprint(err)
	})
}

// TestGuardedDatabaseDownAndBack cuts the database off (connections refused, live ones
// reset, as when it stops): calls answer ErrUnavailable, the breaker opens and then
// refuses at once; once the database is reachable again the pool recovers by itself.
func TestGuardedDatabaseDownAndBack(t *testing.T) {
	ctx := context.Background()
	_, vs, l := guarded(t, sqlstore.GuardOptions{Breaker: breaker.Settings{MinCalls: 3, OpenFor: 200 * time.Millisecond}, CallTimeout: 300 * time.Millisecond})
	create(t, vs, newVoucher("before", t0, t0.Add(time.Hour)))

	l.Down()
	var err error
	for i := 0; i < 10 && !errors.Is(err, gobreaker.ErrOpenState); i++ {
		_, err = vs.List(ctx, ports.VoucherQuery{Limit: 1000})
		t.Logf("list %d with the database down: %v", i, err)
		if !errors.Is(err, domain.ErrUnavailable) {
			t.Fatalf("list %d with the database down: %v, want ErrUnavailable", i, err)
		}
	}
	if !errors.Is(err, gobreaker.ErrOpenState) {
		t.Fatalf("the breaker did not open after 10 failures: %v", err)
	}
	v := newVoucher("while down", t0, t0.Add(time.Hour))
	if err := vs.Create(ctx, &v, domain.Author{}, nil); !errors.Is(err, domain.ErrUnavailable) || !errors.Is(err, gobreaker.ErrOpenState) {
		t.Fatalf("create with the breaker open: %v", err)
	}

	l.Up()
	waitRecovered(t, vs, 1)
	create(t, vs, newVoucher("after", t0, t0.Add(time.Hour)))
}

// TestGuardedDatabaseHung makes the database stop answering: a call without a
// deadline of its own gives up at CallTimeout, the breaker opens and then refuses far
// quicker than that; when the database answers again the pool recovers by itself.
func TestGuardedDatabaseHung(t *testing.T) {
	ctx := context.Background()
	const callTimeout = 300 * time.Millisecond
	_, vs, l := guarded(t, sqlstore.GuardOptions{Breaker: breaker.Settings{MinCalls: 2, OpenFor: 200 * time.Millisecond}, CallTimeout: callTimeout, ConnectTimeout: callTimeout})
	create(t, vs, newVoucher("before", t0, t0.Add(time.Hour)))

	l.Hang()
	var err error
	for i := 0; i < 20 && !errors.Is(err, gobreaker.ErrOpenState); i++ {
		_, err = vs.List(ctx, ports.VoucherQuery{Limit: 1000})
		t.Logf("list %d on a hung database: %v", i, err)
		if !errors.Is(err, domain.ErrUnavailable) {
			t.Fatalf("list %d on a hung database: %v, want ErrUnavailable", i, err)
		}
	}
	// Open, it refuses without the network: its own refusal.
	if _, err = vs.List(ctx, ports.VoucherQuery{Limit: 1000}); !errors.Is(err, gobreaker.ErrOpenState) {
		t.Fatalf("list with the breaker open: %v", err)
	}

	l.Heal()
	waitRecovered(t, vs, 1)
}

// TestGuardedDatabaseDeadlines checks the deadlines OpenGuarded adds: a statement
// without one stops at CallTimeout, a transaction and a read still work under it, and
// a connection attempt stops at ConnectTimeout even when the dsn allows longer.
func TestGuardedDatabaseDeadlines(t *testing.T) {
	ctx := context.Background()
	const callTimeout = 300 * time.Millisecond
	db, vs, l := guarded(t, sqlstore.GuardOptions{CallTimeout: callTimeout})

	began := time.Now()
	// The statement would take a minute; the bound is far from both, for a busy machine.
	_, err := db.ExecContext(ctx, "SELECT pg_sleep(60)")
	if took := time.Since(began); err == nil || took >= 30*time.Second {
		t.Fatalf("a 60 s statement under a %v call timeout: %v after %v", callTimeout, err, took)
	}
	if !pgconn.Timeout(err) && !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a statement past the call timeout: %v, want a timeout", err)
	}

	// A transaction carries the deadline from BEGIN to COMMIT; rows are read under it.
	err = db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		_, err := tx.ExecContext(ctx, "INSERT INTO vouchers (title, stock, begins_at, ends_at, per_user_limit) VALUES ('tx', 1, now(), now() + interval '1 hour', 1)")
		return err
	})
	if err != nil {
		t.Fatalf("transaction: %v", err)
	}
	if got := list(t, vs); len(got) != 1 || got[0].Title != "tx" {
		t.Fatalf("after the transaction: %+v", got)
	}
	// The deadline runs from BEGIN, not per statement: statements that each end within
	// CallTimeout, but not all of them together, leave nothing committed.
	err = db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		if _, err := tx.ExecContext(ctx, "INSERT INTO vouchers (title, stock, begins_at, ends_at, per_user_limit) VALUES ('late', 1, now(), now() + interval '1 hour', 1)"); err != nil {
			return err
		}
		for range 3 {
			if _, err := tx.ExecContext(ctx, "SELECT pg_sleep(0.2)"); err != nil {
				return err
			}
		}
		return nil
	})
	if err == nil {
		t.Fatalf("a transaction of 600 ms under a %v call timeout committed", callTimeout)
	}
	if got := list(t, vs); len(got) != 1 {
		t.Fatalf("after a transaction past the call timeout: %+v, want only the first voucher", got)
	}

	// A fresh pool to a server that accepts but never answers: the dsn's 120 s
	// connect_timeout is capped at ConnectTimeout.
	l.Hang()
	u, err := url.Parse("postgres://postgres@" + l.Addr() + "/postgres?sslmode=disable&connect_timeout=120")
	if err != nil {
		t.Fatal(err)
	}
	const connectTimeout = 300 * time.Millisecond
	began = time.Now()
	hungDB, err := sqlstore.OpenGuarded(ctx, u.String(), sqlstore.GuardOptions{ConnectTimeout: connectTimeout})
	took := time.Since(began)
	if err == nil {
		_ = hungDB.Close()
		t.Fatal("opened a database that never answers")
	}
	if took >= 30*time.Second {
		t.Fatalf("connecting to a silent server took %v, want about the %v connect timeout, not the dsn's 120 s", took, connectTimeout)
	}
}

// TestGuardedCommitFailureIsUnavailable: the database stops answering (or drops the
// connection) as a write commits: the write's outcome is the database's failure, not
// the request's, so it is an error wrapping ErrUnavailable (answered 503), never a
// bare error (a 500).
func TestGuardedCommitFailureIsUnavailable(t *testing.T) {
	ctx := context.Background()
	for _, fault := range []string{"hang", "cut"} {
		t.Run(fault, func(t *testing.T) {
			_, vs, l := guarded(t, sqlstore.GuardOptions{Breaker: breaker.Settings{MinCalls: 100, OpenFor: 200 * time.Millisecond},
				CallTimeout: 300 * time.Millisecond, ConnectTimeout: 300 * time.Millisecond})
			v := create(t, vs, newVoucher("before", t0, t0.Add(time.Hour)))
			_, err := vs.Update(ctx, v.ID, ports.VoucherUpdate{Action: domain.AuditVoucherUpdate,
				Change: func(v domain.Voucher) (domain.Voucher, error) {
					v.Title = "after"
					return v, nil
				},
				Commit: func(context.Context, domain.Voucher, domain.Voucher) error {
					if fault == "hang" {
						l.Hang()
					} else {
						l.Down()
					}
					return nil
				}})
			if !errors.Is(err, domain.ErrUnavailable) {
				t.Fatalf("update whose commit met a %s database: %v, want ErrUnavailable", fault, err)
			}
			if fault == "hang" {
				l.Heal()
			} else {
				l.Up()
			}
			waitRecovered(t, vs, 1)
		})
	}
}
