package ordertest

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/seckill/seckill/domain"
)

// lifecycleTests hold ports.OrderLifecycle to its contract.
var lifecycleTests = []test{
	{"TransitionToPaid", func(t *testing.T, f *fixture) { testTransition(t, f, domain.StatusPaid, true, 2) }},
	{"TransitionToCancelled", func(t *testing.T, f *fixture) { testTransition(t, f, domain.StatusCancelled, true, 0) }},
	{"TransitionToExpired", func(t *testing.T, f *fixture) { testTransition(t, f, domain.StatusExpired, false, 0) }},
	{"TransitionRefusals", testTransitionRefusals},
	{"TransitionPayVersusExpire", testTransitionPayVersusExpire},
	{"TransitionPayVersusExpireBurst", testTransitionPayVersusExpireBurst},
	{"TransitionPayVersusCancel", testTransitionPayVersusCancel},
	{"ExpireDue", testExpireDue},
	{"ExpireDueConcurrently", testExpireDueConcurrently},
	{"ExpireDueKeepsTheRecordedDeadline", testExpireDueKeepsTheRecordedDeadline},
}

// testTransition moves an order awaiting payment to to, asked by its owner (byOwner)
// or by user 0 (any user), and checks that soldLeft units stay sold.
func testTransition(t *testing.T, f *fixture, to domain.OrderStatus, byOwner bool, soldLeft int) {
	v := f.voucher(t, 10)
	const owner = 7
	r := reserve(1, v, owner, 2)
	f.persisted(t, r)
	user := domain.UserID(0)
	if byOwner {
		user = owner
	}

	got, err := f.Store.Transition(f.ctx, r.OrderID, user, to, nil)
	if err != nil {
		t.Fatalf("Transition to %s: %v", to, err)
	}
	wantOrders(t, "Transition", []domain.Order{got}, asOrder(r, to))
	f.wantStored(t, r, to)
	f.wantSold(t, v, soldLeft)

	// From here every transition is refused, and changes nothing: the owner (or
	// anyone) finds it in the wrong state, another user does not find it.
	for _, next := range []domain.OrderStatus{domain.StatusPaid, domain.StatusCancelled, domain.StatusExpired} {
		for _, u := range []domain.UserID{owner, 0} {
			if _, err := f.Store.Transition(f.ctx, r.OrderID, u, next, nil); !errors.Is(err, domain.ErrInvalidState) {
				t.Fatalf("%s order to %s by user %d: %v, want domain.ErrInvalidState", to, next, u, err)
			}
		}
		if _, err := f.Store.Transition(f.ctx, r.OrderID, owner+1, next, nil); !errors.Is(err, domain.ErrNotFound) {
			t.Fatalf("%s order to %s by another user: %v, want domain.ErrNotFound", to, next, err)
		}
	}
	f.wantStored(t, r, to)
	f.wantSold(t, v, soldLeft)
}

func testTransitionRefusals(t *testing.T, f *fixture) {
	v := f.voucher(t, 10)
	const owner = 7
	r := reserve(1, v, owner, 2)
	failed := reserve(2, v, owner, 1) // fails: the owner holds r
	f.persist(t, r, failed)

	wantUntouched := func(t *testing.T) {
		t.Helper()
		f.wantStored(t, r, domain.StatusAwaitingPayment)
		f.wantSold(t, v, 2)
	}

	t.Run("another user's order", func(t *testing.T) {
		for _, to := range []domain.OrderStatus{domain.StatusPaid, domain.StatusCancelled, domain.StatusExpired} {
			if _, err := f.Store.Transition(f.ctx, r.OrderID, owner+1, to, nil); !errors.Is(err, domain.ErrNotFound) {
				t.Fatalf("to %s: %v, want domain.ErrNotFound", to, err)
			}
		}
		wantUntouched(t)
	})
	t.Run("unknown order", func(t *testing.T) {
		for _, user := range []domain.UserID{owner, 0} {
			if _, err := f.Store.Transition(f.ctx, orderID(99), user, domain.StatusPaid, nil); !errors.Is(err, domain.ErrNotFound) {
				t.Fatalf("user %d: %v, want domain.ErrNotFound", user, err)
			}
		}
	})
	t.Run("failed order", func(t *testing.T) {
		if _, err := f.Store.Transition(f.ctx, failed.OrderID, owner, domain.StatusCancelled, nil); !errors.Is(err, domain.ErrInvalidState) {
			t.Fatalf("cancel a failed order: %v, want domain.ErrInvalidState", err)
		}
	})
	t.Run("target status", func(t *testing.T) {
		for _, to := range []domain.OrderStatus{domain.StatusQueued, domain.StatusAwaitingPayment, domain.StatusFailed, "", "refunded"} {
			_, err := f.Store.Transition(f.ctx, r.OrderID, owner, to, nil)
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

// liveOrders persists n orders of voucher v, one per user, of 1 to 3 units.
func (f *fixture) liveOrders(t *testing.T, v domain.VoucherID, n int) []domain.Reservation {
	t.Helper()
	var rs []domain.Reservation
	for i := 1; i <= n; i++ {
		rs = append(rs, reserve(i, v, int64(i), 1+i%3))
	}
	f.persisted(t, rs...)
	return rs
}

// A payment racing the expiry sweeper: exactly one of them wins each order.
func testTransitionPayVersusExpire(t *testing.T, f *fixture) {
	v := f.voucher(t, 1000)
	const orders = 50
	rs := f.liveOrders(t, v, orders)

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
			func() { pay, payErr = f.Store.Transition(f.ctx, r.OrderID, r.UserID, domain.StatusPaid, nil) },
			func() { expired, sweepErr = f.Store.ExpireDue(f.ctx, cutoff, 0, 1) },
		)
		if sweepErr != nil {
			t.Fatalf("order %s: ExpireDue: %v", r.OrderID, sweepErr)
		}
		switch {
		case payErr == nil && len(expired) == 0:
			wantOrders(t, "paid", []domain.Order{pay}, asOrder(r, domain.StatusPaid))
			paid++
		case errors.Is(payErr, domain.ErrInvalidState) && len(expired) == 1:
			wantOrders(t, "expired", expired, asOrder(r, domain.StatusExpired))
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
	f.wantSold(t, v, live)
	f.wantConsistent(t, v)
}

// Payments and sweepers all at once over the same orders: every order is paid or
// expired, never both, and the sweepers never expire one twice.
func testTransitionPayVersusExpireBurst(t *testing.T, f *fixture) {
	v := f.voucher(t, 1000)
	const orders, sweepers = 50, 4
	rs := f.liveOrders(t, v, orders)
	cutoff := t0.Add(time.Hour)

	start := make(chan struct{})
	var wg sync.WaitGroup
	payErrs := make([]error, orders)
	for i, r := range rs {
		wg.Go(func() {
			<-start
			_, payErrs[i] = f.Store.Transition(f.ctx, r.OrderID, r.UserID, domain.StatusPaid, nil)
		})
	}
	swept := make([][]domain.Order, sweepers)
	sweepErrs := make([]error, sweepers)
	for s := range sweepers {
		wg.Go(func() {
			<-start
			for {
				got, err := f.Store.ExpireDue(f.ctx, cutoff, 0, 3)
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
func testTransitionPayVersusCancel(t *testing.T, f *fixture) {
	v := f.voucher(t, 1000)
	const orders = 50
	rs := f.liveOrders(t, v, orders)

	cancelled := 0
	for _, r := range rs {
		var (
			pay, cancel       domain.Order
			payErr, cancelErr error
		)
		race(
			func() { pay, payErr = f.Store.Transition(f.ctx, r.OrderID, r.UserID, domain.StatusPaid, nil) },
			func() {
				cancel, cancelErr = f.Store.Transition(f.ctx, r.OrderID, r.UserID, domain.StatusCancelled, nil)
			},
		)
		want := domain.StatusPaid
		switch {
		case payErr == nil && errors.Is(cancelErr, domain.ErrInvalidState):
			wantOrders(t, "paid", []domain.Order{pay}, asOrder(r, domain.StatusPaid))
		case cancelErr == nil && errors.Is(payErr, domain.ErrInvalidState):
			wantOrders(t, "cancelled", []domain.Order{cancel}, asOrder(r, domain.StatusCancelled))
			want = domain.StatusCancelled
			cancelled++
		default:
			t.Fatalf("order %s: pay returned %v, cancel %v; want exactly one to win", r.OrderID, payErr, cancelErr)
		}
		if got := f.get(t, r.OrderID).Status; got != want {
			t.Fatalf("order %s is %s, want %s", r.OrderID, got, want)
		}
	}
	t.Logf("%d paid, %d cancelled", orders-cancelled, cancelled)
	f.wantConsistent(t, v)
}

func testExpireDue(t *testing.T, f *fixture) {
	v, w := f.voucher(t, 100), f.voucher(t, 100)
	// Orders 1-6 are due (created before the cutoff), 7 and 8 are not; 2 is paid and
	// 5 failed, so neither is awaiting payment.
	rs := []domain.Reservation{
		reserve(1, v, 1, 1), reserve(2, v, 2, 2), reserve(3, w, 3, 3), reserve(4, v, 4, 1),
		reserve(5, v, 1, 1), reserve(6, w, 6, 2), reserve(7, v, 7, 1), reserve(8, w, 8, 1),
	}
	f.persist(t, rs...)
	if _, err := f.Store.Transition(f.ctx, rs[1].OrderID, 0, domain.StatusPaid, nil); err != nil {
		t.Fatalf("pay: %v", err)
	}
	cutoff := rs[6].At // created_at < cutoff: order 7 itself is not due

	expire := func(limit int) []domain.Order {
		t.Helper()
		got, err := f.Store.ExpireDue(f.ctx, cutoff, 0, limit)
		if err != nil {
			t.Fatalf("ExpireDue(%d): %v", limit, err)
		}
		return got
	}
	// The oldest first, up to the limit.
	wantOrders(t, "first sweep", expire(2), asOrder(rs[0], domain.StatusExpired), asOrder(rs[2], domain.StatusExpired))
	wantOrders(t, "second sweep", expire(10), asOrder(rs[3], domain.StatusExpired), asOrder(rs[5], domain.StatusExpired))
	wantEmpty(t, "sweep with nothing due", expire(10))

	want := map[int]domain.OrderStatus{
		0: domain.StatusExpired, 1: domain.StatusPaid, 2: domain.StatusExpired, 3: domain.StatusExpired,
		4: domain.StatusFailed, 5: domain.StatusExpired, 6: domain.StatusAwaitingPayment, 7: domain.StatusAwaitingPayment,
	}
	for i, status := range want {
		f.wantStored(t, rs[i], status)
	}
	f.wantSold(t, v, 2+1) // paid 2, not due 7
	f.wantSold(t, w, 1)   // not due 8

	for _, limit := range []int{0, -1} {
		_, err := f.Store.ExpireDue(f.ctx, cutoff, 0, limit)
		var verr *domain.ValidationError
		if !errors.As(err, &verr) || verr.Field != "limit" {
			t.Fatalf("ExpireDue with limit %d: %v, want a *domain.ValidationError on limit", limit, err)
		}
	}
}

// An order stored with its deadline (decided under a payment window of 10 minutes) is
// kept to it by a sweeper running with a shorter window (5 minutes) or a longer one
// (an hour): it is not expired before its deadline, and is after it. An order stored
// without one (recorded before deadlines were) is judged by the sweeper's window.
func testExpireDueKeepsTheRecordedDeadline(t *testing.T, f *fixture) {
	v := f.voucher(t, 10)
	const t1, t2 = 10 * time.Minute, domain.PaymentWindow(5 * time.Minute)
	kept, legacy := reserve(1, v, 1, 1), reserve(2, v, 2, 1)
	kept.Expires = kept.At.Add(t1)
	f.persist(t, kept, legacy)
	if got, want := spell(f.get(t, kept.OrderID)), spell(asOrder(kept, domain.StatusAwaitingPayment)); got != want {
		t.Fatalf("stored %s, want %s", got, want)
	}
	sweep := func(now time.Time, w domain.PaymentWindow) []domain.Order {
		t.Helper()
		got, err := f.Store.ExpireDue(f.ctx, now, w, 10)
		if err != nil {
			t.Fatalf("ExpireDue(%v, %v): %v", now, time.Duration(w), err)
		}
		return got
	}
	// Past the shorter window's deadline, before the recorded one: only the order
	// without a recorded deadline is due.
	wantOrders(t, "sweep under the shorter window", sweep(kept.Expires.Add(-time.Second), t2), asOrder(legacy, domain.StatusExpired))
	wantEmpty(t, "sweep at the deadline", sweep(kept.Expires, t2))
	f.wantStored(t, kept, domain.StatusAwaitingPayment)
	// A longer window does not hold it past its deadline either.
	wantOrders(t, "sweep past the deadline", sweep(kept.Expires.Add(time.Millisecond), domain.PaymentWindow(time.Hour)),
		asOrder(kept, domain.StatusExpired))
	f.wantSold(t, v, 0)
}

// Sweepers on several instances at once expire each due order exactly once, and leave
// the orders not yet due alone.
func testExpireDueConcurrently(t *testing.T, f *fixture) {
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
				os, err := f.Store.ExpireDue(f.ctx, cutoff, 0, limit)
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
		f.wantSold(t, v, live[v])
	}
}
