package sqlstore_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"github.com/seckill/seckill/adapters/sqlstore"
	"github.com/seckill/seckill/domain"
	"github.com/seckill/seckill/ports"
)

// persisted persists rs and fails unless every one became a live order.
func (f orderFixture) persisted(t *testing.T, rs ...domain.Reservation) {
	t.Helper()
	for i, res := range f.persist(t, rs...) {
		if want := result(rs[i], ports.Persisted, ""); res != want {
			t.Fatalf("Persist result %d = %+v, want persisted", i, res)
		}
	}
}

// liveUnits is what sold should be: the units of v's live orders, summed by SQL.
func (f orderFixture) liveUnits(t *testing.T, v domain.VoucherID) int {
	t.Helper()
	var units int
	err := f.db.NewRaw(
		"SELECT coalesce(sum(quantity), 0) FROM orders WHERE voucher_id = ? AND status IN ('awaiting_payment', 'paid')",
		int64(v),
	).Scan(context.Background(), &units)
	if err != nil {
		t.Fatalf("sum live units of voucher %d: %v", v, err)
	}
	return units
}

// wantConsistent fails unless v's sold counter equals the units of its live orders.
func (f orderFixture) wantConsistent(t *testing.T, v domain.VoucherID) {
	t.Helper()
	if sold, live := f.sold(t, v), f.liveUnits(t, v); sold != live {
		t.Fatalf("voucher %d: sold = %d, live units = %d", v, sold, live)
	}
}

// releasedAt returns the order's released_at; ok is false when it is NULL.
func releasedAt(t *testing.T, db *bun.DB, id domain.OrderID) (at time.Time, ok bool) {
	t.Helper()
	var v *time.Time
	if err := db.NewRaw("SELECT released_at FROM orders WHERE id = ?", string(id)).Scan(context.Background(), &v); err != nil {
		t.Fatalf("read released_at of %s: %v", id, err)
	}
	if v == nil {
		return time.Time{}, false
	}
	return *v, true
}

// The status condition of a conditional update selects, for each target status,
// exactly the orders whose status the domain's state machine lets become it. The
// orders get their statuses as the service gives them (queued is never stored).
func TestStatusConditionFollowsTheStateMachine(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newOrderFixture(t)
	v := f.voucher(t, 100)
	awaiting, paid, cancelled, expired := reserve(1, v, 1, 1), reserve(2, v, 2, 1), reserve(3, v, 3, 1), reserve(4, v, 4, 1)
	f.persisted(t, awaiting, paid, cancelled, expired)
	byID := map[domain.OrderID]domain.OrderStatus{awaiting.OrderID: domain.StatusAwaitingPayment}
	for r, to := range map[domain.Reservation]domain.OrderStatus{paid: domain.StatusPaid, cancelled: domain.StatusCancelled, expired: domain.StatusExpired} {
		if _, err := f.orders.Transition(ctx, r.OrderID, 0, to, nil); err != nil {
			t.Fatalf("move order %s to %s: %v", r.OrderID, to, err)
		}
		byID[r.OrderID] = to
	}
	// User 1 already holds a live order: this one is stored failed.
	failed := reserve(5, v, 1, 1)
	if got := f.persist(t, failed); got[0].Outcome != ports.Failed {
		t.Fatalf("Persist of a second live order = %+v, want it failed", got)
	}
	byID[failed.OrderID] = domain.StatusFailed

	for _, to := range []domain.OrderStatus{domain.StatusAwaitingPayment, domain.StatusPaid,
		domain.StatusCancelled, domain.StatusExpired, domain.StatusFailed} {
		var ids []string
		if err := f.db.NewSelect().TableExpr("orders AS o").Column("o.id").Where(sqlstore.Becoming(to)).
			Scan(ctx, &ids); err != nil {
			t.Fatalf("select the orders that may become %s: %v", to, err)
		}
		for id, status := range byID {
			if got, want := slices.Contains(ids, string(id)), status.CanBecome(to); got != want {
				t.Errorf("an order %s selected to become %s: %v, want %v", status, to, got, want)
			}
		}
	}
}

// ExpireDue finds the due orders through the partial indexes over orders awaiting
// payment, on both databases: those with a recorded deadline by the index on
// expires_at, those stored without one by the index on created_at or by the NULLs of
// the one on expires_at (either reads only orders awaiting payment). Its status
// condition, built from the domain's state machine, must say what the indexes say
// (SQLite matches status = 'awaiting_payment' but not status IN ('awaiting_payment')).
func TestExpireDueUsesIndex(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := openMigrated(t)
	log := &queryLog{}
	if _, err := sqlstore.NewOrders(db.WithQueryHook(log)).ExpireDue(ctx, t0, 0, 10); err != nil {
		t.Fatalf("ExpireDue: %v", err)
	}
	// Nothing is due, so the sweep is two SELECTs (between BEGIN and COMMIT, if logged).
	var sweep []string
	for _, q := range log.queries {
		if strings.HasPrefix(q, "SELECT") {
			sweep = append(sweep, q)
		}
	}
	if len(sweep) != 2 {
		t.Fatalf("ExpireDue ran %d SELECTs, want 2: %q", len(sweep), log.queries)
	}
	const byDeadline, byCreation = "orders_awaiting_payment_expires_at_idx", "orders_awaiting_payment_created_at_idx"
	wantPlanUses(ctx, t, db, sweep[0], byDeadline)
	wantPlanUses(ctx, t, db, sweep[1], byDeadline, byCreation)
}

// wantPlanUses fails t unless the plan of query uses one of indexes.
func wantPlanUses(ctx context.Context, t *testing.T, db *bun.DB, query string, indexes ...string) {
	t.Helper()
	var plan []string
	if sqlstore.IsSQLite(db) {
		plan = sqlitePlan(t, db, query)
	} else {
		err := db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
			// An empty table would be scanned whole; forbid that, as a big one would.
			if _, err := tx.ExecContext(ctx, "SET LOCAL enable_seqscan = off"); err != nil {
				return err
			}
			return tx.NewRaw("EXPLAIN "+query).Scan(ctx, &plan)
		})
		if err != nil {
			t.Fatalf("explain: %v", err)
		}
	}
	joined := strings.Join(plan, "\n")
	if !slices.ContainsFunc(indexes, func(index string) bool { return strings.Contains(joined, index) }) {
		t.Errorf("the plan of %q uses none of %v:\n%s", query, indexes, joined)
	}
}

// MarkReleased keeps an order's first released_at: marking it again changes nothing.
func TestMarkReleasedKeepsTheFirstTime(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newOrderFixture(t)
	v := f.voucher(t, 3)
	r1, r2 := reserve(1, v, 1, 1), reserve(2, v, 1, 1) // r2 fails: user 1 holds r1
	f.persist(t, r1, r2)
	for _, r := range []domain.Reservation{r1, r2} {
		if at, ok := releasedAt(t, f.db, r.OrderID); ok {
			t.Fatalf("order %s released at %v right after Persist, want NULL", r.OrderID, at)
		}
	}
	mark := func(ids ...domain.OrderID) {
		t.Helper()
		if err := f.orders.MarkReleased(ctx, ids...); err != nil {
			t.Fatalf("MarkReleased(%v): %v", ids, err)
		}
	}
	mark(r1.OrderID, r2.OrderID)
	if at, ok := releasedAt(t, f.db, r1.OrderID); ok {
		t.Fatalf("live order %s marked released at %v", r1.OrderID, at)
	}
	first, ok := releasedAt(t, f.db, r2.OrderID)
	if !ok {
		t.Fatalf("order %s not marked released", r2.OrderID)
	}
	mark(r2.OrderID)
	if again, _ := releasedAt(t, f.db, r2.OrderID); !again.Equal(first) {
		t.Fatalf("marking again moved released_at from %v to %v", first, again)
	}
}

func TestMarkReleasedNothing(t *testing.T) {
	t.Parallel()
	// A closed database proves nothing is touched.
	db := openMigrated(t)
	if err := db.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	if err := sqlstore.NewOrders(db).MarkReleased(context.Background()); err != nil {
		t.Fatalf("MarkReleased(): %v", err)
	}
}

// RecordDeadlines gives the orders awaiting payment stored without a deadline (before
// the column was) their created_at plus the window in force, once; from then on a
// sweeper with another window keeps them to it. An order with a deadline, or no
// longer awaiting payment, is left alone.
func TestRecordDeadlinesKeepsTheWindowInForce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newOrderFixture(t)
	v := f.voucher(t, 10)
	legacy, paid, kept := reserve(1, v, 1, 1), reserve(2, v, 2, 1), reserve(3, v, 3, 1)
	kept.Expires = kept.At.Add(time.Hour)
	f.persisted(t, legacy, paid, kept)
	if _, err := f.orders.Transition(ctx, paid.OrderID, 0, domain.StatusPaid, nil); err != nil {
		t.Fatal(err)
	}
	const window = domain.PaymentWindow(7 * time.Minute)
	for i, want := range []int{1, 0} {
		if n, err := f.orders.RecordDeadlines(ctx, window); err != nil || n != want {
			t.Fatalf("RecordDeadlines #%d = %d, %v; want %d", i+1, n, err, want)
		}
	}
	for _, tc := range []struct {
		r    domain.Reservation
		want time.Time
	}{{legacy, legacy.At.Add(7 * time.Minute)}, {paid, time.Time{}}, {kept, kept.Expires}} {
		if got := f.get(t, tc.r.OrderID).ExpiresAt; !got.Equal(tc.want.Truncate(time.Microsecond)) {
			t.Errorf("order %s expires at %v, want %v", tc.r.OrderID, got, tc.want)
		}
	}
	// A sweeper with a shorter window, past it: nothing is due.
	if got, err := f.orders.ExpireDue(ctx, legacy.At.Add(2*time.Minute), domain.PaymentWindow(time.Minute), 10); err != nil || len(got) != 0 {
		t.Fatalf("ExpireDue under a shorter window = %v, %v; want none", got, err)
	}
}
