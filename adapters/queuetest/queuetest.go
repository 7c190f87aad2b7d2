// Package queuetest is the contract suite of ports.Queue. Run asserts what the port
// documents against one implementation, so the in-memory fake and the Redis streams
// are held to the same tests (ARCHITECTURE.md, Conventions).
//
// It is a test helper, to be imported by _test.go files only (stocktest's
// TestOnlyTestsImportIt fails otherwise). It is a normal package, not a _test one, so
// that every adapter's tests can import it.
package queuetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/seckill/seckill/adapters/testenv"
	"github.com/seckill/seckill/domain"
	"github.com/seckill/seckill/ports"
)

// Subject is one implementation of ports.Queue under test. Run builds a Subject for
// every test, so no test sees another's state, and runs the tests in parallel.
type Subject struct {
	// Consumer returns the queue as consumer name reads it. Every consumer of a
	// Subject reads the same vouchers' queues in one group, so each entry goes to one
	// of them at a time.
	Consumer func(t *testing.T, name string) ports.Queue
	// Append appends user's reservation of one unit of voucher id to the voucher's
	// queue, as the grab path does, and returns it. The suite appends for a user at
	// most once per voucher.
	Append func(t *testing.T, id domain.VoucherID, user domain.UserID) domain.Reservation
	// Break makes every later call of every consumer fail, as a queue that is down
	// does.
	Break func(t *testing.T)
}

// Run runs the contract suite of ports.Queue as parallel subtests of t. newSubject
// returns a fresh Subject for the test it is given, and cleans up after it with
// t.Cleanup.
func Run(t *testing.T, newSubject func(t *testing.T) Subject) {
	tests := []struct {
		name string
		run  func(t *testing.T, f *fixture)
	}{
		{"ReadDeliversEachEntryOnceAcrossVouchers", testReadDeliversEachEntryOnce},
		{"ReadCountsPerVoucher", testReadCountsPerVoucher},
		{"ReadWaitsForANewEntry", testReadWaitsForANewEntry},
		{"ReadHonoursItsContext", testReadHonoursItsContext},
		{"AckEndsTheEntry", testAckEndsTheEntry},
		{"ClaimTakesOverAbandonedEntries", testClaimTakesOverAbandonedEntries},
		{"ClaimCounts", testClaimCounts},
		{"DeadLetterAcknowledges", testDeadLetterAcknowledges},
		{"RefreshSeesANewVoucher", testRefreshSeesANewVoucher},
		{"EveryCallFailsWhileTheQueueIsDown", testDown},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := newSubject(t)
			if s.Consumer == nil || s.Append == nil || s.Break == nil {
				t.Fatal("queuetest: the Subject needs every field")
			}
			tc.run(t, &fixture{Subject: s, ctx: t.Context()})
		})
	}
}

// fixture is one test's Subject, with the steps the tests take on it.
type fixture struct {
	Subject
	ctx context.Context
}

// appendAll appends a reservation of voucher id for each of users.
func (f *fixture) appendAll(t *testing.T, id domain.VoucherID, users ...domain.UserID) []domain.Reservation {
	t.Helper()
	rs := make([]domain.Reservation, len(users))
	for i, u := range users {
		rs[i] = f.Append(t, id, u)
	}
	return rs
}

// read reads up to count entries as q, waiting at most 50ms.
func (f *fixture) read(t *testing.T, q ports.Queue, count int) []ports.Delivery {
	t.Helper()
	ds, err := q.Read(f.ctx, count, 50*time.Millisecond)
	if err != nil {
		t.Fatalf("Read: %v", err)
	}
	return ds
}

// claim claims up to count entries as q, idle for minIdle.
func (f *fixture) claim(t *testing.T, q ports.Queue, minIdle time.Duration, count int) []ports.Delivery {
	t.Helper()
	ds, err := q.Claim(f.ctx, minIdle, count)
	if err != nil {
		t.Fatalf("Claim: %v", err)
	}
	return ds
}

// ack acknowledges ds as q.
func (f *fixture) ack(t *testing.T, q ports.Queue, ds ...ports.Delivery) {
	t.Helper()
	if err := q.Ack(f.ctx, ds...); err != nil {
		t.Fatalf("Ack: %v", err)
	}
}

// spell writes a delivery as the suite compares it: the reservation's time to the
// millisecond, the precision the grab path records it at.
func spell(d ports.Delivery) string {
	r := d.Reservation
	return fmt.Sprintf("voucher %d: order %s of voucher %d, user %d, %d units at %d ms; malformed %q; delivery %d",
		d.VoucherID, r.OrderID, r.VoucherID, r.UserID, r.Quantity, r.At.UnixMilli(), d.Malformed, d.Deliveries)
}

// wantDelivered fails unless ds deliver rs, the deliveries-th time each, in any order.
func wantDelivered(t *testing.T, what string, ds []ports.Delivery, deliveries int64, rs ...domain.Reservation) {
	t.Helper()
	got := make([]string, len(ds))
	for i, d := range ds {
		got[i] = spell(d)
	}
	want := make([]string, len(rs))
	for i, r := range rs {
		want[i] = spell(ports.Delivery{VoucherID: r.VoucherID, Reservation: r, Deliveries: deliveries})
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("%s:\n%q, want\n%q", what, got, want)
	}
}

func testReadDeliversEachEntryOnce(t *testing.T, f *fixture) {
	want := append(f.appendAll(t, 1, 1, 2, 3), f.appendAll(t, 2, 4, 5)...)
	a, b := f.Consumer(t, "a"), f.Consumer(t, "b")
	ds := f.read(t, a, 10)
	wantDelivered(t, "first read", ds, 1, want...)
	if again := f.read(t, b, 10); len(again) != 0 {
		t.Fatalf("second consumer read %d entries already delivered, want none", len(again))
	}
	if again := f.read(t, a, 10); len(again) != 0 {
		t.Fatalf("first consumer read %d entries again, want none", len(again))
	}
}

func testReadCountsPerVoucher(t *testing.T, f *fixture) {
	rs := f.appendAll(t, 1, 1, 2, 3)
	other := f.appendAll(t, 2, 4)
	q := f.Consumer(t, "a")
	ds := f.read(t, q, 2)
	if got, want := len(ds), 3; got != want {
		t.Fatalf("read %d entries with a count of 2 over two vouchers, want %d", got, want)
	}
	wantDelivered(t, "second read", f.read(t, q, 2), 1, rs[2])
	for _, d := range ds {
		if d.VoucherID == other[0].VoucherID {
			return
		}
	}
	t.Fatalf("first read %+v holds nothing of voucher %d", ds, other[0].VoucherID)
}

func testReadWaitsForANewEntry(t *testing.T, f *fixture) {
	q := f.Consumer(t, "a")
	first := f.Append(t, 1, 1)
	wantDelivered(t, "first read", f.read(t, q, 10), 1, first)

	type result struct {
		ds  []ports.Delivery
		err error
	}
	done := make(chan result, 1)
	go func() {
		ds, err := q.Read(f.ctx, 10, time.Minute)
		done <- result{ds, err}
	}()
	// The entry may land before the read waits; it is delivered just the same.
	r := f.Append(t, 1, 2)
	select {
	case res := <-done:
		if res.err != nil {
			t.Fatalf("Read: %v", res.err)
		}
		wantDelivered(t, "waiting read", res.ds, 1, r)
	case <-time.After(testenv.Patience):
		t.Fatal("a waiting read did not return")
	}
}

func testReadHonoursItsContext(t *testing.T, f *fixture) {
	q := f.Consumer(t, "a")
	ds, err := q.Read(f.ctx, 10, 0)
	if err != nil || len(ds) != 0 {
		t.Fatalf("Read of an empty queue without waiting = %v, %v; want nothing", ds, err)
	}
	ctx, cancel := context.WithCancel(f.ctx)
	done := make(chan error, 1)
	go func() {
		_, err := q.Read(ctx, 10, time.Hour)
		done <- err
	}()
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Read = %v, want %v", err, context.Canceled)
		}
	case <-time.After(testenv.Patience):
		t.Fatal("Read ignored the cancelled context")
	}
}

func testAckEndsTheEntry(t *testing.T, f *fixture) {
	rs := append(f.appendAll(t, 1, 1, 2, 3), f.appendAll(t, 2, 4, 5)...)
	a, b := f.Consumer(t, "a"), f.Consumer(t, "b")
	ds := f.read(t, a, 10)
	var first []ports.Delivery
	for _, d := range ds {
		if d.VoucherID == 1 {
			first = append(first, d)
		}
	}
	f.ack(t, a, first...)
	// Acknowledged entries are never handed over again; the rest are.
	wantDelivered(t, "claimed after acknowledging voucher 1's", f.claim(t, b, 0, 10), 2, rs[3:]...)
	f.ack(t, b, ds...) // voucher 1's twice: harmless
	if got := f.claim(t, a, 0, 10); len(got) != 0 {
		t.Fatalf("claimed %d entries after acknowledging all, want none", len(got))
	}
	f.ack(t, a)
}

func testClaimTakesOverAbandonedEntries(t *testing.T, f *fixture) {
	rs := append(f.appendAll(t, 1, 1, 2), f.appendAll(t, 2, 3)...)
	a, b := f.Consumer(t, "a"), f.Consumer(t, "b")
	wantDelivered(t, "read", f.read(t, a, 10), 1, rs...)

	if fresh := f.claim(t, b, time.Hour, 10); len(fresh) != 0 {
		t.Fatalf("claimed %d entries idle for less than minIdle, want none", len(fresh))
	}
	var claimed []ports.Delivery
	testenv.Eventually(t, testenv.Patience, "b claims the 3 entries once idle for 50ms", func() (bool, string) {
		claimed = append(claimed, f.claim(t, b, 50*time.Millisecond, 3-len(claimed))...)
		return len(claimed) == 3, fmt.Sprintf("%d claimed", len(claimed))
	})
	wantDelivered(t, "claimed", claimed, 2, rs...)
	// Each claim starts the entry's idle time over.
	if again := f.claim(t, a, time.Hour, 10); len(again) != 0 {
		t.Fatalf("claimed %d entries just claimed by b, want none", len(again))
	}
	f.ack(t, b, claimed...)
	if left := f.claim(t, a, 0, 10); len(left) != 0 {
		t.Fatalf("claimed %d entries after the claimer acknowledged, want none", len(left))
	}
}

func testClaimCounts(t *testing.T, f *fixture) {
	rs := f.appendAll(t, 1, 1, 2, 3)
	a, b := f.Consumer(t, "a"), f.Consumer(t, "b")
	f.read(t, a, 10)
	first := f.claim(t, b, 0, 2)
	if got, want := len(first), 2; got != want {
		t.Fatalf("claimed %d entries with a count of 2, want %d", got, want)
	}
	f.ack(t, b, first...)
	rest := f.claim(t, b, 0, 2)
	all := slices.Concat(first, rest)
	wantDelivered(t, "claimed", all, 2, rs...)
}

func testDeadLetterAcknowledges(t *testing.T, f *fixture) {
	rs := f.appendAll(t, 1, 1, 2)
	a, b := f.Consumer(t, "a"), f.Consumer(t, "b")
	ds := f.read(t, a, 10)
	if len(ds) != 2 {
		t.Fatalf("read %d entries, want 2", len(ds))
	}
	poison, kept := ds[0], ds[1]
	if err := a.DeadLetter(f.ctx, poison, "poison"); err != nil {
		t.Fatalf("DeadLetter: %v", err)
	}
	wantDelivered(t, "claimed after a dead letter", f.claim(t, b, 0, 10), 2, kept.Reservation)
	if kept.Reservation.OrderID != rs[0].OrderID && kept.Reservation.OrderID != rs[1].OrderID {
		t.Fatalf("kept %+v, want one of the reservations appended", kept)
	}
}

func testRefreshSeesANewVoucher(t *testing.T, f *fixture) {
	q := f.Consumer(t, "a")
	if ds := f.read(t, q, 10); len(ds) != 0 {
		t.Fatalf("read %d entries of an empty queue", len(ds))
	}
	r := f.Append(t, 7, 1)
	if err := q.Refresh(f.ctx); err != nil {
		t.Fatalf("Refresh: %v", err)
	}
	wantDelivered(t, "read after Refresh", f.read(t, q, 10), 1, r)
}

func testDown(t *testing.T, f *fixture) {
	f.appendAll(t, 1, 1, 2)
	q := f.Consumer(t, "a")
	ds := f.read(t, q, 10)
	f.Break(t)
	if _, err := q.Read(f.ctx, 10, 0); err == nil {
		t.Error("Read while the queue is down: no error")
	}
	if _, err := q.Claim(f.ctx, 0, 10); err == nil {
		t.Error("Claim while the queue is down: no error")
	}
	if err := q.Ack(f.ctx, ds[0]); err == nil {
		t.Error("Ack while the queue is down: no error")
	}
	if err := q.DeadLetter(f.ctx, ds[1], "why"); err == nil {
		t.Error("DeadLetter while the queue is down: no error")
	}
}
