package sqlstore_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
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

func TestTransition(t *testing.T) {
	for _, tc := range []struct {
		to       domain.OrderStatus
		user     bool // the owner asks; otherwise user 0 (any user)
		soldLeft int
	}{
		{domain.StatusPaid, true, 2},
		{domain.StatusCancelled, true, 0},
		{domain.StatusExpired, false, 0},
	} {
		t.Run(string(tc.to), func(t *testing.T) {
			ctx := context.Background()
			f := newOrderFixture(t)
			v := f.voucher(t, 10)
			const owner = 7
			r := reserve(1, v, owner, 2)
			f.persisted(t, r)
			user := domain.UserID(0)
			if tc.user {
				user = owner
			}

			got, err := f.orders.Transition(ctx, r.OrderID, user, tc.to)
			if err != nil {
				t.Fatalf("Transition to %s: %v", tc.to, err)
			}
			if want := asOrder(r, tc.to); got != want {
				t.Fatalf("Transition returned\n%+v, want\n%+v", got, want)
			}
			if got, want := f.get(t, r.OrderID), asOrder(r, tc.to); got != want {
				t.Fatalf("stored order =\n%+v, want\n%+v", got, want)
			}
			if got, want := f.sold(t, v), tc.soldLeft; got != want {
				t.Fatalf("sold = %d after %s, want %d", got, tc.to, want)
			}

			// From here every transition is refused, and changes nothing: the owner
			// (or anyone) finds it in the wrong state, another user does not find it.
			for _, next := range []domain.OrderStatus{domain.StatusPaid, domain.StatusCancelled, domain.StatusExpired} {
				for _, u := range []domain.UserID{owner, 0} {
					if _, err := f.orders.Transition(ctx, r.OrderID, u, next); !errors.Is(err, domain.ErrInvalidState) {
						t.Fatalf("%s order to %s by user %d: %v, want domain.ErrInvalidState", tc.to, next, u, err)
					}
				}
				if _, err := f.orders.Transition(ctx, r.OrderID, owner+1, next); !errors.Is(err, domain.ErrNotFound) {
					t.Fatalf("%s order to %s by another user: %v, want domain.ErrNotFound", tc.to, next, err)
				}
			}
			if got, want := f.get(t, r.OrderID).Status, tc.to; got != want {
				t.Fatalf("status = %s after refused transitions, want %s", got, want)
			}
			if got, want := f.sold(t, v), tc.soldLeft; got != want {
				t.Fatalf("sold = %d after refused transitions, want %d", got, want)
			}
		})
	}
}

func TestTransitionRefusals(t *testing.T) {
	ctx := context.Background()
	f := newOrderFixture(t)
	v := f.voucher(t, 10)
	const owner = 7
	r := reserve(1, v, owner, 2)
	failed := reserve(2, v, owner, 1) // fails: the owner holds r
	f.persist(t, r, failed)

	wantUntouched := func(t *testing.T) {
		t.Helper()
		if got, want := f.get(t, r.OrderID), asOrder(r, domain.StatusAwaitingPayment); got != want {
			t.Fatalf("order =\n%+v, want it untouched\n%+v", got, want)
		}
		if got, want := f.sold(t, v), 2; got != want {
			t.Fatalf("sold = %d, want %d", got, want)
		}
	}

	t.Run("another user's order", func(t *testing.T) {
		for _, to := range []domain.OrderStatus{domain.StatusPaid, domain.StatusCancelled, domain.StatusExpired} {
			if _, err := f.orders.Transition(ctx, r.OrderID, owner+1, to); !errors.Is(err, domain.ErrNotFound) {
				t.Fatalf("to %s: %v, want domain.ErrNotFound", to, err)
			}
		}
		wantUntouched(t)
	})
	t.Run("unknown order", func(t *testing.T) {
		for _, user := range []domain.UserID{owner, 0} {
			if _, err := f.orders.Transition(ctx, orderID(99), user, domain.StatusPaid); !errors.Is(err, domain.ErrNotFound) {
				t.Fatalf("user %d: %v, want domain.ErrNotFound", user, err)
			}
		}
	})
	t.Run("failed order", func(t *testing.T) {
		if _, err := f.orders.Transition(ctx, failed.OrderID, owner, domain.StatusCancelled); !errors.Is(err, domain.ErrInvalidState) {
			t.Fatalf("cancel a failed order: %v, want domain.ErrInvalidState", err)
		}
	})
	t.Run("target status", func(t *testing.T) {
		for _, to := range []domain.OrderStatus{domain.StatusQueued, domain.StatusAwaitingPayment, domain.StatusFailed, "", "refunded"} {
			_, err := f.orders.Transition(ctx, r.OrderID, owner, to)
			var verr *domain.ValidationError
			if !errors.As(err, &verr) || verr.Field != "status" {
				t.Fatalf("to %q: %v, want a *domain.ValidationError on status", to, err)
			}
		}
		wantUntouched(t)
	})
}

// race runs a and b at once, as closely together as goroutines allow.
func race(a, b func()) {
	start := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() { <-start; a() })
	wg.Go(func() { <-start; b() })
	close(start)
	wg.Wait()
}

// A payment racing the expiry sweeper: exactly one of them wins each order.
func TestTransitionPayVersusExpire(t *testing.T) {
	ctx := context.Background()
	f := newOrderFixture(t)
	v := f.voucher(t, 1000)
	const orders = 50
	var rs []domain.Reservation
	for n := 1; n <= orders; n++ {
		rs = append(rs, reserve(n, v, int64(n), 1+n%3))
	}
	f.persisted(t, rs...)

	paid := 0
	for _, r := range rs {
		// Every older order is decided, so the sweeper can only find this one.
		cutoff := r.At.Add(500 * time.Millisecond)
		var (
			pay              domain.Order
			payErr, sweepErr error
			expired          []domain.Order
		)
		race(
			func() { pay, payErr = f.orders.Transition(ctx, r.OrderID, r.UserID, domain.StatusPaid) },
			func() { expired, sweepErr = f.orders.ExpireDue(ctx, cutoff, 1) },
		)
		if sweepErr != nil {
			t.Fatalf("order %s: ExpireDue: %v", r.OrderID, sweepErr)
		}
		switch {
		case payErr == nil && len(expired) == 0:
			if want := asOrder(r, domain.StatusPaid); pay != want {
				t.Fatalf("order %s: paid as %+v, want %+v", r.OrderID, pay, want)
			}
			paid++
		case errors.Is(payErr, domain.ErrInvalidState) && len(expired) == 1:
			if want := asOrder(r, domain.StatusExpired); expired[0] != want {
				t.Fatalf("order %s: expired %+v, want %+v", r.OrderID, expired[0], want)
			}
		default:
			t.Fatalf("order %s: pay returned %v and the sweeper expired %+v; want exactly one winner", r.OrderID, payErr, expired)
		}
	}
	t.Logf("%d paid, %d expired", paid, orders-paid)

	live := 0
	for _, r := range rs {
		if s := f.get(t, r.OrderID).Status; s == domain.StatusPaid {
			live += r.Quantity
		} else if s != domain.StatusExpired {
			t.Fatalf("order %s is %s, want paid or expired", r.OrderID, s)
		}
	}
	if got := f.sold(t, v); got != live {
		t.Fatalf("sold = %d, want the %d units of paid orders", got, live)
	}
	f.wantConsistent(t, v)
}

// Payments and sweepers all at once over the same orders: every order is paid or
// expired, never both, and the sweepers never expire one twice.
func TestTransitionPayVersusExpireBurst(t *testing.T) {
	ctx := context.Background()
	f := newOrderFixture(t)
	v := f.voucher(t, 1000)
	const orders, sweepers = 50, 4
	var rs []domain.Reservation
	for n := 1; n <= orders; n++ {
		rs = append(rs, reserve(n, v, int64(n), 1+n%3))
	}
	f.persisted(t, rs...)
	cutoff := t0.Add(time.Hour)

	start := make(chan struct{})
	var wg sync.WaitGroup
	payErrs := make([]error, orders)
	for i, r := range rs {
		wg.Go(func() {
			<-start
			_, payErrs[i] = f.orders.Transition(ctx, r.OrderID, r.UserID, domain.StatusPaid)
		})
	}
	swept := make([][]domain.Order, sweepers)
	sweepErrs := make([]error, sweepers)
	for s := range sweepers {
		wg.Go(func() {
			<-start
			for {
				got, err := f.orders.ExpireDue(ctx, cutoff, 3)
				if err != nil {
					sweepErrs[s] = err
					return
				}
				if len(got) == 0 {
					return
				}
				swept[s] = append(swept[s], got...)
			}
		})
	}
	close(start)
	wg.Wait()

	expired := map[domain.OrderID]bool{}
	for s, err := range sweepErrs {
		if err != nil {
			t.Fatalf("sweeper %d: %v", s, err)
		}
		for _, o := range swept[s] {
			if expired[o.ID] {
				t.Fatalf("order %s expired twice", o.ID)
			}
			expired[o.ID] = true
		}
	}
	for i, r := range rs {
		switch err := payErrs[i]; {
		case err == nil && !expired[r.OrderID]:
		case errors.Is(err, domain.ErrInvalidState) && expired[r.OrderID]:
		default:
			t.Fatalf("order %s: pay returned %v, expired by a sweeper: %t; want exactly one", r.OrderID, err, expired[r.OrderID])
		}
		want := domain.StatusPaid
		if expired[r.OrderID] {
			want = domain.StatusExpired
		}
		if got := f.get(t, r.OrderID).Status; got != want {
			t.Fatalf("order %s is %s, want %s", r.OrderID, got, want)
		}
	}
	t.Logf("%d paid, %d expired", orders-len(expired), len(expired))
	f.wantConsistent(t, v)
}

// A payment racing the owner's cancellation: exactly one of them wins each order.
func TestTransitionPayVersusCancel(t *testing.T) {
	ctx := context.Background()
	f := newOrderFixture(t)
	v := f.voucher(t, 1000)
	const orders = 50
	var rs []domain.Reservation
	for n := 1; n <= orders; n++ {
		rs = append(rs, reserve(n, v, int64(n), 1+n%3))
	}
	f.persisted(t, rs...)

	cancelled := 0
	for _, r := range rs {
		var (
			pay, cancel       domain.Order
			payErr, cancelErr error
		)
		race(
			func() { pay, payErr = f.orders.Transition(ctx, r.OrderID, r.UserID, domain.StatusPaid) },
			func() { cancel, cancelErr = f.orders.Transition(ctx, r.OrderID, r.UserID, domain.StatusCancelled) },
		)
		switch {
		case payErr == nil && errors.Is(cancelErr, domain.ErrInvalidState):
			if want := asOrder(r, domain.StatusPaid); pay != want {
				t.Fatalf("order %s: paid as %+v, want %+v", r.OrderID, pay, want)
			}
		case cancelErr == nil && errors.Is(payErr, domain.ErrInvalidState):
			if want := asOrder(r, domain.StatusCancelled); cancel != want {
				t.Fatalf("order %s: cancelled as %+v, want %+v", r.OrderID, cancel, want)
			}
			cancelled++
		default:
			t.Fatalf("order %s: pay returned %v, cancel %v; want exactly one to win", r.OrderID, payErr, cancelErr)
		}
		if got, want := f.get(t, r.OrderID).Status, map[bool]domain.OrderStatus{true: domain.StatusPaid, false: domain.StatusCancelled}[payErr == nil]; got != want {
			t.Fatalf("order %s is %s, want %s", r.OrderID, got, want)
		}
	}
	t.Logf("%d paid, %d cancelled", orders-cancelled, cancelled)
	f.wantConsistent(t, v)
}

func TestExpireDue(t *testing.T) {
	ctx := context.Background()
	f := newOrderFixture(t)
	v, w := f.voucher(t, 100), f.voucher(t, 100)
	// Orders 1-6 are due (created before the cutoff), 7 and 8 are not; 2 is paid and
	// 5 failed, so neither is awaiting payment.
	rs := []domain.Reservation{
		reserve(1, v, 1, 1), reserve(2, v, 2, 2), reserve(3, w, 3, 3), reserve(4, v, 4, 1),
		reserve(5, v, 1, 1), reserve(6, w, 6, 2), reserve(7, v, 7, 1), reserve(8, w, 8, 1),
	}
	f.persist(t, rs...)
	if _, err := f.orders.Transition(ctx, rs[1].OrderID, 0, domain.StatusPaid); err != nil {
		t.Fatalf("pay: %v", err)
	}
	cutoff := rs[6].At // created_at < cutoff: order 7 itself is not due

	expire := func(limit int) []domain.Order {
		t.Helper()
		got, err := f.orders.ExpireDue(ctx, cutoff, limit)
		if err != nil {
			t.Fatalf("ExpireDue(%d): %v", limit, err)
		}
		return got
	}
	// The oldest first, up to the limit.
	if got, want := expire(2), []domain.Order{asOrder(rs[0], domain.StatusExpired), asOrder(rs[2], domain.StatusExpired)}; !slices.Equal(got, want) {
		t.Fatalf("first sweep =\n%+v, want\n%+v", got, want)
	}
	if got, want := expire(10), []domain.Order{asOrder(rs[3], domain.StatusExpired), asOrder(rs[5], domain.StatusExpired)}; !slices.Equal(got, want) {
		t.Fatalf("second sweep =\n%+v, want\n%+v", got, want)
	}
	if got := expire(10); got == nil || len(got) != 0 {
		t.Fatalf("sweep with nothing due = %#v, want an empty, non-nil slice", got)
	}

	want := map[domain.OrderID]domain.OrderStatus{
		rs[0].OrderID: domain.StatusExpired, rs[1].OrderID: domain.StatusPaid, rs[2].OrderID: domain.StatusExpired,
		rs[3].OrderID: domain.StatusExpired, rs[4].OrderID: domain.StatusFailed, rs[5].OrderID: domain.StatusExpired,
		rs[6].OrderID: domain.StatusAwaitingPayment, rs[7].OrderID: domain.StatusAwaitingPayment,
	}
	for id, status := range want {
		if got := f.get(t, id).Status; got != status {
			t.Fatalf("order %s is %s, want %s", id, got, status)
		}
	}
	if got, want := f.sold(t, v), 2+1; got != want { // paid 2, not due 7
		t.Fatalf("sold of v = %d, want %d", got, want)
	}
	if got, want := f.sold(t, w), 1; got != want { // not due 8
		t.Fatalf("sold of w = %d, want %d", got, want)
	}

	for _, limit := range []int{0, -1} {
		_, err := f.orders.ExpireDue(ctx, cutoff, limit)
		var verr *domain.ValidationError
		if !errors.As(err, &verr) || verr.Field != "limit" {
			t.Fatalf("ExpireDue with limit %d: %v, want a *domain.ValidationError on limit", limit, err)
		}
	}
}

// The status condition of a conditional update selects, for each target status,
// exactly the orders whose status the domain's state machine lets become it. The
// orders get their statuses as the service gives them (queued is never stored).
func TestStatusConditionFollowsTheStateMachine(t *testing.T) {
	ctx := context.Background()
	f := newOrderFixture(t)
	v := f.voucher(t, 100)
	awaiting, paid, cancelled, expired := reserve(1, v, 1, 1), reserve(2, v, 2, 1), reserve(3, v, 3, 1), reserve(4, v, 4, 1)
	f.persisted(t, awaiting, paid, cancelled, expired)
	byID := map[domain.OrderID]domain.OrderStatus{awaiting.OrderID: domain.StatusAwaitingPayment}
	for r, to := range map[domain.Reservation]domain.OrderStatus{paid: domain.StatusPaid, cancelled: domain.StatusCancelled, expired: domain.StatusExpired} {
		if _, err := f.orders.Transition(ctx, r.OrderID, 0, to); err != nil {
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

// ExpireDue finds the due orders through the partial index over orders awaiting
// payment, on both databases: its status condition, built from the domain's state
// machine, must say what the index says (SQLite matches status = 'awaiting_payment'
// but not status IN ('awaiting_payment')).
func TestExpireDueUsesIndex(t *testing.T) {
	ctx := context.Background()
	db := openMigrated(t)
	log := &queryLog{}
	db.AddQueryHook(log)
	if _, err := sqlstore.NewOrders(db).ExpireDue(ctx, t0, 10); err != nil {
		t.Fatalf("ExpireDue: %v", err)
	}
	// Nothing is due, so the sweep is one SELECT (between BEGIN and COMMIT, if logged).
	var sweep []string
	for _, q := range log.queries {
		if strings.HasPrefix(q, "SELECT") {
			sweep = append(sweep, q)
		}
	}
	if len(sweep) != 1 {
		t.Fatalf("ExpireDue ran %d SELECTs, want 1: %q", len(sweep), log.queries)
	}
	const index = "orders_awaiting_payment_created_at_idx"
	var plan []string
	if sqlstore.IsSQLite(db) {
		var rows []struct {
			ID      int    `bun:"id"`
			Parent  int    `bun:"parent"`
			NotUsed int    `bun:"notused"`
			Detail  string `bun:"detail"`
		}
		if err := db.NewRaw("EXPLAIN QUERY PLAN "+sweep[0]).Scan(ctx, &rows); err != nil {
			t.Fatalf("explain: %v", err)
		}
		for _, r := range rows {
			plan = append(plan, r.Detail)
		}
	} else {
		err := db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
			// An empty table would be scanned whole; forbid that, as a big one would.
			if _, err := tx.ExecContext(ctx, "SET LOCAL enable_seqscan = off"); err != nil {
				return err
			}
			return tx.NewRaw("EXPLAIN "+sweep[0]).Scan(ctx, &plan)
		})
		if err != nil {
			t.Fatalf("explain: %v", err)
		}
	}
	if joined := strings.Join(plan, "\n"); !strings.Contains(joined, index) {
		t.Errorf("ExpireDue's plan does not use %s:\n%s", index, joined)
	}
}

// Sweepers on several instances at once expire each due order exactly once, and leave
// the orders not yet due alone.
func TestExpireDueConcurrently(t *testing.T) {
	ctx := context.Background()
	f := newOrderFixture(t)
	vs := []domain.VoucherID{f.voucher(t, 10_000), f.voucher(t, 10_000), f.voucher(t, 10_000)}
	const due, notDue, sweepers, limit = 200, 20, 8, 7
	var rs []domain.Reservation
	for n := 1; n <= due+notDue; n++ {
		rs = append(rs, reserve(n, vs[n%len(vs)], int64(n), 1+n%3))
	}
	f.persisted(t, rs...)
	cutoff := rs[due-1].At.Add(500 * time.Millisecond)

	start := make(chan struct{})
	var wg sync.WaitGroup
	got := make([][]domain.Order, sweepers)
	errs := make([]error, sweepers)
	for s := range sweepers {
		wg.Go(func() {
			<-start
			for {
				os, err := f.orders.ExpireDue(ctx, cutoff, limit)
				if err != nil {
					errs[s] = err
					return
				}
				if len(os) == 0 {
					return
				}
				if len(os) > limit {
					errs[s] = errors.New("more orders than the limit")
					return
				}
				got[s] = append(got[s], os...)
			}
		})
	}
	close(start)
	wg.Wait()

	seen := map[domain.OrderID]bool{}
	total, busy := 0, 0
	for s := range sweepers {
		if errs[s] != nil {
			t.Fatalf("sweeper %d: %v", s, errs[s])
		}
		if len(got[s]) > 0 {
			busy++
		}
		for _, o := range got[s] {
			total++
			if seen[o.ID] {
				t.Fatalf("order %s expired twice", o.ID)
			}
			seen[o.ID] = true
			if o.ID > orderID(due) || o.Status != domain.StatusExpired {
				t.Fatalf("sweeper %d returned %+v, want a due order, expired", s, o)
			}
		}
	}
	t.Logf("%d sweepers of %d expired something", busy, sweepers)
	if total != due {
		t.Fatalf("sweepers expired %d orders, want %d", total, due)
	}
	live := map[domain.VoucherID]int{}
	for i, r := range rs {
		want := domain.StatusExpired
		if i >= due {
			want = domain.StatusAwaitingPayment
			live[r.VoucherID] += r.Quantity
		}
		if got := f.get(t, r.OrderID).Status; got != want {
			t.Fatalf("order %s is %s, want %s", r.OrderID, got, want)
		}
	}
	for _, v := range vs {
		if got, want := f.sold(t, v), live[v]; got != want {
			t.Fatalf("sold of voucher %d = %d, want %d", v, got, want)
		}
	}
}

func TestUnreleasedMarkReleased(t *testing.T) {
	ctx := context.Background()
	f := newOrderFixture(t)
	v := f.voucher(t, 3)
	r1, r2, r3, r4 := reserve(1, v, 1, 1), reserve(2, v, 1, 1), reserve(3, v, 3, 2), reserve(4, v, 4, 1)
	// r2 fails (user 1 holds r1), r4 fails (r1 and r3 fill the stock).
	res := f.persist(t, r1, r2, r3, r4)
	if res[1].Outcome != ports.Failed || res[3].Outcome != ports.Failed {
		t.Fatalf("Persist = %+v, want r2 and r4 failed", res)
	}
	for _, r := range []domain.Reservation{r1, r2, r3, r4} {
		if at, ok := releasedAt(t, f.db, r.OrderID); ok {
			t.Fatalf("order %s released at %v right after Persist, want NULL", r.OrderID, at)
		}
	}

	unreleased := func(limit int) []domain.Order {
		t.Helper()
		got, err := f.orders.Unreleased(ctx, limit)
		if err != nil {
			t.Fatalf("Unreleased(%d): %v", limit, err)
		}
		return got
	}
	mark := func(ids ...domain.OrderID) {
		t.Helper()
		if err := f.orders.MarkReleased(ctx, ids...); err != nil {
			t.Fatalf("MarkReleased(%v): %v", ids, err)
		}
	}
	failed2, failed4 := asOrder(r2, domain.StatusFailed), asOrder(r4, domain.StatusFailed)
	if got, want := unreleased(10), []domain.Order{failed2, failed4}; !slices.Equal(got, want) {
		t.Fatalf("after Persist, Unreleased =\n%+v, want the failed orders\n%+v", got, want)
	}

	// Closing orders adds them, in the order they closed.
	if _, err := f.orders.Transition(ctx, r1.OrderID, 1, domain.StatusCancelled); err != nil {
		t.Fatalf("cancel: %v", err)
	}
	if _, err := f.orders.ExpireDue(ctx, t0.Add(time.Hour), 10); err != nil {
		t.Fatalf("expire: %v", err)
	}
	cancelled1, expired3 := asOrder(r1, domain.StatusCancelled), asOrder(r3, domain.StatusExpired)
	if got, want := unreleased(10), []domain.Order{failed2, failed4, cancelled1, expired3}; !slices.Equal(got, want) {
		t.Fatalf("after closing, Unreleased =\n%+v, want\n%+v", got, want)
	}
	if got, want := unreleased(2), []domain.Order{failed2, failed4}; !slices.Equal(got, want) {
		t.Fatalf("Unreleased(2) =\n%+v, want\n%+v", got, want)
	}

	// Live orders never appear, and are not marked: marking one would lose its units
	// when it closes later.
	r5, r6 := reserve(5, v, 5, 1), reserve(6, v, 6, 1)
	f.persisted(t, r5, r6)
	if _, err := f.orders.Transition(ctx, r5.OrderID, 5, domain.StatusPaid); err != nil {
		t.Fatalf("pay: %v", err)
	}
	mark(r5.OrderID, r6.OrderID, orderID(99))
	for _, r := range []domain.Reservation{r5, r6} {
		if at, ok := releasedAt(t, f.db, r.OrderID); ok {
			t.Fatalf("live order %s marked released at %v", r.OrderID, at)
		}
	}
	if got, want := unreleased(10), []domain.Order{failed2, failed4, cancelled1, expired3}; !slices.Equal(got, want) {
		t.Fatalf("with live orders, Unreleased =\n%+v, want\n%+v", got, want)
	}

	// Marked orders leave; marking again changes nothing.
	mark(r2.OrderID, r1.OrderID, r2.OrderID)
	if got, want := unreleased(10), []domain.Order{failed4, expired3}; !slices.Equal(got, want) {
		t.Fatalf("after marking, Unreleased =\n%+v, want\n%+v", got, want)
	}
	first, ok := releasedAt(t, f.db, r2.OrderID)
	if !ok {
		t.Fatalf("order %s not marked released", r2.OrderID)
	}
	mark(r2.OrderID, r1.OrderID)
	if again, _ := releasedAt(t, f.db, r2.OrderID); !again.Equal(first) {
		t.Fatalf("marking again moved released_at from %v to %v", first, again)
	}

	// The live order that was not marked shows up once it closes.
	if _, err := f.orders.Transition(ctx, r6.OrderID, 6, domain.StatusCancelled); err != nil {
		t.Fatalf("cancel: %v", err)
	}
	mark(r4.OrderID, r3.OrderID)
	if got, want := unreleased(10), []domain.Order{asOrder(r6, domain.StatusCancelled)}; !slices.Equal(got, want) {
		t.Fatalf("Unreleased =\n%+v, want\n%+v", got, want)
	}
	mark(r6.OrderID)
	if got := unreleased(10); got == nil || len(got) != 0 {
		t.Fatalf("with everything released, Unreleased = %#v, want an empty, non-nil slice", got)
	}

	for _, limit := range []int{0, -1} {
		_, err := f.orders.Unreleased(ctx, limit)
		var verr *domain.ValidationError
		if !errors.As(err, &verr) || verr.Field != "limit" {
			t.Fatalf("Unreleased(%d): %v, want a *domain.ValidationError on limit", limit, err)
		}
	}
}

func TestMarkReleasedNothing(t *testing.T) {
	// A closed database proves nothing is touched.
	db := openMigrated(t)
	if err := db.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	if err := sqlstore.NewOrders(db).MarkReleased(context.Background()); err != nil {
		t.Fatalf("MarkReleased(): %v", err)
	}
}
