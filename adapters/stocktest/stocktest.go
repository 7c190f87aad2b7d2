// Package stocktest is the contract suite of ports.Stock. Run asserts what the port
// documents against one implementation, so the in-memory fake and the Redis and
// PostgreSQL strategies are all held to the same tests (ARCHITECTURE.md, Conventions).
//
// It is a test helper, to be imported by _test.go files only (TestOnlyTestsImportIt
// fails otherwise): it imports testing, and nothing in it is fit for production code.
// It is a normal package, not a _test one, so that every adapter's tests can import it.
package stocktest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seckill/seckill/domain"
	"github.com/seckill/seckill/ports"
)

// Subject is one implementation of ports.Stock under test, with what the suite needs
// to put a voucher on sale and to see what a grab recorded, and the capabilities that
// declare how the Stock legitimately differs from the others. Run builds a Subject for
// every test, so no test sees another's state.
type Subject struct {
	// Stock is the implementation under test.
	Stock ports.Stock

	// Recorded returns the reservations Reserve recorded for fulfillment of voucher id,
	// in any order, released ones included: the entries the Redis strategies append to
	// the voucher's stream, the orders the postgres strategy stores, memory.Stock's
	// Reserved. None for a voucher without sale state. The suite checks that a grab
	// answered "reserved" is recorded exactly once, with its order, user, quantity and
	// time (to the millisecond), and that a refused grab records nothing.
	Recorded func(t *testing.T, id domain.VoucherID) []domain.Reservation

	// Vouchers, when set, declares that the Stock keeps no sale state of its own but
	// reads it from these voucher records (the postgres strategy reads the vouchers
	// rows). The suite then creates each voucher there, they number it, and Warm must
	// load nothing and report false; to pause or resume a sale the suite records the
	// flag there before it calls SetPaused, as application.PauseSale does. When nil,
	// the suite numbers the vouchers itself and Warm loads them: it must report true
	// for a voucher's first warm-up and false for every later one.
	Vouchers ports.Vouchers

	// Orders, when set, declares that the Stock's reservations are these orders
	// themselves (the postgres strategy; see sqlstock.Stock.Release). The suite closes
	// an order there (cancels it) before releasing it, as the order lifecycle does, and
	// closing it must put its units back on sale at once. Release then gives nothing
	// back and reports whether the order is closed with its release not yet recorded
	// (by ports.Releases.MarkReleased, which the suite never calls): true for every
	// Release of an order the suite closed, false for an order nobody holds. When nil,
	// an order is closed by its status alone, and Release itself gives the units back
	// and reports it: true once, then false.
	Orders ports.OrderLifecycle

	// Audit, when set, is the StockAudit over the same state. A voucher the suite puts
	// on sale with units sold (live orders) is then opened to grabs as
	// application.WarmVouchers does: Warm, restore the live orders' reservations (the
	// suite has none), Restored — a Stock may answer grabs unavailable until then (see
	// ports.Stock.Warm). When nil, Warm alone must open it.
	Audit ports.StockAudit

	// UnavailableUnderContention declares that Reserve may answer an error wrapping
	// domain.ErrUnavailable when concurrent grabs of the voucher kept it from judging
	// one (the WATCH strategy's bounded optimistic transactions). Such an answer must
	// have taken and recorded nothing. The suite accepts it in the concurrency test,
	// and nowhere else.
	UnavailableUnderContention bool

	// IssuePass, when set, makes p outstanding as a waiting room does when it admits
	// p.User: the Redis strategies add the user's member to the passes set
	// (redisstore.Keys.Passes), memory.Stock records it (IssuePass). A pass is then
	// taken only while it is outstanding with its very expiry. When nil, the Stock
	// cannot know which passes were issued (the postgres strategy: the waiting room
	// issues them in Redis): it takes any pass unexpired at the grab's time, once, and
	// the suite skips the cases that need it to know (another user's pass, a pass
	// never issued).
	IssuePass func(t *testing.T, p domain.Pass)
}

// at0 is when the suite's grabs happen, in the middle of every voucher's sale. It lies
// far in the future, because Redis expires a sale's keys by its own clock, and it has
// a zone and a sub-millisecond part, so a Stock that stores times (the postgres
// strategy) converts them as it converts a real request's.
var at0 = time.Date(2099, time.January, 1, 20, 0, 0, 123456789, time.FixedZone("UTC+8", 8*60*60))

// unknown is a voucher id the suite never puts on sale.
const unknown domain.VoucherID = 1 << 40

// Run runs the contract suite of ports.Stock as parallel subtests of t. newSubject
// returns a fresh Subject for the test it is given, and cleans up after it with
// t.Cleanup.
func Run(t *testing.T, newSubject func(t *testing.T) Subject) {
	tests := []struct {
		name string
		run  func(t *testing.T, f *fixture)
	}{
		{"WarmNeverResetsALiveSale", testWarmNeverResetsALiveSale},
		{"WarmLeavesWhatTheDatabaseSold", testWarmLeavesWhatTheDatabaseSold},
		{"ReserveOutcomes", testReserveOutcomes},
		{"ReserveAlreadyPurchasedNamesTheOrder", testReserveAlreadyPurchasedNamesTheOrder},
		{"ReserveSoldOutBelowTheQuantity", testReserveSoldOutBelowTheQuantity},
		{"ReserveRuleOrder", testReserveRuleOrder},
		{"ReserveUnknownVoucher", testReserveUnknownVoucher},
		{"Remaining", testRemaining},
		{"SetPaused", testSetPaused},
		{"Release", testRelease},
		{"ReleaseAStaleOrder", testReleaseAStaleOrder},
		{"ReleaseQuantityBelowOne", testReleaseQuantityBelowOne},
		{"ReleaseOnceUnderConcurrency", testReleaseOnceUnderConcurrency},
		{"ConcurrentGrabsSellExactlyTheStock", testConcurrentGrabsSellExactlyTheStock},
		{"GrabWithoutATimeIsJudgedByTheSaleClock", testGrabWithoutATimeIsJudgedByTheSaleClock},
		{"ProofOfWorkGate", testProofOfWorkGate},
		{"WaitingRoomGate", testWaitingRoomGate},
		{"WaitingRoomPassIsUsedOnce", testWaitingRoomPassIsUsedOnce},
		{"WaitingRoomPassOfAnother", testWaitingRoomPassOfAnother},
		{"GatesComeFirst", testGatesComeFirst},
		{"WaitingRoomPassOnceUnderConcurrency", testWaitingRoomPassOnceUnderConcurrency},
		{"DrawTakesNoGrabBeforeItsDraw", testDrawTakesNoGrabBeforeItsDraw},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := newSubject(t)
			if s.Stock == nil || s.Recorded == nil {
				t.Fatal("stocktest: the Subject needs a Stock and Recorded")
			}
			tc.run(t, &fixture{Subject: s, ctx: t.Context()})
		})
	}
}

// fixture is one test's Subject, with the steps the tests take on it. Every step takes
// the *testing.T of the test or subtest that runs it.
type fixture struct {
	Subject
	ctx context.Context
	// lastID is the last voucher id the suite handed out (Vouchers unset).
	lastID domain.VoucherID
}

// voucher returns a voucher of stock units, at most limit to one user, on sale from an
// hour before at0 to an hour after.
func voucher(stock, limit int) domain.Voucher {
	return domain.Voucher{
		Title:        fmt.Sprintf("stocktest: %d units, %d a user", stock, limit),
		Stock:        stock,
		BeginsAt:     at0.Add(-time.Hour),
		EndsAt:       at0.Add(time.Hour),
		PerUserLimit: limit,
	}
}

// grab returns user's grab of qty units of voucher id at at0, under the order id
// "v<id>-<order>": order ids are unique across vouchers (ports.OrderIDs), and the
// postgres strategy's orders table holds them so.
func grab(id domain.VoucherID, user domain.UserID, qty int, order string) domain.Reservation {
	return domain.Reservation{
		OrderID:   domain.OrderID(fmt.Sprintf("v%d-%s", id, order)),
		VoucherID: id, UserID: user, Quantity: qty, At: at0,
	}
}

// order returns the order r became, with status, as the database hands it over.
func order(r domain.Reservation, status domain.OrderStatus) domain.Order {
	return domain.Order{
		ID: r.OrderID, VoucherID: r.VoucherID, UserID: r.UserID, Quantity: r.Quantity,
		Status: status, CreatedAt: r.At,
	}
}

// sell puts v on sale as application.CreateVoucher does, stored (where the Stock reads
// it) and then warmed, checks what Warm reported, and returns v with its id.
func (f *fixture) sell(t *testing.T, v domain.Voucher) domain.Voucher {
	t.Helper()
	if f.Vouchers != nil {
		if err := f.Vouchers.Create(f.ctx, &v, domain.Author{}, nil); err != nil {
			t.Fatalf("create voucher %q: %v", v.Title, err)
		}
	} else {
		f.lastID++
		v.ID = f.lastID
	}
	warmed, err := f.Stock.Warm(f.ctx, v)
	if err != nil {
		t.Fatalf("Warm(%d): %v", v.ID, err)
	}
	// A Stock reading the voucher records has nothing to load; one that loads a
	// voucher whose live orders hold units loads it restoring.
	want := ports.WarmLoaded
	switch {
	case f.Vouchers != nil:
		want = ports.WarmPresent
	case v.Sold > 0:
		want = ports.WarmRestoring
	}
	if warmed != want {
		t.Fatalf("first Warm(%d) = %v, want %v", v.ID, warmed, want)
	}
	if v.Sold > 0 && f.Audit != nil {
		if err := f.Audit.Restored(f.ctx, v.ID); err != nil {
			t.Fatalf("Restored(%d) after Warm: %v", v.ID, err)
		}
	}
	return v
}

// pause pauses or resumes voucher id as application.PauseSale does.
func (f *fixture) pause(t *testing.T, id domain.VoucherID, paused bool) {
	t.Helper()
	if f.Vouchers != nil {
		_, err := f.Vouchers.Update(f.ctx, id, ports.VoucherUpdate{Action: domain.AuditVoucherPause,
			Change: func(v domain.Voucher) (domain.Voucher, error) { v.Paused = paused; return v, nil }})
		if err != nil {
			t.Fatalf("record paused = %v of voucher %d: %v", paused, id, err)
		}
	}
	ok, err := f.Stock.SetPaused(f.ctx, id, paused)
	if err != nil {
		t.Fatalf("SetPaused(%d, %v): %v", id, paused, err)
	}
	if !ok {
		t.Fatalf("SetPaused(%d, %v) = false, want true: the voucher is on sale", id, paused)
	}
}

// reserve calls Reserve and fails the test unless it answers want: nil (reserved),
// domain.ErrAlreadyPurchased (then naming the order held), or any other error errors.Is
// matches.
func (f *fixture) reserve(t *testing.T, r domain.Reservation, want error, held domain.OrderID) {
	t.Helper()
	err := f.Stock.Reserve(f.ctx, r)
	what := fmt.Sprintf("Reserve(user %d, %d units of voucher %d, order %s)", r.UserID, r.Quantity, r.VoucherID, r.OrderID)
	if want == nil {
		if err != nil {
			t.Fatalf("%s = %v, want reserved", what, err)
		}
		return
	}
	if !errors.Is(err, want) {
		t.Fatalf("%s = %v, want %v", what, err, want)
	}
	if errors.Is(want, domain.ErrAlreadyPurchased) {
		var purchased *domain.AlreadyPurchasedError
		if !errors.As(err, &purchased) {
			t.Fatalf("%s = %v, want a *domain.AlreadyPurchasedError", what, err)
		}
		if got, want := purchased.OrderID, held; got != want {
			t.Fatalf("%s names order %q, want %q (the one the user holds)", what, got, want)
		}
	}
	if errors.Is(want, domain.ErrInvalid) {
		var invalid *domain.ValidationError
		if !errors.As(err, &invalid) {
			t.Fatalf("%s = %v, want a *domain.ValidationError", what, err)
		}
		if got, want := invalid.Field, "quantity"; got != want {
			t.Fatalf("%s names field %q, want %q", what, got, want)
		}
	}
}

// wantRemaining fails the test unless voucher id has sale state with want units left.
func (f *fixture) wantRemaining(t *testing.T, id domain.VoucherID, want int) {
	t.Helper()
	left, err := f.Stock.Remaining(f.ctx, id)
	if err != nil {
		t.Fatalf("Remaining(%d): %v", id, err)
	}
	got, ok := left[id]
	if !ok {
		t.Fatalf("Remaining(%d) = %v: the voucher has no sale state", id, left)
	}
	if got != want {
		t.Fatalf("remaining of voucher %d = %d, want %d", id, got, want)
	}
}

// wantRecorded fails the test unless the reservations recorded of voucher id are want.
func (f *fixture) wantRecorded(t *testing.T, id domain.VoucherID, want ...domain.Reservation) {
	t.Helper()
	if got, want := spell(f.Recorded(t, id)), spell(want); !slices.Equal(got, want) {
		t.Fatalf("voucher %d recorded %q, want %q", id, got, want)
	}
}

// spell writes reservations as the suite compares them, sorted: the time to the
// millisecond, the precision every Stock judges and records it at.
func spell(rs []domain.Reservation) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = fmt.Sprintf("order %s: voucher %d, user %d, %d units at %d ms",
			r.OrderID, r.VoucherID, r.UserID, r.Quantity, r.At.UnixMilli())
	}
	slices.Sort(out)
	return out
}

// close closes the order r became, as the order lifecycle does before compensation
// releases it: through Orders when the Stock's reservations are orders (which puts the
// units back), by its status alone otherwise.
func (f *fixture) close(t *testing.T, r domain.Reservation) domain.Order {
	t.Helper()
	if f.Orders == nil {
		return order(r, domain.StatusCancelled)
	}
	o, err := f.Orders.Transition(f.ctx, r.OrderID, r.UserID, domain.StatusCancelled, nil)
	if err != nil {
		t.Fatalf("cancel order %s: %v", r.OrderID, err)
	}
	if got, want := o.Status, domain.StatusCancelled; got != want {
		t.Fatalf("order %s is %s once cancelled, want %s", o.ID, got, want)
	}
	return o
}

// release calls Release and fails the test unless it reports want.
func (f *fixture) release(t *testing.T, o domain.Order, want bool) {
	t.Helper()
	got, err := f.Stock.Release(f.ctx, o)
	if err != nil {
		t.Fatalf("Release(order %s): %v", o.ID, err)
	}
	if got != want {
		t.Fatalf("Release(order %s) = %v, want %v", o.ID, got, want)
	}
}

// releasedAgain is what Release reports for an order the suite closed and released
// before: false where Release gives the units back (it did already), true where the
// order is the reservation (its release is still to be recorded; see Subject.Orders).
func (f *fixture) releasedAgain() bool { return f.Orders != nil }

func testWarmNeverResetsALiveSale(t *testing.T, f *fixture) {
	v := f.sell(t, voucher(10, 3))
	f.wantRemaining(t, v.ID, 10)
	held := grab(v.ID, 1, 3, "o1")
	f.reserve(t, held, nil, "")

	// Warming up again, even a voucher changed meanwhile, loads nothing.
	changed := v
	changed.Stock, changed.Sold = 50, 0
	for i := range 2 {
		warmed, err := f.Stock.Warm(f.ctx, changed)
		if err != nil {
			t.Fatalf("Warm #%d: %v", i+2, err)
		}
		if warmed != ports.WarmPresent {
			t.Fatalf("Warm #%d loaded a live sale again", i+2)
		}
	}
	f.wantRemaining(t, v.ID, 7)
	f.reserve(t, grab(v.ID, 1, 1, "o1-again"), domain.ErrAlreadyPurchased, held.OrderID)
}

func testWarmLeavesWhatTheDatabaseSold(t *testing.T, f *fixture) {
	if f.Vouchers != nil {
		t.Skip("the Stock reads its sale state from the voucher records (Subject.Vouchers): Warm loads nothing, and sold is theirs to count")
	}
	v := voucher(10, 2)
	v.Sold = 3
	v = f.sell(t, v)
	f.wantRemaining(t, v.ID, 7)
	f.reserve(t, grab(v.ID, 1, 2, "o1"), nil, "")
	f.wantRemaining(t, v.ID, 5)

	// More sold than stock (a database ahead of a shrunk stock): nothing left, never a
	// negative count.
	over := voucher(4, 1)
	over.Sold = 6
	over = f.sell(t, over)
	f.wantRemaining(t, over.ID, 0)
	f.reserve(t, grab(over.ID, 1, 1, "o2"), domain.ErrSoldOut, "")
	f.wantRecorded(t, over.ID)
}

func testReserveOutcomes(t *testing.T, f *fixture) {
	tests := []struct {
		name   string
		at     time.Time
		qty    int
		paused bool
		want   error
	}{
		{"reserved", at0, 1, false, nil},
		{"reserved at the opening instant", at0.Add(-time.Hour), 1, false, nil},
		{"reserved at the last millisecond", at0.Add(time.Hour - time.Millisecond), 2, false, nil},
		{"not started a millisecond before the opening", at0.Add(-time.Hour - time.Millisecond), 1, false, domain.ErrNotStarted},
		{"ended at the closing instant", at0.Add(time.Hour), 1, false, domain.ErrEnded},
		{"ended", at0.Add(48 * time.Hour), 1, false, domain.ErrEnded},
		{"paused", at0, 1, true, domain.ErrPaused},
		{"over the per-user limit", at0, 3, false, domain.ErrInvalid},
		{"zero quantity", at0, 0, false, domain.ErrInvalid},
		{"negative quantity", at0, -1, false, domain.ErrInvalid},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v := voucher(10, 2)
			v.Paused = tc.paused
			v = f.sell(t, v)
			r := grab(v.ID, 1, tc.qty, "o1")
			r.At = tc.at

			f.reserve(t, r, tc.want, "")
			left, recorded := 10, []domain.Reservation(nil)
			if tc.want == nil {
				left, recorded = 10-tc.qty, []domain.Reservation{r}
			}
			f.wantRemaining(t, v.ID, left)
			f.wantRecorded(t, v.ID, recorded...)
			if tc.paused {
				return
			}
			// The user now holds the order reserved, or nothing after a refusal.
			again := grab(v.ID, 1, 1, "o1-again")
			if tc.want == nil {
				f.reserve(t, again, domain.ErrAlreadyPurchased, r.OrderID)
			} else {
				f.reserve(t, again, nil, "")
			}
		})
	}
}

func testReserveAlreadyPurchasedNamesTheOrder(t *testing.T, f *fixture) {
	v := f.sell(t, voucher(2, 1))
	first := grab(v.ID, 1, 1, "o1")
	f.reserve(t, first, nil, "")
	f.reserve(t, grab(v.ID, 1, 1, "o1-again"), domain.ErrAlreadyPurchased, first.OrderID)

	second := grab(v.ID, 2, 1, "o2")
	f.reserve(t, second, nil, "")
	// Sold out: a holder still learns its order, anyone else hears sold out.
	f.reserve(t, grab(v.ID, 1, 1, "o1-third"), domain.ErrAlreadyPurchased, first.OrderID)
	f.reserve(t, grab(v.ID, 2, 1, "o2-again"), domain.ErrAlreadyPurchased, second.OrderID)
	f.reserve(t, grab(v.ID, 3, 1, "o3"), domain.ErrSoldOut, "")
	f.wantRemaining(t, v.ID, 0)
	f.wantRecorded(t, v.ID, first, second)
}

func testReserveSoldOutBelowTheQuantity(t *testing.T, f *fixture) {
	v := f.sell(t, voucher(5, 3))
	first := grab(v.ID, 1, 3, "o1")
	f.reserve(t, first, nil, "")
	f.wantRemaining(t, v.ID, 2)

	// Two left: a grab of three is sold out and takes nothing ...
	f.reserve(t, grab(v.ID, 2, 3, "o2"), domain.ErrSoldOut, "")
	f.wantRemaining(t, v.ID, 2)
	// ... so the same user may take what is left.
	rest := grab(v.ID, 2, 2, "o2-again")
	f.reserve(t, rest, nil, "")
	f.reserve(t, grab(v.ID, 3, 1, "o3"), domain.ErrSoldOut, "")
	f.wantRemaining(t, v.ID, 0)
	f.wantRecorded(t, v.ID, first, rest)
}

// testReserveRuleOrder breaks several rules with one grab: the answer is the first
// rule broken, in the order of the grab rule (domain.Sale.Judge): paused, the window,
// the per-user limit, an order already held, the units left.
func testReserveRuleOrder(t *testing.T, f *fixture) {
	v := f.sell(t, voucher(1, 1))
	held := grab(v.ID, 1, 1, "o1")
	f.reserve(t, held, nil, "")
	// Sold out from now on, and user 1 holds the last unit.
	at := func(when time.Time, r domain.Reservation) domain.Reservation {
		r.At = when
		return r
	}
	early, late := at0.Add(-2*time.Hour), at0.Add(2*time.Hour)
	type step struct {
		name string
		r    domain.Reservation
		want error
	}
	steps := []step{
		{"over the limit, sold out", grab(v.ID, 2, 2, "o2-over"), domain.ErrInvalid},
		{"over the limit, held, sold out", grab(v.ID, 1, 2, "o1-over"), domain.ErrInvalid},
		{"not started, sold out", at(early, grab(v.ID, 2, 1, "o2-early")), domain.ErrNotStarted},
		{"not started, held, sold out", at(early, grab(v.ID, 1, 1, "o1-early")), domain.ErrNotStarted},
		{"not started, over the limit, held, sold out", at(early, grab(v.ID, 1, 2, "o1-early-over")), domain.ErrNotStarted},
		{"ended, sold out", at(late, grab(v.ID, 2, 1, "o2-late")), domain.ErrEnded},
		{"ended, over the limit, held, sold out", at(late, grab(v.ID, 1, 2, "o1-late-over")), domain.ErrEnded},
	}
	// Then paused.
	paused := []step{
		{"paused, sold out", grab(v.ID, 2, 1, "o2-paused"), domain.ErrPaused},
		{"paused, held, sold out", grab(v.ID, 1, 1, "o1-paused"), domain.ErrPaused},
		{"paused, over the limit, sold out", grab(v.ID, 2, 2, "o2-paused-over"), domain.ErrPaused},
		{"paused, not started, sold out", at(early, grab(v.ID, 2, 1, "o2-paused-early")), domain.ErrPaused},
		{"paused, ended, over the limit, held, sold out", at(late, grab(v.ID, 1, 2, "o1-paused-late")), domain.ErrPaused},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) { f.reserve(t, s.r, s.want, "") })
	}
	f.pause(t, v.ID, true)
	for _, s := range paused {
		t.Run(s.name, func(t *testing.T) { f.reserve(t, s.r, s.want, "") })
	}
	f.wantRemaining(t, v.ID, 0)
	f.wantRecorded(t, v.ID, held)
}

func testReserveUnknownVoucher(t *testing.T, f *fixture) {
	f.sell(t, voucher(5, 1))
	f.reserve(t, grab(unknown, 1, 1, "o1"), domain.ErrNotFound, "")
	f.wantRecorded(t, unknown)
	left, err := f.Stock.Remaining(f.ctx, unknown)
	if err != nil {
		t.Fatalf("Remaining: %v", err)
	}
	if len(left) != 0 {
		t.Fatalf("Remaining(unknown) = %v after a refused grab, want no sale state", left)
	}
}

func testRemaining(t *testing.T, f *fixture) {
	a, b := f.sell(t, voucher(10, 2)), f.sell(t, voucher(5, 1))
	f.reserve(t, grab(a.ID, 1, 2, "o1"), nil, "")

	left, err := f.Stock.Remaining(f.ctx, a.ID, b.ID, unknown)
	if err != nil {
		t.Fatalf("Remaining: %v", err)
	}
	if want := map[domain.VoucherID]int{a.ID: 8, b.ID: 5}; !maps.Equal(left, want) {
		t.Fatalf("Remaining = %v, want %v (a voucher without sale state absent)", left, want)
	}
	for _, ids := range [][]domain.VoucherID{nil, {unknown}} {
		left, err := f.Stock.Remaining(f.ctx, ids...)
		if err != nil {
			t.Fatalf("Remaining(%v): %v", ids, err)
		}
		if len(left) != 0 {
			t.Fatalf("Remaining(%v) = %v, want an empty map", ids, left)
		}
	}
}

func testSetPaused(t *testing.T, f *fixture) {
	v := f.sell(t, voucher(10, 1))
	f.pause(t, v.ID, true)
	f.reserve(t, grab(v.ID, 1, 1, "o1"), domain.ErrPaused, "")
	f.wantRemaining(t, v.ID, 10)
	f.wantRecorded(t, v.ID)

	f.pause(t, v.ID, false)
	held := grab(v.ID, 1, 1, "o1-again")
	f.reserve(t, held, nil, "")
	f.pause(t, v.ID, true)
	f.reserve(t, grab(v.ID, 2, 1, "o2"), domain.ErrPaused, "")
	f.wantRemaining(t, v.ID, 9)
	f.pause(t, v.ID, false)
	f.reserve(t, grab(v.ID, 2, 1, "o2-again"), nil, "")
	f.wantRemaining(t, v.ID, 8)

	ok, err := f.Stock.SetPaused(f.ctx, unknown, true)
	if err != nil {
		t.Fatalf("SetPaused of a voucher without sale state: %v", err)
	}
	if ok {
		t.Fatal("SetPaused of a voucher without sale state = true, want false")
	}
	f.reserve(t, grab(unknown, 1, 1, "o9"), domain.ErrNotFound, "")
}

func testRelease(t *testing.T, f *fixture) {
	v := f.sell(t, voucher(5, 2))
	first, other := grab(v.ID, 1, 2, "o1"), grab(v.ID, 2, 1, "o2")
	f.reserve(t, first, nil, "")
	f.reserve(t, other, nil, "")
	f.wantRemaining(t, v.ID, 2)

	closed := f.close(t, first)
	f.release(t, closed, true)
	f.wantRemaining(t, v.ID, 4)
	// Applied twice it releases once.
	f.release(t, closed, f.releasedAgain())
	f.wantRemaining(t, v.ID, 4)
	f.reserve(t, grab(v.ID, 2, 1, "o2-again"), domain.ErrAlreadyPurchased, other.OrderID)

	// The user may grab again, and the new reservation takes the units again.
	again := grab(v.ID, 1, 2, "o1-again")
	f.reserve(t, again, nil, "")
	f.wantRemaining(t, v.ID, 2)

	// Nothing to release: a user holding nothing, a voucher without sale state.
	f.release(t, order(grab(v.ID, 7, 1, "o7"), domain.StatusCancelled), false)
	f.release(t, order(grab(unknown, 1, 1, "o1-unknown"), domain.StatusCancelled), false)
	f.wantRemaining(t, v.ID, 2)
}

func testReleaseAStaleOrder(t *testing.T, f *fixture) {
	v := f.sell(t, voucher(5, 1))
	first := grab(v.ID, 1, 1, "o1")
	f.reserve(t, first, nil, "")
	stale := f.close(t, first)
	f.release(t, stale, true)
	second := grab(v.ID, 1, 1, "o1-second")
	f.reserve(t, second, nil, "")
	f.wantRemaining(t, v.ID, 4)

	// A release of the user's former order releases nothing of the current one.
	f.release(t, stale, f.releasedAgain())
	f.wantRemaining(t, v.ID, 4)
	f.reserve(t, grab(v.ID, 1, 1, "o1-third"), domain.ErrAlreadyPurchased, second.OrderID)
}

func testReleaseQuantityBelowOne(t *testing.T, f *fixture) {
	v := f.sell(t, voucher(5, 1))
	r := grab(v.ID, 1, 1, "o1")
	f.reserve(t, r, nil, "")
	closed := f.close(t, r)
	left := 4
	if f.Orders != nil {
		left = 5 // closing gave the unit back
	}
	for _, qty := range []int{0, -3} {
		o := closed
		o.Quantity = qty
		if _, err := f.Stock.Release(f.ctx, o); !errors.Is(err, domain.ErrInvalid) {
			t.Fatalf("Release of quantity %d = %v, want %v", qty, err, domain.ErrInvalid)
		}
		f.wantRemaining(t, v.ID, left)
	}
	// The refusals left the reservation as it was.
	f.release(t, closed, true)
	f.wantRemaining(t, v.ID, 5)
}

func testReleaseOnceUnderConcurrency(t *testing.T, f *fixture) {
	v := f.sell(t, voucher(5, 2))
	r := grab(v.ID, 1, 2, "o1")
	other := grab(v.ID, 2, 1, "o2")
	f.reserve(t, r, nil, "")
	f.reserve(t, other, nil, "")
	closed := f.close(t, r)

	const releases = 50
	var released atomic.Int64
	start := make(chan struct{})
	var wg sync.WaitGroup
	for range releases {
		wg.Go(func() {
			<-start
			ok, err := f.Stock.Release(f.ctx, closed)
			if err != nil {
				t.Error(err)
			}
			if ok {
				released.Add(1)
			}
		})
	}
	close(start)
	wg.Wait()

	want := int64(1)
	if f.releasedAgain() {
		want = releases
	}
	if got := released.Load(); got != want {
		t.Fatalf("%d of %d concurrent releases reported releasing, want %d", got, releases, want)
	}
	f.wantRemaining(t, v.ID, 4)
	f.reserve(t, grab(v.ID, 2, 1, "o2-again"), domain.ErrAlreadyPurchased, other.OrderID)
}

func testConcurrentGrabsSellExactlyTheStock(t *testing.T, f *fixture) {
	// users grab one unit each at once, and the first repeats of them grab a second
	// time, under another order id. (A WATCH strategy gives up on most of a thousand
	// grabs at once, more on a busy machine; those are retried below.)
	const stock, users, repeats = 50, 950, 50
	v := f.sell(t, voucher(stock, 1))

	type answer struct {
		r   domain.Reservation
		err error
	}
	answers := make([]answer, users+repeats)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range answers {
		user := domain.UserID(i%users + 1)
		r := grab(v.ID, user, 1, fmt.Sprintf("o%d-%d", user, i))
		wg.Go(func() {
			<-start
			answers[i] = answer{r, f.Stock.Reserve(f.ctx, r)}
		})
	}
	close(start)
	wg.Wait()
	// A strategy that gives up under contention answers unavailable: retry. Its
	// clients do, one at a time here (no contention left), as a 503 asks; the retry
	// tells the truth. How many gave up depends on the machine's load, not on the
	// strategy's correctness, so the stock must sell out once they retried.
	unavailable := 0
	for i, a := range answers {
		if !f.UnavailableUnderContention || !errors.Is(a.err, domain.ErrUnavailable) {
			continue
		}
		unavailable++
		for try := 0; try < 100 && errors.Is(answers[i].err, domain.ErrUnavailable); try++ {
			answers[i].err = f.Stock.Reserve(f.ctx, a.r)
		}
	}

	holds := map[domain.UserID]domain.OrderID{}
	var reserved []domain.Reservation
	for _, a := range answers {
		var purchased *domain.AlreadyPurchasedError
		switch {
		case a.err == nil:
			if held, dup := holds[a.r.UserID]; dup {
				t.Fatalf("user %d reserved twice: %s and %s", a.r.UserID, held, a.r.OrderID)
			}
			holds[a.r.UserID] = a.r.OrderID
			reserved = append(reserved, a.r)
		case errors.Is(a.err, domain.ErrSoldOut), errors.As(a.err, &purchased):
		default:
			t.Fatalf("user %d: unexpected answer %v", a.r.UserID, a.err)
		}
	}
	if unavailable > 0 {
		t.Logf("%d of %d grabs gave up, unavailable under contention, and were retried", unavailable, len(answers))
	}
	if got, want := len(holds), stock; got != want {
		t.Fatalf("%d users reserved, want %d", got, want)
	}
	for _, a := range answers {
		var purchased *domain.AlreadyPurchasedError
		if errors.As(a.err, &purchased) {
			if got, want := purchased.OrderID, holds[a.r.UserID]; got != want {
				t.Fatalf("user %d told it holds %q, want %q", a.r.UserID, got, want)
			}
		}
	}
	f.wantRemaining(t, v.ID, 0)
	f.wantRecorded(t, v.ID, reserved...)

	// Exactly the users answered "reserved" hold a reservation: a grab refused or given
	// up took nothing.
	for user := domain.UserID(1); user <= users; user++ {
		again := grab(v.ID, user, 1, fmt.Sprintf("o%d-again", user))
		if held, ok := holds[user]; ok {
			f.reserve(t, again, domain.ErrAlreadyPurchased, held)
		} else {
			f.reserve(t, again, domain.ErrSoldOut, "")
		}
	}
}

// testGrabWithoutATimeIsJudgedByTheSaleClock: a grab that carries no time (as the grab
// path sends them) is judged by the sale's clock at the moment the stock judges it —
// here the host's, which Redis's TIME and every stock follow within a moment — and its
// reservation is stamped with that moment.
func testGrabWithoutATimeIsJudgedByTheSaleClock(t *testing.T, f *fixture) {
	now := time.Now()
	window := func(begins, ends time.Duration) domain.Voucher {
		v := voucher(5, 1)
		v.BeginsAt, v.EndsAt = now.Add(begins), now.Add(ends)
		return f.sell(t, v)
	}
	untimed := func(id domain.VoucherID, user domain.UserID) domain.Reservation {
		r := grab(id, user, 1, fmt.Sprintf("untimed-%d", user))
		r.At = time.Time{}
		return r
	}
	live := window(-time.Hour, time.Hour)
	before := time.Now()
	f.reserve(t, untimed(live.ID, 1), nil, "")
	after := time.Now()
	rec := f.Recorded(t, live.ID)
	// Generous bounds: the stock's clock and this host's may differ by the time a
	// busy machine takes to answer, never by minutes.
	if len(rec) != 1 || rec[0].At.Before(before.Add(-time.Minute)) || rec[0].At.After(after.Add(time.Minute)) {
		t.Fatalf("recorded %+v for a grab judged between %v and %v, want it stamped with the moment it was judged", rec, before, after)
	}
	ended := window(-time.Hour, -time.Minute)
	f.reserve(t, untimed(ended.ID, 2), domain.ErrEnded, "")
	upcoming := window(time.Hour, 2*time.Hour)
	f.reserve(t, untimed(upcoming.ID, 3), domain.ErrNotStarted, "")
}

// gated returns v sold with admission and challenge, and their settings as
// application.CreateVoucher gives them (a shuffled mode's seed among them).
func gated(v domain.Voucher, admission domain.Admission, challenge domain.ChallengeKind) domain.Voucher {
	v.Admission, v.Challenge = admission, challenge
	v.Title += fmt.Sprintf(", %s, %s", admission, challenge)
	v = v.WithAdmissionDefaults(v.BeginsAt.Add(-time.Hour))
	if admission.Shuffled() {
		v.Seed = domain.NewSeed()
	}
	return v
}

// issue makes user's pass of voucher id outstanding, expiring at expires, where the
// Stock knows the passes issued (Subject.IssuePass), and returns the expiry the grab
// carries.
func (f *fixture) issue(t *testing.T, id domain.VoucherID, user domain.UserID, expires time.Time) time.Time {
	t.Helper()
	if f.IssuePass != nil {
		f.IssuePass(t, domain.Pass{Voucher: id, User: user, Expires: expires})
	}
	return expires
}

// withPass returns r carrying a pass that expires at expires.
func withPass(r domain.Reservation, expires time.Time) domain.Reservation {
	r.Pass = expires
	return r
}

// proven returns r with a proof of work its caller verified.
func proven(r domain.Reservation) domain.Reservation {
	r.Proven = true
	return r
}

func testProofOfWorkGate(t *testing.T, f *fixture) {
	v := f.sell(t, gated(voucher(5, 1), domain.AdmissionFirstCome, domain.ChallengePow))
	// Without a proof: refused, nothing taken, nothing recorded.
	f.reserve(t, grab(v.ID, 1, 1, "o1"), domain.ErrChallengeRequired, "")
	f.wantRemaining(t, v.ID, 5)
	f.wantRecorded(t, v.ID)
	first := proven(grab(v.ID, 1, 1, "o1-proven"))
	f.reserve(t, first, nil, "")
	f.wantRemaining(t, v.ID, 4)
	f.wantRecorded(t, v.ID, first)

	// A sale without a challenge takes a grab with or without one.
	plain := f.sell(t, voucher(5, 1))
	f.reserve(t, grab(plain.ID, 1, 1, "o2"), nil, "")
	f.reserve(t, proven(grab(plain.ID, 2, 1, "o3")), nil, "")
	f.wantRemaining(t, plain.ID, 3)
}

// testDrawTakesNoGrabBeforeItsDraw: a draw voucher's units are not on first-come sale
// until its draw has been carried out (only the Redis stocks carry draws out: see
// redisstore's draw tests for the grabs after it).
func testDrawTakesNoGrabBeforeItsDraw(t *testing.T, f *fixture) {
	v := f.sell(t, gated(voucher(5, 1), domain.AdmissionDraw, domain.ChallengeNone))
	f.reserve(t, grab(v.ID, 1, 1, "o1"), domain.ErrNotStarted, "")
	f.wantRemaining(t, v.ID, 5)
	f.wantRecorded(t, v.ID)
}

func testWaitingRoomGate(t *testing.T, f *fixture) {
	v := f.sell(t, gated(voucher(5, 2), domain.AdmissionWaitingRoom, domain.ChallengeNone))
	// No pass: refused.
	f.reserve(t, grab(v.ID, 1, 1, "o1"), domain.ErrQueueRequired, "")
	// A pass expired at the grab's time, or at its very millisecond: refused, and not
	// used up.
	pass := f.issue(t, v.ID, 1, at0.Add(time.Minute))
	late := withPass(grab(v.ID, 1, 1, "o1-late"), pass)
	late.At = pass
	f.reserve(t, late, domain.ErrQueueRequired, "")
	late.At = pass.Add(time.Hour)
	f.reserve(t, late, domain.ErrQueueRequired, "")
	// A refusal by another rule leaves the pass outstanding: over the limit, then
	// paused.
	f.reserve(t, withPass(grab(v.ID, 1, 3, "o1-over"), pass), domain.ErrInvalid, "")
	f.pause(t, v.ID, true)
	f.reserve(t, withPass(grab(v.ID, 1, 1, "o1-paused"), pass), domain.ErrPaused, "")
	f.pause(t, v.ID, false)
	f.wantRemaining(t, v.ID, 5)
	f.wantRecorded(t, v.ID)

	// Valid up to its last millisecond.
	taken := withPass(grab(v.ID, 1, 2, "o1-taken"), pass)
	taken.At = pass.Add(-time.Millisecond)
	f.reserve(t, taken, nil, "")
	f.wantRemaining(t, v.ID, 3)
	f.wantRecorded(t, v.ID, taken)

	// A first-come sale takes a grab with a pass as one without (the pass is not the
	// sale's to use up).
	plain := f.sell(t, voucher(5, 1))
	f.reserve(t, withPass(grab(plain.ID, 1, 1, "o2"), at0.Add(time.Minute)), nil, "")
	f.wantRemaining(t, plain.ID, 4)
}

func testWaitingRoomPassIsUsedOnce(t *testing.T, f *fixture) {
	v := f.sell(t, gated(voucher(5, 1), domain.AdmissionWaitingRoom, domain.ChallengeNone))
	pass := f.issue(t, v.ID, 1, at0.Add(time.Minute))
	first := withPass(grab(v.ID, 1, 1, "o1"), pass)
	f.reserve(t, first, nil, "")
	// Replayed while its order is held: refused by the gate, before the order held.
	f.reserve(t, withPass(grab(v.ID, 1, 1, "o1-replay"), pass), domain.ErrQueueRequired, "")
	// Replayed once the order is closed and its units are back: still used.
	f.release(t, f.close(t, first), true)
	f.wantRemaining(t, v.ID, 5)
	f.reserve(t, withPass(grab(v.ID, 1, 1, "o1-again"), pass), domain.ErrQueueRequired, "")
	f.wantRemaining(t, v.ID, 5)
	f.wantRecorded(t, v.ID, first)

	// A new pass admits the user again, once.
	if f.IssuePass == nil {
		return // a new pass is told from the old one by its expiry alone
	}
	next := f.issue(t, v.ID, 1, at0.Add(2*time.Minute))
	// The old pass is not the outstanding one.
	f.reserve(t, withPass(grab(v.ID, 1, 1, "o1-old"), pass), domain.ErrQueueRequired, "")
	second := withPass(grab(v.ID, 1, 1, "o1-next"), next)
	f.reserve(t, second, nil, "")
	f.wantRemaining(t, v.ID, 4)
	f.wantRecorded(t, v.ID, first, second)
}

func testWaitingRoomPassOfAnother(t *testing.T, f *fixture) {
	if f.IssuePass == nil {
		t.Skip("the Stock cannot know which passes were issued (Subject.IssuePass): a pass's user and voucher are its signature's to prove, checked before the stock")
	}
	v := f.sell(t, gated(voucher(5, 1), domain.AdmissionWaitingRoom, domain.ChallengeNone))
	other := f.sell(t, gated(voucher(5, 1), domain.AdmissionWaitingRoom, domain.ChallengeNone))
	pass := f.issue(t, v.ID, 1, at0.Add(time.Minute))
	// User 2 with user 1's pass, user 1 with it on another voucher, user 1 with a
	// pass of another expiry: refused, and user 1's pass stays outstanding.
	f.reserve(t, withPass(grab(v.ID, 2, 1, "o2"), pass), domain.ErrQueueRequired, "")
	f.reserve(t, withPass(grab(other.ID, 1, 1, "o1-other"), pass), domain.ErrQueueRequired, "")
	f.reserve(t, withPass(grab(v.ID, 1, 1, "o1-forged"), pass.Add(time.Millisecond)), domain.ErrQueueRequired, "")
	f.wantRecorded(t, v.ID)
	f.wantRecorded(t, other.ID)
	mine := withPass(grab(v.ID, 1, 1, "o1"), pass)
	f.reserve(t, mine, nil, "")
	f.wantRemaining(t, v.ID, 4)
	f.wantRemaining(t, other.ID, 5)
	f.wantRecorded(t, v.ID, mine)
}

// testGatesComeFirst breaks the gates with the other rules: the challenge is judged
// first, then the waiting room's pass, then the rest (domain.Sale.Judge).
func testGatesComeFirst(t *testing.T, f *fixture) {
	v := f.sell(t, gated(voucher(1, 1), domain.AdmissionWaitingRoom, domain.ChallengePow))
	pass := f.issue(t, v.ID, 1, at0.Add(time.Minute))
	held := proven(withPass(grab(v.ID, 1, 1, "o1"), pass))
	f.reserve(t, held, nil, "")
	// Sold out, and user 1 holds the last unit.
	late := func(r domain.Reservation) domain.Reservation { r.At = at0.Add(2 * time.Hour); return r }
	other := f.issue(t, v.ID, 2, at0.Add(time.Minute))
	steps := []struct {
		name string
		r    domain.Reservation
		want error
	}{
		{"no proof, no pass, sold out", grab(v.ID, 2, 1, "o2"), domain.ErrChallengeRequired},
		{"no proof, a pass, sold out", withPass(grab(v.ID, 2, 1, "o2-pass"), other), domain.ErrChallengeRequired},
		{"no proof, used pass, held", withPass(grab(v.ID, 1, 1, "o1-again"), pass), domain.ErrChallengeRequired},
		{"proven, no pass, sold out", proven(grab(v.ID, 2, 1, "o2-proven")), domain.ErrQueueRequired},
		{"proven, used pass, held", proven(withPass(grab(v.ID, 1, 1, "o1-used"), pass)), domain.ErrQueueRequired},
		{"proven, no pass, ended", late(proven(grab(v.ID, 2, 1, "o2-late"))), domain.ErrQueueRequired},
		{"proven, a pass, sold out", proven(withPass(grab(v.ID, 2, 1, "o2-both"), other)), domain.ErrSoldOut},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) { f.reserve(t, s.r, s.want, "") })
	}
	f.pause(t, v.ID, true)
	f.reserve(t, proven(grab(v.ID, 2, 1, "o2-paused")), domain.ErrQueueRequired, "")
	f.reserve(t, grab(v.ID, 2, 1, "o2-paused-unproven"), domain.ErrChallengeRequired, "")
	f.wantRemaining(t, v.ID, 0)
	f.wantRecorded(t, v.ID, held)
}

// testWaitingRoomPassOnceUnderConcurrency: one user's grabs that carry the same pass,
// at once, take one order; the others are refused by the gate (the pass is used up
// with the reservation, in the same step) or find the order held.
func testWaitingRoomPassOnceUnderConcurrency(t *testing.T, f *fixture) {
	const grabs = 40
	v := f.sell(t, gated(voucher(50, 1), domain.AdmissionWaitingRoom, domain.ChallengeNone))
	pass := f.issue(t, v.ID, 7, at0.Add(time.Minute))
	errs := make([]error, grabs)
	rs := make([]domain.Reservation, grabs)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range grabs {
		rs[i] = withPass(grab(v.ID, 7, 1, fmt.Sprintf("o7-%d", i)), pass)
		wg.Go(func() {
			<-start
			errs[i] = f.Stock.Reserve(f.ctx, rs[i])
		})
	}
	close(start)
	wg.Wait()
	var reserved []domain.Reservation
	for i, err := range errs {
		for try := 0; try < 100 && f.UnavailableUnderContention && errors.Is(err, domain.ErrUnavailable); try++ {
			err = f.Stock.Reserve(f.ctx, rs[i])
		}
		switch {
		case err == nil:
			reserved = append(reserved, rs[i])
		case errors.Is(err, domain.ErrQueueRequired):
		default:
			t.Fatalf("grab %d: %v, want reserved or %v", i, err, domain.ErrQueueRequired)
		}
	}
	if len(reserved) != 1 {
		t.Fatalf("%d grabs with one pass reserved, want 1", len(reserved))
	}
	f.wantRemaining(t, v.ID, 49)
	f.wantRecorded(t, v.ID, reserved...)
}
