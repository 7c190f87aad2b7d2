package sqlstore_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/uptrace/bun"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/seckill/seckill/adapters/sqlstore"
	"github.com/seckill/seckill/domain"
)

// These tests trip the schema's own safety nets with raw statements; the repositories
// are meant never to reach them.

// SQLSTATEs the tests expect.
const (
	foreignKeyViolation = "23503"
	uniqueViolation     = "23505"
	checkViolation      = "23514"
)

// sqliteCodes are SQLite's extended result codes for the same violations. A unique
// violation is either, as the constraint is the primary key or a unique index.
var sqliteCodes = map[string][]int{
	foreignKeyViolation: {sqlite3.SQLITE_CONSTRAINT_FOREIGNKEY},
	uniqueViolation:     {sqlite3.SQLITE_CONSTRAINT_UNIQUE, sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY},
	checkViolation:      {sqlite3.SQLITE_CONSTRAINT_CHECK},
}

// wantViolation fails unless err is the database's violation code on constraint.
// SQLite names only CHECK constraints in its errors, so on SQLite the name is
// checked for those alone.
func wantViolation(t *testing.T, err error, code, constraint string) {
	t.Helper()
	var liteErr *sqlite.Error
	if errors.As(err, &liteErr) {
		if !slices.Contains(sqliteCodes[code], liteErr.Code()) ||
			(code == checkViolation && !strings.HasSuffix(liteErr.Error(), "failed: "+constraint+" (275)")) {
			t.Fatalf("error = %v, want SQLite's %v on %s", err, sqliteCodes[code], constraint)
		}
		return
	}
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		t.Fatalf("error = %v, want PostgreSQL's %s on %s", err, code, constraint)
	}
	if pgErr.Code != code || pgErr.ConstraintName != constraint {
		t.Fatalf("error = %s on %q (%v), want %s on %q", pgErr.Code, pgErr.ConstraintName, err, code, constraint)
	}
}

func insertOrder(db *bun.DB, id string, voucher domain.VoucherID, user int64, status domain.OrderStatus) error {
	_, err := db.NewRaw(
		"INSERT INTO orders (id, voucher_id, user_id, quantity, status, created_at) VALUES (?, ?, ?, 1, ?, ?)",
		id, int64(voucher), user, string(status), t0.UTC(),
	).Exec(context.Background())
	return err
}

func mustInsertOrder(t *testing.T, db *bun.DB, id string, voucher domain.VoucherID, user int64, status domain.OrderStatus) {
	t.Helper()
	if err := insertOrder(db, id, voucher, user, status); err != nil {
		t.Fatalf("insert %s order %s (voucher %d, user %d): %v", status, id, voucher, user, err)
	}
}

func setStatus(t *testing.T, db *bun.DB, id string, status domain.OrderStatus) {
	t.Helper()
	_, err := db.NewRaw("UPDATE orders SET status = ?, updated_at = ? WHERE id = ?", string(status), time.Now().UTC(), id).
		Exec(context.Background())
	if err != nil {
		t.Fatalf("set order %s %s: %v", id, status, err)
	}
}

func TestOneLiveOrderPerUserAndVoucher(t *testing.T) {
	t.Parallel()
	db := openMigrated(t)
	vs := sqlstore.NewVouchers(db)
	v := create(t, vs, newVoucher("v", t0, t0.Add(time.Hour)))
	other := create(t, vs, newVoucher("other", t0, t0.Add(time.Hour)))
	const user = 7

	mustInsertOrder(t, db, "01KB0000000000000000000001", v.ID, user, domain.StatusQueued)
	// The same user on another voucher, and another user on this one, are distinct.
	mustInsertOrder(t, db, "01KB0000000000000000000002", other.ID, user, domain.StatusQueued)
	mustInsertOrder(t, db, "01KB0000000000000000000003", v.ID, user+1, domain.StatusQueued)

	// Every status that holds stock blocks a second live order.
	for _, live := range []domain.OrderStatus{domain.StatusQueued, domain.StatusAwaitingPayment, domain.StatusPaid} {
		setStatus(t, db, "01KB0000000000000000000001", live)
		err := insertOrder(db, "01KB0000000000000000000004", v.ID, user, domain.StatusQueued)
		wantViolation(t, err, uniqueViolation, "orders_live_voucher_user_key")
	}

	// Once the live order is closed the user may order again, and again after that.
	setStatus(t, db, "01KB0000000000000000000001", domain.StatusCancelled)
	mustInsertOrder(t, db, "01KB0000000000000000000005", v.ID, user, domain.StatusAwaitingPayment)
	setStatus(t, db, "01KB0000000000000000000005", domain.StatusExpired)
	mustInsertOrder(t, db, "01KB0000000000000000000006", v.ID, user, domain.StatusQueued)

	// A redelivered order id is refused whatever its status.
	err := insertOrder(db, "01KB0000000000000000000005", v.ID, user+2, domain.StatusQueued)
	wantViolation(t, err, uniqueViolation, "orders_pkey")
}

func TestOrderChecks(t *testing.T) {
	t.Parallel()
	db := openMigrated(t)
	v := create(t, sqlstore.NewVouchers(db), newVoucher("v", t0, t0.Add(time.Hour)))

	err := insertOrder(db, "01KB0000000000000000000001", v.ID, 1, "refunded")
	wantViolation(t, err, checkViolation, "orders_status_check")
	err = insertOrder(db, "01KB0000000000000000000002", v.ID, 0, domain.StatusQueued)
	wantViolation(t, err, checkViolation, "orders_user_id_check")
	err = insertOrder(db, "01KB0000000000000000000003", v.ID+1, 1, domain.StatusQueued)
	wantViolation(t, err, foreignKeyViolation, "orders_voucher_id_fkey")
}

func TestSoldNeverExceedsStock(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := openMigrated(t)
	vs := sqlstore.NewVouchers(db)
	v := create(t, vs, newVoucher("v", t0, t0.Add(time.Hour)))

	setSold := func(sold int) error {
		_, err := db.NewRaw("UPDATE vouchers SET sold = ? WHERE id = ?", sold, int64(v.ID)).Exec(ctx)
		return err
	}
	if err := setSold(v.Stock); err != nil {
		t.Fatalf("selling out exactly: %v", err)
	}
	wantViolation(t, setSold(v.Stock+1), checkViolation, "vouchers_sold_check")
	wantViolation(t, setSold(-1), checkViolation, "vouchers_sold_check")

	got, err := vs.Get(ctx, v.ID)
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	if got.Sold != v.Stock {
		t.Fatalf("sold = %d after refused updates, want %d", got.Sold, v.Stock)
	}
}

// queryLog records the SQL of every query a bun.DB runs.
// sqlitePlan returns the details of SQLite's plan of query, one a step.
func sqlitePlan(t *testing.T, db bun.IDB, query string) []string {
	t.Helper()
	var rows []struct {
		ID      int    `bun:"id"`
		Parent  int    `bun:"parent"`
		NotUsed int    `bun:"notused"`
		Detail  string `bun:"detail"`
	}
	if err := db.NewRaw("EXPLAIN QUERY PLAN "+query).Scan(context.Background(), &rows); err != nil {
		t.Fatalf("explain: %v", err)
	}
	details := make([]string, len(rows))
	for i, r := range rows {
		details[i] = r.Detail
	}
	return details
}

type queryLog struct {
	mu      sync.Mutex
	queries []string
}

func (l *queryLog) BeforeQuery(ctx context.Context, _ *bun.QueryEvent) context.Context { return ctx }

func (l *queryLog) AfterQuery(_ context.Context, e *bun.QueryEvent) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.queries = append(l.queries, e.Query)
}

// released_at starts NULL (not released), and Unreleased's query is served by the
// partial index over closed, unreleased orders, not by scanning every order.
func TestReleasedAtSchema(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := openMigrated(t)

	var nullable, typ string
	var def *string
	column := `SELECT is_nullable, data_type, column_default FROM information_schema.columns
		WHERE table_name = 'orders' AND column_name = 'released_at'`
	if sqlstore.IsSQLite(db) {
		column = `SELECT CASE "notnull" WHEN 0 THEN 'YES' ELSE 'NO' END, lower(type), dflt_value
			FROM pragma_table_info('orders') WHERE name = 'released_at'`
	}
	if err := db.NewRaw(column).Scan(ctx, &nullable, &typ, &def); err != nil {
		t.Fatalf("look up released_at: %v", err)
	}
	if nullable != "YES" || (typ != "timestamp with time zone" && typ != "timestamptz") || def != nil {
		t.Fatalf("released_at is %s, nullable %s, default %v; want a nullable timestamptz without default", typ, nullable, def)
	}

	log := &queryLog{}
	if _, err := sqlstore.NewOrders(db.WithQueryHook(log)).Unreleased(ctx, 10); err != nil {
		t.Fatalf("Unreleased: %v", err)
	}
	if len(log.queries) != 1 {
		t.Fatalf("Unreleased ran %d queries, want 1: %q", len(log.queries), log.queries)
	}
	if sqlstore.IsSQLite(db) {
		// SQLite plans with the index whatever the table's size.
		plan := sqlitePlan(t, db, log.queries[0])
		// The scan goes through the index (ties on updated_at are then sorted by id).
		if len(plan) == 0 || !strings.Contains(plan[0], "USING INDEX orders_closed_unreleased_updated_at_idx") {
			t.Errorf("Unreleased's plan does not use orders_closed_unreleased_updated_at_idx: %+v", plan)
		}
		return
	}
	// An empty table would be scanned whole; forbid that, as a big one would.
	err := db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		if _, err := tx.ExecContext(ctx, "SET LOCAL enable_seqscan = off"); err != nil {
			return err
		}
		var plan []string
		if err := tx.NewRaw("EXPLAIN "+log.queries[0]).Scan(ctx, &plan); err != nil {
			return err
		}
		if !strings.Contains(strings.Join(plan, "\n"), "orders_closed_unreleased_updated_at_idx") {
			t.Errorf("Unreleased's plan does not use orders_closed_unreleased_updated_at_idx:\n%s", strings.Join(plan, "\n"))
		}
		return nil
	})
	if err != nil {
		t.Fatalf("explain: %v", err)
	}
}
