// Package idemtest is the contract suite of idempotency keys: ports.Idempotency (claims,
// their leases and tokens, answers kept and released) and the receipts that
// ports.Vouchers.Create and ports.OrderLifecycle.Transition keep in the same
// transaction as their write. Run holds the in-memory fake and the SQL adapter on
// PostgreSQL and on SQLite to the same tests (ARCHITECTURE.md, Conventions).
//
// It is a test helper, to be imported by _test.go files only (stocktest's
// TestOnlyTestsImportIt fails otherwise).
package idemtest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/seckill/seckill/domain"
	"github.com/seckill/seckill/ports"
)

// Orders is the order store the receipts of Transition are tested on.
type Orders interface {
	ports.Orders
	ports.OrderLifecycle
}

// Subject is one implementation under test: the three over one store, so a receipt
// given to Vouchers or Orders is kept where Idempotency reads it.
type Subject struct {
	Idempotency ports.Idempotency
	Vouchers    ports.Vouchers
	Orders      Orders
}

// test is one test of the suite.
type test struct {
	name string
	run  func(t *testing.T, f *fixture)
}

var tests = []test{
	{"FirstClaimHoldsTheKey", testFirstClaim},
	{"CompleteKeepsTheAnswerOnce", testComplete},
	{"ReleaseFreesTheKey", testRelease},
	{"LeaseIsTakenOverOnlyOnceItPassed", testLease},
	{"TakenOverHolderKeepsNothing", testTakenOver},
	{"RacingTakeoversLeaveOneHolder", testRacingTakeovers},
	{"AnAnswerIsNeverTakenOver", testAnsweredStands},
	{"DayOldKeyIsNewAndPurged", testDayOld},
	{"CreateKeepsItsAnswer", testCreateReceipt},
	{"CreateUnderALostClaimStoresNothing", testCreateLost},
	{"TransitionKeepsItsAnswer", testTransitionReceipt},
	{"TransitionUnderALostClaimChangesNothing", testTransitionLost},
	{"AnswerThatFailsToRenderRollsBack", testRenderFails},
}

// Run runs the suite as parallel subtests of t; newSubject returns a fresh Subject for
// the test it is given and cleans up after it with t.Cleanup.
func Run(t *testing.T, newSubject func(t *testing.T) Subject) {
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := newSubject(t)
			if s.Idempotency == nil || s.Vouchers == nil || s.Orders == nil {
				t.Fatal("idemtest: the Subject needs every field")
			}
			tc.run(t, &fixture{Subject: s, ctx: t.Context()})
		})
	}
}

type fixture struct {
	Subject
	ctx context.Context
}

// t0 is when the suite's first request claims its key; lease is every claim's.
var t0 = time.Date(2026, time.November, 30, 12, 0, 0, 0, time.UTC)

const lease = 7 * time.Second

// claim claims key of user for fingerprint at, and fails unless it holds it.
func (f *fixture) claim(t *testing.T, user domain.UserID, key, fingerprint string, at time.Time) ports.KeyClaim {
	t.Helper()
	c, kept, err := f.Idempotency.Claim(f.ctx, user, key, fingerprint, at, lease)
	if err != nil {
		t.Fatalf("claim %q of user %d at %v: %v", key, user, at, err)
	}
	if !c.Held() || c.User != user || c.Key != key {
		t.Fatalf("claim %q of user %d at %v = %+v (kept %+v), want it held", key, user, at, c, kept)
	}
	return c
}

// kept claims key of user at, and fails unless the key is another request's: it
// returns what is kept of it.
func (f *fixture) kept(t *testing.T, user domain.UserID, key, fingerprint string, at time.Time) ports.IdempotentRequest {
	t.Helper()
	c, kept, err := f.Idempotency.Claim(f.ctx, user, key, fingerprint, at, lease)
	if err != nil {
		t.Fatalf("claim %q of user %d at %v: %v", key, user, at, err)
	}
	if c.Held() {
		t.Fatalf("claim %q of user %d at %v held the key, want it another request's", key, user, at)
	}
	return kept
}

// wantKept fails unless kept is fingerprint's request with status and body.
func wantKept(t *testing.T, what string, kept ports.IdempotentRequest, fingerprint string, status int, body string) {
	t.Helper()
	if kept.Fingerprint != fingerprint || kept.Status != status || string(kept.Body) != body {
		t.Fatalf("%s = %q %d %q, want %q %d %q", what, kept.Fingerprint, kept.Status, kept.Body, fingerprint, status, body)
	}
}

// complete keeps an answer under c and reports whether it was kept.
func (f *fixture) complete(t *testing.T, c ports.KeyClaim, status int, body string) bool {
	t.Helper()
	ok, err := f.Idempotency.Complete(f.ctx, c, status, []byte(body))
	if err != nil {
		t.Fatalf("complete %+v: %v", c, err)
	}
	return ok
}

func testFirstClaim(t *testing.T, f *fixture) {
	first := f.claim(t, 7, "k1", "fp-a", t0)
	if again := f.claim(t, 8, "k1", "fp-b", t0); again.Token == first.Token {
		t.Fatalf("two claims share the token %q", first.Token)
	}
	wantKept(t, "a repeat while in progress", f.kept(t, 7, "k1", "fp-a", t0), "fp-a", 0, "")
	wantKept(t, "another request under the key", f.kept(t, 7, "k1", "fp-z", t0.Add(time.Second)), "fp-a", 0, "")
}

func testComplete(t *testing.T, f *fixture) {
	c := f.claim(t, 7, "k1", "fp-a", t0)
	if !f.complete(t, c, 201, `{"id":"1"}`) {
		t.Fatal("Complete of a held claim kept nothing")
	}
	wantKept(t, "a repeat", f.kept(t, 7, "k1", "fp-a", t0.Add(time.Hour)), "fp-a", 201, `{"id":"1"}`)
	if f.complete(t, c, 409, `{"error":{}}`) {
		t.Fatal("a second Complete kept its answer over the first")
	}
	wantKept(t, "a repeat after a second Complete", f.kept(t, 7, "k1", "fp-a", t0), "fp-a", 201, `{"id":"1"}`)
	if err := f.Idempotency.Release(f.ctx, c); err != nil {
		t.Fatal(err)
	}
	wantKept(t, "a repeat after Release of an answered claim", f.kept(t, 7, "k1", "fp-a", t0), "fp-a", 201, `{"id":"1"}`)
}

func testRelease(t *testing.T, f *fixture) {
	c := f.claim(t, 7, "k1", "fp-a", t0)
	if err := f.Idempotency.Release(f.ctx, c); err != nil {
		t.Fatal(err)
	}
	again := f.claim(t, 7, "k1", "fp-b", t0)
	wantKept(t, "a repeat of the new claim", f.kept(t, 7, "k1", "fp-b", t0), "fp-b", 0, "")
	// The old claim no longer holds the key: releasing it again frees nothing.
	if err := f.Idempotency.Release(f.ctx, c); err != nil {
		t.Fatal(err)
	}
	wantKept(t, "after the old claim's second Release", f.kept(t, 7, "k1", "fp-b", t0), "fp-b", 0, "")
	if !f.complete(t, again, 200, "ok") {
		t.Fatal("the new claim could not keep its answer")
	}
}

func testLease(t *testing.T, f *fixture) {
	dead := f.claim(t, 7, "k1", "fp-a", t0)
	// Not before the lease has passed, however close.
	wantKept(t, "a retry just before the lease passed", f.kept(t, 7, "k1", "fp-a", t0.Add(lease-time.Millisecond)), "fp-a", 0, "")
	taken := f.claim(t, 7, "k1", "fp-a", t0.Add(lease))
	if taken.Token == dead.Token {
		t.Fatalf("the takeover kept the dead claim's token %q", dead.Token)
	}
	// The new holder has a lease of its own, from the takeover.
	wantKept(t, "a retry within the new lease", f.kept(t, 7, "k1", "fp-a", t0.Add(2*lease-time.Millisecond)), "fp-a", 0, "")
	if !f.complete(t, taken, 201, "second") {
		t.Fatal("the new holder could not keep its answer")
	}
	wantKept(t, "a retry after the takeover's answer", f.kept(t, 7, "k1", "fp-a", t0.Add(3*lease)), "fp-a", 201, "second")
}

func testTakenOver(t *testing.T, f *fixture) {
	old := f.claim(t, 7, "k1", "fp-a", t0)
	taken := f.claim(t, 7, "k1", "fp-a", t0.Add(lease+time.Second))
	if f.complete(t, old, 500, "first") {
		t.Fatal("a holder whose key was taken over kept its answer")
	}
	if err := f.Idempotency.Release(f.ctx, old); err != nil {
		t.Fatal(err)
	}
	wantKept(t, "after the old holder's Complete and Release", f.kept(t, 7, "k1", "fp-a", t0.Add(lease+time.Second)), "fp-a", 0, "")
	if !f.complete(t, taken, 200, "second") {
		t.Fatal("the holder that took the key over could not keep its answer")
	}
}

func testRacingTakeovers(t *testing.T, f *fixture) {
	f.claim(t, 7, "k1", "fp-a", t0)
	const racers = 8
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		held int
		errs []error
	)
	for range racers {
		wg.Go(func() {
			c, _, err := f.Idempotency.Claim(f.ctx, 7, "k1", "fp-a", t0.Add(lease), lease)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err)
			} else if c.Held() {
				held++
			}
		})
	}
	wg.Wait()
	if len(errs) > 0 || held != 1 {
		t.Fatalf("%d racing takeovers: %d held the key, errors %v; want exactly one", racers, held, errs)
	}
}

func testAnsweredStands(t *testing.T, f *fixture) {
	c := f.claim(t, 7, "k1", "fp-a", t0)
	f.complete(t, c, 409, "conflict")
	wantKept(t, "a retry long after the lease", f.kept(t, 7, "k1", "fp-a", t0.Add(time.Hour)), "fp-a", 409, "conflict")
}

func testDayOld(t *testing.T, f *fixture) {
	const day = 24 * time.Hour
	answered := f.claim(t, 7, "k1", "fp-a", t0)
	f.complete(t, answered, 201, "old")
	f.claim(t, 8, "k1", "fp-b", t0.Add(time.Minute))
	wantKept(t, "a retry just before a day", f.kept(t, 7, "k1", "fp-a", t0.Add(day-time.Millisecond)), "fp-a", 201, "old")
	f.claim(t, 7, "k1", "fp-c", t0.Add(day))
	n, err := f.Idempotency.Purge(f.ctx, t0.Add(2*time.Minute))
	if err != nil || n != 1 {
		t.Fatalf("Purge = %d, %v; want user 8's key (claimed at t0+1m) forgotten, user 7's (claimed anew) kept", n, err)
	}
	f.claim(t, 8, "k1", "fp-d", t0.Add(2*time.Minute))
}

// voucherAnswer renders a voucher as a handler would.
func voucherAnswer(v domain.Voucher) (int, []byte, error) {
	return 201, fmt.Appendf(nil, `{"id":"%d","title":%q}`, v.ID, v.Title), nil
}

// orderAnswer renders an order as a handler would.
func orderAnswer(o domain.Order) (int, []byte, error) {
	return 200, fmt.Appendf(nil, `{"order_id":%q,"status":%q}`, o.ID, o.Status), nil
}

// newVoucher returns a voucher to create, titled title.
func newVoucher(title string) domain.Voucher {
	return domain.Voucher{Title: title, Stock: 10, BeginsAt: t0, EndsAt: t0.Add(time.Hour), PerUserLimit: 1}
}

// titled returns how many vouchers are titled title.
func (f *fixture) titled(t *testing.T, title string) int {
	t.Helper()
	vs, err := f.Vouchers.List(f.ctx, ports.VoucherQuery{Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, v := range vs {
		if v.Title == title {
			n++
		}
	}
	return n
}

func testCreateReceipt(t *testing.T, f *fixture) {
	c := f.claim(t, 1, "create-1", "fp-a", t0)
	v := newVoucher("receipt")
	if err := f.Vouchers.Create(f.ctx, &v, domain.Author{}, &ports.Receipt[domain.Voucher]{Claim: c, Answer: voucherAnswer}); err != nil {
		t.Fatal(err)
	}
	if v.ID == 0 {
		t.Fatal("Create with a receipt set no id")
	}
	_, want, _ := voucherAnswer(v)
	wantKept(t, "a retry after the create", f.kept(t, 1, "create-1", "fp-a", t0.Add(time.Hour)), "fp-a", 201, string(want))
	// The answer is kept: the handler's own Complete and Release change nothing.
	if f.complete(t, c, 500, "late") {
		t.Fatal("Complete kept an answer over the one the create kept")
	}
	if err := f.Idempotency.Release(f.ctx, c); err != nil {
		t.Fatal(err)
	}
	wantKept(t, "after Complete and Release", f.kept(t, 1, "create-1", "fp-a", t0), "fp-a", 201, string(want))
	if got := f.titled(t, "receipt"); got != 1 {
		t.Fatalf("%d vouchers stored, want 1", got)
	}
}

func testCreateLost(t *testing.T, f *fixture) {
	old := f.claim(t, 1, "create-1", "fp-a", t0)
	taken := f.claim(t, 1, "create-1", "fp-a", t0.Add(lease))
	v := newVoucher("lost")
	err := f.Vouchers.Create(f.ctx, &v, domain.Author{}, &ports.Receipt[domain.Voucher]{Claim: old, Answer: voucherAnswer})
	if !errors.Is(err, ports.ErrClaimLost) || !errors.Is(err, domain.ErrUnavailable) {
		t.Fatalf("Create under a claim taken over: %v, want ports.ErrClaimLost (domain.ErrUnavailable)", err)
	}
	if got := f.titled(t, "lost"); got != 0 {
		t.Fatalf("%d vouchers stored under a lost claim, want none", got)
	}
	wantKept(t, "the key after the lost create", f.kept(t, 1, "create-1", "fp-a", t0.Add(lease)), "fp-a", 0, "")
	v = newVoucher("lost")
	if err := f.Vouchers.Create(f.ctx, &v, domain.Author{}, &ports.Receipt[domain.Voucher]{Claim: taken, Answer: voucherAnswer}); err != nil {
		t.Fatalf("Create under the claim that took the key over: %v", err)
	}
	if got := f.titled(t, "lost"); got != 1 {
		t.Fatalf("%d vouchers stored, want the new holder's one", got)
	}
}

// order persists an order awaiting payment of user and returns it.
func (f *fixture) order(t *testing.T, user domain.UserID) (domain.Reservation, domain.VoucherID) {
	t.Helper()
	v := newVoucher("orders")
	if err := f.Vouchers.Create(f.ctx, &v, domain.Author{}, nil); err != nil {
		t.Fatal(err)
	}
	r := domain.Reservation{OrderID: "01KB0000000000000000000001", VoucherID: v.ID, UserID: user, Quantity: 2, At: t0}
	res, err := f.Orders.Persist(f.ctx, []domain.Reservation{r})
	if err != nil || len(res) != 1 || res[0].Outcome != ports.Persisted {
		t.Fatalf("persist %+v: %+v, %v", r, res, err)
	}
	return r, v.ID
}

// wantOrder fails unless the order r is status and its voucher has sold units sold.
func (f *fixture) wantOrder(t *testing.T, r domain.Reservation, status domain.OrderStatus, sold int) {
	t.Helper()
	o, err := f.Orders.Get(f.ctx, r.OrderID)
	if err != nil || o.Status != status {
		t.Fatalf("order = %+v, %v; want it %s", o, err, status)
	}
	v, err := f.Vouchers.Get(f.ctx, r.VoucherID)
	if err != nil || v.Sold != sold {
		t.Fatalf("voucher = %+v, %v; want %d sold", v, err, sold)
	}
}

func testTransitionReceipt(t *testing.T, f *fixture) {
	r, _ := f.order(t, 5)
	c := f.claim(t, 5, "cancel-1", "fp-a", t0)
	o, err := f.Orders.Transition(f.ctx, r.OrderID, 5, domain.StatusCancelled, &ports.Receipt[domain.Order]{Claim: c, Answer: orderAnswer})
	if err != nil || o.Status != domain.StatusCancelled {
		t.Fatalf("Transition with a receipt = %+v, %v", o, err)
	}
	_, want, _ := orderAnswer(o)
	wantKept(t, "a retry after the cancel", f.kept(t, 5, "cancel-1", "fp-a", t0.Add(time.Hour)), "fp-a", 200, string(want))
	f.wantOrder(t, r, domain.StatusCancelled, 0)
}

func testTransitionLost(t *testing.T, f *fixture) {
	r, _ := f.order(t, 5)
	old := f.claim(t, 5, "cancel-1", "fp-a", t0)
	f.claim(t, 5, "cancel-1", "fp-a", t0.Add(lease))
	for _, to := range []domain.OrderStatus{domain.StatusCancelled, domain.StatusPaid} {
		_, err := f.Orders.Transition(f.ctx, r.OrderID, 5, to, &ports.Receipt[domain.Order]{Claim: old, Answer: orderAnswer})
		if !errors.Is(err, ports.ErrClaimLost) {
			t.Fatalf("Transition to %s under a claim taken over: %v, want ports.ErrClaimLost", to, err)
		}
		f.wantOrder(t, r, domain.StatusAwaitingPayment, 2)
	}
	wantKept(t, "the key after the lost transitions", f.kept(t, 5, "cancel-1", "fp-a", t0.Add(lease)), "fp-a", 0, "")
}

func testRenderFails(t *testing.T, f *fixture) {
	broken := errors.New("cannot render")
	c := f.claim(t, 1, "create-1", "fp-a", t0)
	v := newVoucher("unrendered")
	err := f.Vouchers.Create(f.ctx, &v, domain.Author{}, &ports.Receipt[domain.Voucher]{Claim: c, Answer: func(domain.Voucher) (int, []byte, error) {
		return 0, nil, broken
	}})
	if !errors.Is(err, broken) {
		t.Fatalf("Create whose answer fails to render: %v, want that failure", err)
	}
	if got := f.titled(t, "unrendered"); got != 0 {
		t.Fatalf("%d vouchers stored, want none", got)
	}
	r, _ := f.order(t, 5)
	c = f.claim(t, 5, "pay-1", "fp-a", t0)
	_, err = f.Orders.Transition(f.ctx, r.OrderID, 5, domain.StatusPaid, &ports.Receipt[domain.Order]{Claim: c, Answer: func(domain.Order) (int, []byte, error) {
		return 0, nil, broken
	}})
	if !errors.Is(err, broken) {
		t.Fatalf("Transition whose answer fails to render: %v, want that failure", err)
	}
	f.wantOrder(t, r, domain.StatusAwaitingPayment, 2)
	wantKept(t, "the key after both", f.kept(t, 5, "pay-1", "fp-a", t0), "fp-a", 0, "")
}
