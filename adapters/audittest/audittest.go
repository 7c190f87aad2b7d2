// Package audittest is the contract suite of ports.StockAudit. Run asserts what the
// port documents against one implementation, so the in-memory fake, the Redis audit
// (of the lua and watch strategies) and the postgres strategy's are held to the same
// tests (ARCHITECTURE.md, Conventions). The database side's audit, ports.OrderAudit,
// is the order store's and is held by ordertest.
//
// It is a test helper, to be imported by _test.go files only (stocktest's
// TestOnlyTestsImportIt fails otherwise). It is a normal package, not a _test one, so
// that every adapter's tests can import it.
package audittest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/seckill/seckill/domain"
	"github.com/seckill/seckill/ports"
)

// Subject is one implementation of ports.StockAudit under test, with the stock whose
// sale state it inspects and the capabilities that declare how it legitimately
// differs from the others. Run builds a Subject for every test, so no test sees
// another's state, and runs the tests in parallel.
type Subject struct {
	// Audit is the implementation under test.
	Audit ports.StockAudit
	// Stock is the stock over the same sale state: the suite puts vouchers on sale
	// and grabs through it.
	Stock ports.Stock
	// Vouchers and Orders, when set, declare that the sale state is the database's
	// (the postgres strategy): the vouchers are created there, Warm loads nothing, and
	// an order is closed through Orders, which puts its units back at once. A live
	// order is then its own reservation, so Restore has nothing to record (it reports
	// false), Requeue nothing to append, and Restoring and Restored nothing to gate.
	Vouchers ports.Vouchers
	Orders   ports.OrderLifecycle
	// Queue, when set, reads the queue Reserve and Requeue append to, and Snapshot's
	// Unacked must list what it holds unacknowledged. When nil nothing is ever queued
	// and Unacked is empty.
	Queue ports.Queue
	// SetRemaining overwrites a voucher's units left (0 to stock), bypassing every
	// rule: the drift Recount repairs.
	SetRemaining func(t *testing.T, id domain.VoucherID, remaining int)
	// Break makes every later call that has work to do fail, as a store that is down
	// does.
	Break func(t *testing.T)
}

// Run runs the contract suite of ports.StockAudit as parallel subtests of t.
// newSubject returns a fresh Subject for the test it is given, and cleans up after it
// with t.Cleanup.
func Run(t *testing.T, newSubject func(t *testing.T) Subject) {
	tests := []struct {
		name string
		run  func(t *testing.T, f *fixture)
	}{
		{"SnapshotReadsTheSale", testSnapshotReadsTheSale},
		{"SnapshotOfAVoucherWithoutSaleState", testSnapshotWithoutSaleState},
		{"RecountRepairsRemaining", testRecountRepairsRemaining},
		{"RestoreMakesTheLiveOrdersTheReservations", testRestore},
		{"RequeueAppendsToTheQueue", testRequeue},
		{"RestoringGatesGrabsUntilRestored", testRestoring},
		{"RecountDuringGrabsAndReleasesStaysExact", testRecountDuringGrabsAndReleases},
		{"EveryCallFailsWhileTheStoreIsDown", testDown},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := newSubject(t)
			if s.Audit == nil || s.Stock == nil || s.SetRemaining == nil || s.Break == nil {
				t.Fatal("audittest: the Subject needs an Audit, a Stock, SetRemaining and Break")
			}
			if (s.Vouchers == nil) != (s.Orders == nil) {
				t.Fatal("audittest: Vouchers and Orders go together")
			}
			tc.run(t, &fixture{Subject: s, ctx: t.Context()})
		})
	}
}

// fixture is one test's Subject, with the steps the tests take on it.
type fixture struct {
	Subject
	ctx    context.Context
	lastID domain.VoucherID
}

// at0 is when the suite's grabs happen, in the middle of every voucher's sale, far in
// the future: Redis expires a sale's keys by its own clock.
var at0 = time.Date(2099, time.January, 1, 12, 0, 0, 0, time.UTC)

// unknown is a voucher id the suite never puts on sale.
const unknown domain.VoucherID = 1 << 40

// sell puts a voucher of stock units, limit to a user, on sale and returns its id.
func (f *fixture) sell(t *testing.T, stock, limit int) domain.VoucherID {
	t.Helper()
	v := domain.Voucher{
		Title: fmt.Sprintf("audittest: %d units", stock), Stock: stock, PerUserLimit: limit,
		BeginsAt: at0.Add(-time.Hour), EndsAt: at0.Add(time.Hour),
	}
	if f.Vouchers != nil {
		if err := f.Vouchers.Create(f.ctx, &v, domain.Author{}, nil); err != nil {
			t.Fatalf("create voucher: %v", err)
		}
	} else {
		f.lastID++
		v.ID = f.lastID
	}
	if _, err := f.Stock.Warm(f.ctx, v); err != nil {
		t.Fatalf("Warm(%d): %v", v.ID, err)
	}
	return v.ID
}

// grab returns user's grab of qty units of voucher id, under an order id unique
// across vouchers.
func grab(id domain.VoucherID, user domain.UserID, qty int) domain.Reservation {
	return domain.Reservation{
		OrderID:   domain.OrderID(fmt.Sprintf("v%d-u%d", id, user)),
		VoucherID: id, UserID: user, Quantity: qty, At: at0,
	}
}

// reserve grabs and fails the test unless it is reserved.
func (f *fixture) reserve(t *testing.T, r domain.Reservation) {
	t.Helper()
	if err := f.Stock.Reserve(f.ctx, r); err != nil {
		t.Fatalf("Reserve(user %d, %d units of voucher %d): %v", r.UserID, r.Quantity, r.VoucherID, err)
	}
}

// release closes the order r became and gives its units back, as the order lifecycle
// and compensation do.
func (f *fixture) release(t *testing.T, r domain.Reservation) {
	t.Helper()
	if err := f.tryRelease(r); err != nil {
		t.Fatal(err)
	}
}

// tryRelease is release for any goroutine: it returns what went wrong.
func (f *fixture) tryRelease(r domain.Reservation) error {
	if f.Orders != nil {
		if _, err := f.Orders.Transition(f.ctx, r.OrderID, r.UserID, domain.StatusCancelled, nil); err != nil {
			return fmt.Errorf("cancel order %s: %w", r.OrderID, err)
		}
		return nil
	}
	o := orderOf(r)
	released, err := f.Stock.Release(f.ctx, o)
	if err != nil || !released {
		return fmt.Errorf("Release(order %s) = %v, %v; want true", o.ID, released, err)
	}
	return nil
}

// liveOrder is the order r became, awaiting payment, as the database holds it.
func liveOrder(r domain.Reservation) domain.Order {
	o := orderOf(r)
	o.Status = domain.StatusAwaitingPayment
	return o
}

// orderOf is the cancelled order r became, as the lifecycle hands it to Release.
func orderOf(r domain.Reservation) domain.Order {
	return domain.Order{ID: r.OrderID, VoucherID: r.VoucherID, UserID: r.UserID, Quantity: r.Quantity,
		Status: domain.StatusCancelled, CreatedAt: r.At}
}

// snapshot returns the Audit's snapshot of voucher id.
func (f *fixture) snapshot(t *testing.T, id domain.VoucherID) ports.StockSnapshot {
	t.Helper()
	snap, err := f.Audit.Snapshot(f.ctx, id)
	if err != nil {
		t.Fatalf("Snapshot(%d): %v", id, err)
	}
	return snap
}

// remaining returns the units left of voucher id, as the Stock tells them.
func (f *fixture) remaining(t *testing.T, id domain.VoucherID) int {
	t.Helper()
	left, err := f.Stock.Remaining(f.ctx, id)
	if err != nil {
		t.Fatalf("Remaining(%d): %v", id, err)
	}
	n, ok := left[id]
	if !ok {
		t.Fatalf("voucher %d has no sale state", id)
	}
	return n
}

// spell writes reservations as the suite compares them, sorted: the time to the
// millisecond, the precision every store keeps.
func spell(rs []domain.Reservation) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = fmt.Sprintf("order %s: voucher %d, user %d, %d units at %d ms",
			r.OrderID, r.VoucherID, r.UserID, r.Quantity, r.At.UnixMilli())
	}
	slices.Sort(out)
	return out
}

// wantReservations fails unless got hold want, in any order.
func wantReservations(t *testing.T, what string, got []domain.Reservation, want ...domain.Reservation) {
	t.Helper()
	if g, w := spell(got), spell(want); !slices.Equal(g, w) {
		t.Fatalf("%s =\n%q, want\n%q", what, g, w)
	}
}

func held(rs []domain.Reservation) int {
	n := 0
	for _, r := range rs {
		n += r.Quantity
	}
	return n
}

func testSnapshotReadsTheSale(t *testing.T, f *fixture) {
	id := f.sell(t, 20, 3)
	var rs []domain.Reservation
	for user := domain.UserID(1); user <= 4; user++ {
		r := grab(id, user, int(user)%3+1)
		f.reserve(t, r)
		rs = append(rs, r)
	}
	// User 2's order was closed: its reservation is gone (its entry still queued).
	f.release(t, rs[1])
	live := []domain.Reservation{rs[0], rs[2], rs[3]}

	snap := f.snapshot(t, id)
	if !snap.Present || snap.Stock != 20 || snap.Remaining != 20-held(live) {
		t.Fatalf("snapshot present %v, stock %d, remaining %d; want true, 20, %d",
			snap.Present, snap.Stock, snap.Remaining, 20-held(live))
	}
	wantReservations(t, "reservations", snap.Reservations, live...)
	if !snap.Read {
		t.Fatal("snapshot of a voucher on sale: its queue is not read by the workers")
	}
	if f.Queue == nil {
		wantReservations(t, "unacked with no queue", snap.Unacked)
		return
	}
	wantReservations(t, "unacked before any read", snap.Unacked, rs...)

	// Delivered and acknowledged: 1 and 3; delivered, pending: 2 and 4.
	ds, err := f.Queue.Read(f.ctx, 10, 50*time.Millisecond)
	if err != nil || len(ds) != 4 {
		t.Fatalf("Read = %d entries, %v; want 4", len(ds), err)
	}
	var acked []ports.Delivery
	for _, d := range ds {
		if d.Reservation.UserID%2 == 1 {
			acked = append(acked, d)
		}
	}
	if err := f.Queue.Ack(f.ctx, acked...); err != nil {
		t.Fatalf("Ack: %v", err)
	}
	wantReservations(t, "unacked", f.snapshot(t, id).Unacked, rs[1], rs[3])
}

func testSnapshotWithoutSaleState(t *testing.T, f *fixture) {
	f.sell(t, 5, 1)
	snap := f.snapshot(t, unknown)
	if snap.Present || snap.Stock != 0 || snap.Remaining != 0 || snap.Reservations != nil || snap.Unacked != nil {
		t.Fatalf("snapshot of a voucher without sale state = %+v, want the zero value", snap)
	}
}

func testRecountRepairsRemaining(t *testing.T, f *fixture) {
	id := f.sell(t, 10, 3)
	f.reserve(t, grab(id, 1, 2))
	f.reserve(t, grab(id, 2, 3))
	recount := func(want int) {
		t.Helper()
		left, err := f.Audit.Recount(f.ctx, id)
		if err != nil {
			t.Fatalf("Recount: %v", err)
		}
		if left != want {
			t.Fatalf("Recount = %d, want %d", left, want)
		}
		if got := f.remaining(t, id); got != want {
			t.Fatalf("remaining = %d after Recount, want %d", got, want)
		}
	}
	for _, wrong := range []int{10, 0, 4} { // too many (would oversell), too few (units stuck)
		f.SetRemaining(t, id, wrong)
		recount(5)
	}
	recount(5)
	if _, err := f.Audit.Recount(f.ctx, unknown); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("Recount without sale state = %v, want %v", err, domain.ErrNotFound)
	}
}

// restoreOne restores the live order r became alone and reports whether the stock
// names it now.
func (f *fixture) restoreOne(r domain.Reservation) (bool, error) {
	got, err := f.Audit.Restore(f.ctx, liveOrder(r))
	if err != nil {
		return false, err
	}
	if len(got) != 1 {
		return false, fmt.Errorf("restore of one answered %d results", len(got))
	}
	return got[0], nil
}

func testRestore(t *testing.T, f *fixture) {
	id := f.sell(t, 10, 3)
	holder := grab(id, 1, 1)
	f.reserve(t, holder)
	lost := grab(id, 7, 2)
	lost.At = at0.Add(-time.Minute)
	if f.Orders != nil {
		// The live order is the reservation: named by the stock; an order the
		// database does not hold live is not.
		got, err := f.Audit.Restore(f.ctx, liveOrder(holder), liveOrder(lost), orderOf(lost))
		if err != nil || fmt.Sprint(got) != "[true false true]" {
			t.Fatalf("Restore where live orders are the reservations = %v, %v; want [true false true]", got, err)
		}
		return
	}

	if restored, err := f.restoreOne(lost); err != nil || !restored {
		t.Fatalf("Restore = %v, %v; want true", restored, err)
	}
	wantReservations(t, "reservations after a restore", f.snapshot(t, id).Reservations, holder, lost)
	if got, want := f.remaining(t, id), 9; got != want {
		t.Fatalf("remaining = %d after a restore, want %d (untouched)", got, want)
	}
	if f.Queue != nil {
		ds, err := f.Queue.Read(f.ctx, 10, 0)
		if err != nil || len(ds) != 1 {
			t.Fatalf("Read after a restore = %d entries, %v; want the holder's alone (nothing queued)", len(ds), err)
		}
	}
	before := f.snapshot(t, id)
	if restored, err := f.restoreOne(lost); err != nil || !restored {
		t.Fatalf("a second Restore = %v, %v; want true (named already)", restored, err)
	}
	if after := f.snapshot(t, id); fmt.Sprint(after.Reservations) != fmt.Sprint(before.Reservations) {
		t.Fatalf("a second Restore changed the reservations: %v, then %v", before.Reservations, after.Reservations)
	}

	// The restored reservation is the user's like any other: a grab names it, Recount
	// counts it.
	err := f.Stock.Reserve(f.ctx, grab(id, 7, 1))
	var ap *domain.AlreadyPurchasedError
	if !errors.As(err, &ap) || ap.OrderID != lost.OrderID {
		t.Fatalf("Reserve after a restore = %v, want already purchased %s", err, lost.OrderID)
	}
	if left, err := f.Audit.Recount(f.ctx, id); err != nil || left != 7 {
		t.Fatalf("Recount = %d, %v; want 7", left, err)
	}

	// The database's live order wins over whatever the user's entry named (a closed
	// order an older snapshot remembers): the entry names the live order, the other
	// order's units are no longer held.
	live := grab(id, 1, 2)
	live.OrderID = "live-order-of-user-1"
	if restored, err := f.restoreOne(live); err != nil || !restored {
		t.Fatalf("Restore over another order of the user = %v, %v; want true", restored, err)
	}
	wantReservations(t, "reservations after replacing user 1's", f.snapshot(t, id).Reservations, live, lost)
	if left, err := f.Audit.Recount(f.ctx, id); err != nil || left != 6 {
		t.Fatalf("Recount after replacing = %d, %v; want 6", left, err)
	}
	err = f.Stock.Reserve(f.ctx, grab(id, 1, 1))
	if !errors.As(err, &ap) || ap.OrderID != live.OrderID {
		t.Fatalf("Reserve by user 1 after the replace = %v, want already purchased %s", err, live.OrderID)
	}
	// The replaced order's release (it closed) cannot free the live order's unit.
	if released, err := f.Stock.Release(f.ctx, orderOf(holder)); err != nil || released {
		t.Fatalf("Release of the replaced order = %v, %v; want false", released, err)
	}
	if got, want := f.remaining(t, id), 6; got != want {
		t.Fatalf("remaining = %d after releasing the replaced order, want %d", got, want)
	}

	// An order released once (closed) is never restored again — not when a list of
	// live orders read before it closed comes back, and not when it was released
	// before its reservation was restored.
	f.release(t, lost)
	if got, want := f.remaining(t, id), 8; got != want {
		t.Fatalf("remaining = %d after releasing the restored order, want %d", got, want)
	}
	if restored, err := f.restoreOne(lost); err != nil || restored {
		t.Fatalf("Restore of a released order = %v, %v; want false", restored, err)
	}
	early := grab(id, 30, 1)
	if released, err := f.Stock.Release(f.ctx, orderOf(early)); err != nil || released {
		t.Fatalf("Release of an order never held = %v, %v; want false", released, err)
	}
	if restored, err := f.restoreOne(early); err != nil || restored {
		t.Fatalf("Restore of an order released before it was restored = %v, %v; want false", restored, err)
	}
	wantReservations(t, "reservations after the releases", f.snapshot(t, id).Reservations, live)

	// Several at once, in the order given: a user named twice holds the last.
	a, b, again := grab(id, 20, 1), grab(id, 21, 1), grab(id, 20, 1)
	again.OrderID = "second-of-user-20"
	got, err := f.Audit.Restore(f.ctx, liveOrder(a), liveOrder(b), liveOrder(again), liveOrder(grab(unknown, 22, 1)))
	if err != nil || fmt.Sprint(got) != "[true true true false]" {
		t.Fatalf("Restore of four = %v, %v; want [true true true false]", got, err)
	}
	wantReservations(t, "reservations after restoring several", f.snapshot(t, id).Reservations, live, b, again)

	// A closed order: its reservation is forgotten (the units stay held until a
	// Recount), an order its user no longer holds changes nothing, and neither is
	// restored again.
	left := f.remaining(t, id)
	got, err = f.Audit.Restore(f.ctx, orderOf(b), orderOf(a))
	if err != nil || fmt.Sprint(got) != "[true true]" {
		t.Fatalf("Restore of two closed orders = %v, %v; want [true true]", got, err)
	}
	wantReservations(t, "reservations after restoring closed orders", f.snapshot(t, id).Reservations, live, again)
	if got := f.remaining(t, id); got != left {
		t.Fatalf("remaining = %d after restoring closed orders, want %d (untouched)", got, left)
	}
	if restored, err := f.restoreOne(b); err != nil || restored {
		t.Fatalf("Restore of a live order restored closed before = %v, %v; want false", restored, err)
	}
	if got, err := f.Audit.Restore(f.ctx); err != nil || len(got) != 0 {
		t.Fatalf("Restore of none = %v, %v; want none", got, err)
	}

	// No sale state: nothing to restore into. An invalid reservation: refused.
	if restored, err := f.restoreOne(grab(unknown, 1, 1)); err != nil || restored {
		t.Fatalf("Restore without sale state = %v, %v; want false", restored, err)
	}
	if _, err := f.Audit.Restore(f.ctx, liveOrder(grab(id, 8, 0))); !errors.Is(err, domain.ErrInvalid) {
		t.Fatalf("Restore of quantity 0 = %v, want %v", err, domain.ErrInvalid)
	}
}

func testRequeue(t *testing.T, f *fixture) {
	id := f.sell(t, 10, 3)
	r := grab(id, 1, 2)
	f.reserve(t, r)
	if f.Queue == nil {
		if err := f.Audit.Requeue(f.ctx, r); err != nil {
			t.Fatalf("Requeue with no queue = %v, want nil", err)
		}
		wantReservations(t, "unacked with no queue", f.snapshot(t, id).Unacked)
		return
	}
	ds, err := f.Queue.Read(f.ctx, 10, 50*time.Millisecond)
	if err == nil {
		err = f.Queue.Ack(f.ctx, ds...)
	}
	if err != nil || len(ds) != 1 {
		t.Fatalf("read and ack %d entries: %v; want 1", len(ds), err)
	}

	if err := f.Audit.Requeue(f.ctx, r); err != nil {
		t.Fatalf("Requeue: %v", err)
	}
	wantReservations(t, "unacked after a requeue", f.snapshot(t, id).Unacked, r)
	ds, err = f.Queue.Read(f.ctx, 10, 50*time.Millisecond)
	if err != nil || len(ds) != 1 || ds[0].VoucherID != id || ds[0].Malformed != "" {
		t.Fatalf("Read after Requeue = %+v, %v; want one delivery of %+v", ds, err, r)
	}
	wantReservations(t, "read after a requeue", []domain.Reservation{ds[0].Reservation}, r)

	if err := f.Audit.Requeue(f.ctx, grab(unknown, 1, 1)); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("Requeue without sale state = %v, want %v", err, domain.ErrNotFound)
	}
	bad := r
	bad.OrderID = ""
	if err := f.Audit.Requeue(f.ctx, bad); !errors.Is(err, domain.ErrInvalid) {
		t.Fatalf("Requeue without an order id = %v, want %v", err, domain.ErrInvalid)
	}
}

func testRestoring(t *testing.T, f *fixture) {
	id := f.sell(t, 10, 1)
	if err := f.Audit.Restoring(f.ctx, id); err != nil {
		t.Fatalf("Restoring: %v", err)
	}
	err := f.Stock.Reserve(f.ctx, grab(id, 1, 1))
	if f.Orders != nil {
		if err != nil {
			t.Fatalf("Reserve where the database is the sale state, after Restoring = %v, want reserved", err)
		}
	} else if !errors.Is(err, domain.ErrUnavailable) {
		t.Fatalf("Reserve while restoring = %v, want %v", err, domain.ErrUnavailable)
	}
	for range 2 { // a voucher already whole is left as it is
		if err := f.Audit.Restored(f.ctx, id); err != nil {
			t.Fatalf("Restored: %v", err)
		}
	}
	f.reserve(t, grab(id, 2, 1))
	// A voucher without sale state is left as it is.
	if err := f.Audit.Restoring(f.ctx, unknown); err != nil {
		t.Fatalf("Restoring without sale state: %v", err)
	}
	if err := f.Audit.Restored(f.ctx, unknown); err != nil {
		t.Fatalf("Restored without sale state: %v", err)
	}
	if snap := f.snapshot(t, unknown); snap.Present {
		t.Fatalf("Restoring and Restored created sale state: %+v", snap)
	}
}

// Recounting while users grab and release is safe: it never loses one of their units.
// A recount may give up while the reservations keep changing (unavailable: try again
// later — three recounts and 400 users at once on a busy machine can outpace it); once
// the users are done, one must succeed, and the count must be exact.
func testRecountDuringGrabsAndReleases(t *testing.T, f *fixture) {
	const stock, users = 150, 400
	id := f.sell(t, stock, 2)

	done := make(chan struct{})
	var recounts sync.WaitGroup
	for range 3 {
		recounts.Go(func() {
			for {
				select {
				case <-done:
					return
				default:
				}
				left, err := f.Audit.Recount(f.ctx, id)
				if errors.Is(err, domain.ErrUnavailable) {
					continue
				}
				if err != nil {
					t.Error(err)
					return
				}
				if left < 0 || left > stock {
					t.Errorf("Recount = %d, outside 0..%d", left, stock)
					return
				}
			}
		})
	}
	var grabs sync.WaitGroup
	for user := domain.UserID(1); user <= users; user++ {
		grabs.Go(func() {
			r := grab(id, user, int(user)%2+1)
			// A stock may answer unavailable — nothing done, ask again — as the
			// watch strategy does when other grabs win its optimistic transaction:
			// the user asks again, as a client told 503 does.
			err := f.Stock.Reserve(f.ctx, r)
			for try := 0; errors.Is(err, domain.ErrUnavailable) && try < 100; try++ {
				err = f.Stock.Reserve(f.ctx, r)
			}
			if errors.Is(err, domain.ErrSoldOut) {
				return
			}
			if err != nil {
				t.Error(err)
				return
			}
			// Every third buyer's order is closed at once: its units go back on sale.
			if user%3 == 0 {
				if err := f.tryRelease(r); err != nil {
					t.Error(err)
				}
			}
		})
	}
	grabs.Wait()
	close(done)
	recounts.Wait()
	left, err := f.Audit.Recount(f.ctx, id)
	if err != nil {
		t.Fatalf("Recount once the users are done: %v", err)
	}

	snap := f.snapshot(t, id)
	if snap.Remaining != left {
		t.Fatalf("remaining %d after a Recount that answered %d", snap.Remaining, left)
	}
	if got := snap.Remaining + held(snap.Reservations); got != stock {
		t.Fatalf("remaining %d + held %d = %d, want the stock %d", snap.Remaining, held(snap.Reservations), got, stock)
	}
	for _, r := range snap.Reservations {
		if r.UserID%3 == 0 {
			t.Fatalf("user %d still holds a released reservation", r.UserID)
		}
	}
}

func testDown(t *testing.T, f *fixture) {
	id := f.sell(t, 10, 1)
	r := grab(id, 1, 1)
	f.reserve(t, r)
	f.Break(t)
	calls := map[string]func() error{
		"Snapshot": func() error {
			_, err := f.Audit.Snapshot(f.ctx, id)
			return err
		},
		"Recount": func() error {
			_, err := f.Audit.Recount(f.ctx, id)
			return err
		},
	}
	if f.Orders == nil { // the others have work to do
		calls["Restore"] = func() error {
			_, err := f.Audit.Restore(f.ctx, liveOrder(grab(id, 2, 1)))
			return err
		}
		calls["Requeue"] = func() error { return f.Audit.Requeue(f.ctx, r) }
		calls["Restoring"] = func() error { return f.Audit.Restoring(f.ctx, id) }
		calls["Restored"] = func() error { return f.Audit.Restored(f.ctx, id) }
	}
	for name, call := range calls {
		if err := call(); err == nil {
			t.Errorf("%s while the store is down: no error", name)
		}
	}
}
