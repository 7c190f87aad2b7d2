// Package ordertest is the contract suite of the order store: ports.Orders,
// ports.VoucherOrders, ports.OrderLifecycle, ports.Releases and ports.OrderAudit,
// which every adapter
// implements with one type over one store. Run asserts what the ports document against
// one implementation, so the in-memory fake and the SQL adapter on PostgreSQL and on
// SQLite are held to the same tests (ARCHITECTURE.md, Conventions).
//
// It is a test helper, to be imported by _test.go files only (stocktest's
// TestOnlyTestsImportIt fails otherwise). It is a normal package, not a _test one, so
// that every adapter's tests can import it.
package ordertest

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/seckill/seckill/domain"
	"github.com/seckill/seckill/ports"
)

// Store is the order store under test: the five ports at once, over one state.
type Store interface {
	ports.Orders
	ports.VoucherOrders
	ports.OrderLifecycle
	ports.Releases
	ports.OrderAudit
}

// Subject is one implementation under test, with what the suite needs to arrange a
// state. Run builds a Subject for every test, so no test sees another's state, and runs
// the tests in parallel.
type Subject struct {
	// Store is the implementation under test.
	Store Store
	// Vouchers holds the vouchers the orders name, over the same state: the suite
	// creates them there and reads their sold counters back.
	Vouchers ports.Vouchers
	// SetStatus overwrites an order's status and leaves the sold counter as it is: the
	// drift a hand-made change leaves behind.
	SetStatus func(t *testing.T, id domain.OrderID, s domain.OrderStatus)
	// SetSold overwrites a voucher's sold counter (0 to stock): drift again.
	SetSold func(t *testing.T, id domain.VoucherID, sold int)
	// Break makes every later call that has work to do fail, as a store that is down
	// does.
	Break func(t *testing.T)
}

// test is one test of the suite.
type test struct {
	name string
	run  func(t *testing.T, f *fixture)
}

// Run runs the contract suite as parallel subtests of t. newSubject returns a fresh
// Subject for the test it is given, and cleans up after it with t.Cleanup.
func Run(t *testing.T, newSubject func(t *testing.T) Subject) {
	var tests []test
	tests = append(tests, ordersTests...)
	tests = append(tests, lifecycleTests...)
	tests = append(tests, releasesTests...)
	tests = append(tests, auditTests...)
	tests = append(tests, test{"EveryCallFailsWhileTheStoreIsDown", testDown})
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := newSubject(t)
			if s.Store == nil || s.Vouchers == nil || s.SetStatus == nil || s.SetSold == nil || s.Break == nil {
				t.Fatal("ordertest: the Subject needs every field")
			}
			tc.run(t, &fixture{Subject: s, ctx: t.Context()})
		})
	}
}

// fixture is one test's Subject, with the steps the tests take on it.
type fixture struct {
	Subject
	ctx context.Context
	// made lists the vouchers the test created.
	made []domain.VoucherID
}

// t0 is when the suite's reservations are made: in UTC and to the millisecond, as the
// grab path records them, so every store hands them back unchanged.
var t0 = time.Date(2026, time.November, 29, 12, 0, 0, 123_000_000, time.UTC)

// orderID returns the n-th order id: 26 characters that sort as n does, like the
// time-ordered ULIDs the application mints.
func orderID(n int) domain.OrderID {
	return domain.OrderID(fmt.Sprintf("01KB%022d", n))
}

// reserve returns the reservation of order n: qty units of voucher v for user, made n
// seconds after t0.
func reserve(n int, v domain.VoucherID, user int64, qty int) domain.Reservation {
	return domain.Reservation{
		OrderID:   orderID(n),
		VoucherID: v,
		UserID:    domain.UserID(user),
		Quantity:  qty,
		At:        t0.Add(time.Duration(n) * time.Second),
	}
}

// result is what Persist should answer for one reservation; the suite compares
// reasons only for being present (see sameResult).
func result(r domain.Reservation, outcome ports.PersistOutcome) ports.PersistResult {
	return ports.PersistResult{OrderID: r.OrderID, Outcome: outcome}
}

// sameResult reports whether got is want, with a reason exactly when the outcome
// needs one (Failed, VoucherGone).
func sameResult(got, want ports.PersistResult) bool {
	explained := got.Outcome == ports.Failed || got.Outcome == ports.VoucherGone
	return got.OrderID == want.OrderID && got.Outcome == want.Outcome && (got.Reason != "") == explained
}

// asOrder is the order r becomes with status.
func asOrder(r domain.Reservation, status domain.OrderStatus) domain.Order {
	return domain.Order{
		ID: r.OrderID, VoucherID: r.VoucherID, UserID: r.UserID, Quantity: r.Quantity,
		Status: status, CreatedAt: r.At, ExpiresAt: r.Expires,
	}
}

// spell writes an order as the suite compares it: its times as instants.
func spell(o domain.Order) string {
	expires := "no deadline recorded"
	if !o.ExpiresAt.IsZero() {
		expires = fmt.Sprintf("expires at %d µs", o.ExpiresAt.UnixMicro())
	}
	return fmt.Sprintf("order %s: voucher %d, user %d, %d units, %s, at %d µs, %s",
		o.ID, o.VoucherID, o.UserID, o.Quantity, o.Status, o.CreatedAt.UnixMicro(), expires)
}

// spellAll spells orders, in their order.
func spellAll(os []domain.Order) []string {
	out := make([]string, len(os))
	for i, o := range os {
		out[i] = spell(o)
	}
	return out
}

// wantOrders fails unless got are want, in order.
func wantOrders(t *testing.T, what string, got []domain.Order, want ...domain.Order) {
	t.Helper()
	if g, w := spellAll(got), spellAll(want); !slices.Equal(g, w) {
		t.Fatalf("%s =\n%q, want\n%q", what, g, w)
	}
}

// wantEmpty fails unless os is an empty, non-nil slice.
func wantEmpty(t *testing.T, what string, os []domain.Order) {
	t.Helper()
	if os == nil || len(os) != 0 {
		t.Fatalf("%s = %#v, want an empty, non-nil slice", what, os)
	}
}

// voucher creates a voucher with stock units.
func (f *fixture) voucher(t *testing.T, stock int) domain.VoucherID {
	t.Helper()
	v := domain.Voucher{
		Title: fmt.Sprintf("ordertest: %d units", stock), Stock: stock,
		BeginsAt: t0, EndsAt: t0.Add(time.Hour), PerUserLimit: 1,
	}
	if err := f.Vouchers.Create(f.ctx, &v, domain.Author{}, nil); err != nil {
		t.Fatalf("create voucher: %v", err)
	}
	f.made = append(f.made, v.ID)
	return v.ID
}

// persist persists rs, and fails unless it returns one result per reservation, in
// input order.
func (f *fixture) persist(t *testing.T, rs ...domain.Reservation) []ports.PersistResult {
	t.Helper()
	got, err := f.Store.Persist(f.ctx, rs)
	if err != nil {
		t.Fatalf("Persist: %v", err)
	}
	if len(got) != len(rs) {
		t.Fatalf("Persist returned %d results for %d reservations: %+v", len(got), len(rs), got)
	}
	for i, r := range rs {
		if got[i].OrderID != r.OrderID {
			t.Fatalf("result %d is for order %s, want %s (input order): %+v", i, got[i].OrderID, r.OrderID, got)
		}
	}
	return got
}

// persisted persists rs and fails unless every one became a live order.
func (f *fixture) persisted(t *testing.T, rs ...domain.Reservation) {
	t.Helper()
	for i, res := range f.persist(t, rs...) {
		if want := result(rs[i], ports.Persisted); !sameResult(res, want) {
			t.Fatalf("Persist result %d = %+v, want persisted", i, res)
		}
	}
}

// wantResults fails unless got are want, in order.
func wantResults(t *testing.T, got []ports.PersistResult, want ...ports.PersistResult) {
	t.Helper()
	if !slices.EqualFunc(got, want, sameResult) {
		t.Fatalf("Persist =\n%+v, want\n%+v", got, want)
	}
}

// sold returns voucher v's sold counter.
func (f *fixture) sold(t *testing.T, v domain.VoucherID) int {
	t.Helper()
	got, err := f.Vouchers.Get(f.ctx, v)
	if err != nil {
		t.Fatalf("Get voucher %d: %v", v, err)
	}
	return got.Sold
}

// wantSold fails unless voucher v's sold counter is want.
func (f *fixture) wantSold(t *testing.T, v domain.VoucherID, want int) {
	t.Helper()
	if got := f.sold(t, v); got != want {
		t.Fatalf("sold of voucher %d = %d, want %d", v, got, want)
	}
}

// get returns an order.
func (f *fixture) get(t *testing.T, id domain.OrderID) domain.Order {
	t.Helper()
	o, err := f.Store.Get(f.ctx, id)
	if err != nil {
		t.Fatalf("Get(%s): %v", id, err)
	}
	return o
}

// wantStored fails unless the order r became is stored with status.
func (f *fixture) wantStored(t *testing.T, r domain.Reservation, status domain.OrderStatus) {
	t.Helper()
	if got, want := spell(f.get(t, r.OrderID)), spell(asOrder(r, status)); got != want {
		t.Fatalf("stored order =\n%s, want\n%s", got, want)
	}
}

// ledger returns voucher v's ledger.
func (f *fixture) ledger(t *testing.T, v domain.VoucherID) ports.Ledger {
	t.Helper()
	l, err := f.Store.Ledger(f.ctx, v)
	if err != nil {
		t.Fatalf("Ledger(%d): %v", v, err)
	}
	return l
}

// count returns how many orders the test's vouchers hold.
func (f *fixture) count(t *testing.T) int {
	t.Helper()
	n := 0
	for _, v := range f.made {
		n += len(f.ledger(t, v).Orders)
	}
	return n
}

// liveOf sums the units of a ledger's live orders.
func liveOf(l ports.Ledger) int {
	units := 0
	for _, o := range l.Orders {
		if o.Status.HoldsStock() {
			units += o.Quantity
		}
	}
	return units
}

// liveUnits is what sold should be: the units of v's live orders.
func (f *fixture) liveUnits(t *testing.T, v domain.VoucherID) int {
	t.Helper()
	return liveOf(f.ledger(t, v))
}

// wantConsistent fails unless v's sold counter equals the units of its live orders.
func (f *fixture) wantConsistent(t *testing.T, v domain.VoucherID) {
	t.Helper()
	if sold, live := f.sold(t, v), f.liveUnits(t, v); sold != live {
		t.Fatalf("voucher %d: sold = %d, live units = %d", v, sold, live)
	}
}
