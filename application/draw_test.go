package application_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/seckill/seckill/adapters/memory"
	"github.com/seckill/seckill/application"
	"github.com/seckill/seckill/domain"
)

// fakeDraws is a ports.Draws in memory whose pending draws are those the test sets.
type fakeDraws struct {
	draws   map[domain.VoucherID]domain.Draw
	pending []domain.Voucher
}

func (f *fakeDraws) Record(_ context.Context, d domain.Draw) (domain.Draw, error) {
	if got, ok := f.draws[d.Voucher]; ok {
		return got, nil
	}
	f.draws[d.Voucher] = d
	return d, nil
}

func (f *fakeDraws) Get(_ context.Context, id domain.VoucherID) (domain.Draw, error) {
	if d, ok := f.draws[id]; ok {
		return d, nil
	}
	return domain.Draw{}, domain.ErrNotFound
}

func (f *fakeDraws) Pending(context.Context, time.Time) ([]domain.Voucher, error) {
	return f.pending, nil
}

// fakeEntries is a ports.Entries in memory: the entrants of one voucher, the steps
// taken, the orders reserved (each user's, counted) and the backfill. Take fails once
// failAfter calls have succeeded (0: never), and checks the draw was recorded first.
type fakeEntries struct {
	t         *testing.T
	draws     *fakeDraws
	entrants  map[domain.UserID]bool
	closed    bool
	taken     int
	drawn     bool
	reserved  map[domain.UserID]int
	backfill  []domain.UserID
	calls     int
	failAfter int
}

func (f *fakeEntries) Enter(_ context.Context, _ domain.Voucher, u domain.UserID) (int, error) {
	if f.closed {
		return 0, domain.ErrEntriesClosed
	}
	f.entrants[u] = true
	return len(f.entrants), nil
}

func (f *fakeEntries) Count(context.Context, domain.VoucherID) (int, error) {
	return len(f.entrants), nil
}

func (f *fakeEntries) Close(context.Context, domain.Voucher) ([]domain.UserID, error) {
	f.closed = true
	var out []domain.UserID
	for u := range f.entrants {
		out = append(out, u)
	}
	return out, nil
}

func (f *fakeEntries) Progress(context.Context, domain.VoucherID) (int, bool, error) {
	return f.taken, f.drawn, nil
}

func (f *fakeEntries) Take(_ context.Context, id domain.VoucherID, from, total int, steps []domain.DrawStep, _ []domain.OrderID) (int, int, error) {
	if _, ok := f.draws.draws[id]; !ok {
		f.t.Error("a draw's steps taken before it was recorded")
	}
	if f.failAfter > 0 && f.calls == f.failAfter {
		return 0, 0, domain.ErrUnavailable
	}
	f.calls++
	if from != f.taken || f.drawn {
		return f.taken, 0, nil
	}
	n := 0
	for _, st := range steps {
		if st.Winner {
			f.reserved[st.User]++
			n++
		} else {
			f.backfill = append(f.backfill, st.User)
		}
	}
	f.taken = from + len(steps)
	f.drawn = f.taken >= total
	return f.taken, n, nil
}

// drawLeases is a ports.Leases in memory with one lease; clearing holder ends it.
type drawLeases struct {
	holder string
}

func (f *drawLeases) Acquire(_ context.Context, _, holder string, _ time.Duration) (string, bool, error) {
	if f.holder != "" && f.holder != holder {
		return "", false, nil
	}
	f.holder = holder
	return "", true, nil
}

func (f *drawLeases) Release(_ context.Context, _, holder string) error {
	if f.holder == holder {
		f.holder = ""
	}
	return nil
}

// drawFixture is a draw voucher of 5 units with 23 entrants, its sale begun.
func drawFixture(t *testing.T) (domain.Voucher, *fakeDraws, *fakeEntries, *memory.Vouchers) {
	vouchers := memory.NewVouchers()
	v := domain.Voucher{Title: "draw", Stock: 5, BeginsAt: t0, EndsAt: t0.Add(time.Hour), PerUserLimit: 1,
		Admission: domain.AdmissionDraw, Challenge: domain.ChallengeNone, EntriesOpenAt: t0.Add(-time.Hour), Seed: domain.Seed{9}}
	if err := vouchers.Create(context.Background(), &v, domain.Author{}, nil); err != nil {
		t.Fatal(err)
	}
	draws := &fakeDraws{draws: map[domain.VoucherID]domain.Draw{}, pending: []domain.Voucher{v}}
	entries := &fakeEntries{t: t, draws: draws, entrants: map[domain.UserID]bool{}, reserved: map[domain.UserID]int{}}
	for u := domain.UserID(1); u <= 23; u++ {
		entries.entrants[u*7] = true
	}
	return v, draws, entries, vouchers
}

// TestRunDrawsResumesOnAnotherInstance: an instance fails mid-draw holding the lease;
// another waits for the lease, then carries out the same recorded draw from where it
// stopped: each winner reserved once, the backfill in the shuffle's order.
func TestRunDrawsResumesOnAnotherInstance(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	v, draws, entries, _ := drawFixture(t)
	leases := &drawLeases{}
	clock := memory.NewClock(t0.Add(time.Second))
	var finished []int
	obs := application.DrawObserver{Drawn: func(entrants, winners int, _ time.Duration) { finished = append(finished, entrants, winners) }}
	a := application.NewRunDraws(draws, entries, leases, &memory.OrderIDs{}, clock, "a", application.DrawOptions{Batch: 4}, obs)
	b := application.NewRunDraws(draws, entries, leases, &memory.OrderIDs{}, clock, "b", application.DrawOptions{Batch: 4}, obs)

	entries.failAfter = 3
	if _, err := a.Handle(ctx); !errors.Is(err, domain.ErrUnavailable) {
		t.Fatalf("a's round: %v, want unavailable", err)
	}
	if entries.taken != 12 || entries.drawn {
		t.Fatalf("steps taken = %d (drawn %v), want 12", entries.taken, entries.drawn)
	}
	entries.failAfter = 0
	if n, err := b.Handle(ctx); err != nil || n != 0 || entries.taken != 12 {
		t.Fatalf("b's round while a holds the lease = %d, %v (taken %d); want nothing", n, err, entries.taken)
	}
	leases.holder = "" // a's lease ran out
	if n, err := b.Handle(ctx); err != nil || n != 1 {
		t.Fatalf("b's round = %d, %v; want the draw finished", n, err)
	}
	d := draws.draws[v.ID]
	order := domain.Shuffle(v.Seed, d.Entrants)
	for _, u := range order[:5] {
		if entries.reserved[u] != 1 {
			t.Fatalf("winner %d reserved %d times, want once", u, entries.reserved[u])
		}
	}
	if len(entries.reserved) != 5 || !slices.Equal(entries.backfill, order[5:]) {
		t.Fatalf("reserved %v, backfill %v; want the first 5 of %v, then the rest", entries.reserved, entries.backfill, order)
	}
	if !slices.Equal(finished, []int{23, 5}) || leases.holder != "" {
		t.Fatalf("observed %v, lease held by %q; want one draw of 23 entrants and 5 winners, the lease given up", finished, leases.holder)
	}
	if n, err := a.Handle(ctx); err != nil || n != 0 {
		t.Fatalf("a round after the draw = %d, %v; want nothing", n, err)
	}
}

// TestEnterAndReadADraw: entries of a draw voucher, refusals of a denied user and of
// a first-come voucher, and the draw's record before and after it ran.
func TestEnterAndReadADraw(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	v, draws, entries, vouchers := drawFixture(t)
	deny := memory.NewDenyList()
	local := application.NewDeniedUsers(deny)
	enter := application.NewEnterDraw(entries, application.NewBuyerGate(vouchers, memory.NewClock(t0), application.GateOptions{Denied: local}))
	if n, err := enter.Handle(ctx, application.EnterDrawCmd{VoucherID: v.ID, UserID: 1000}); err != nil || n != 24 {
		t.Fatalf("enter = %d, %v; want 24 entrants", n, err)
	}
	if _, err := application.NewDenyUser(deny, deny, local, nil).Handle(ctx, application.DenyUserCmd{Denial: domain.Denial{User: 1001}}); err != nil {
		t.Fatal(err)
	}
	if _, err := enter.Handle(ctx, application.EnterDrawCmd{VoucherID: v.ID, UserID: 1001}); !errors.Is(err, domain.ErrDenied) {
		t.Fatalf("enter of a denied user: %v", err)
	}
	plain := domain.Voucher{Title: "plain", Stock: 1, BeginsAt: t0, EndsAt: t0.Add(time.Hour), PerUserLimit: 1}
	if err := vouchers.Create(ctx, &plain, domain.Author{}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := enter.Handle(ctx, application.EnterDrawCmd{VoucherID: plain.ID, UserID: 1000}); !errors.Is(err, domain.ErrNotDraw) {
		t.Fatalf("enter a first-come voucher: %v, want not a draw", err)
	}
	get := application.NewGetDraw(draws, entries, vouchers)
	st, err := get.Handle(ctx, v.ID)
	if err != nil || st.Draw != nil || st.Entrants != 24 || st.Commitment != v.Commitment() {
		t.Fatalf("before the draw: %+v, %v", st, err)
	}
	run := application.NewRunDraws(draws, entries, &drawLeases{}, &memory.OrderIDs{}, memory.NewClock(t0), "a", application.DrawOptions{}, application.DrawObserver{})
	if _, err := run.Handle(ctx); err != nil {
		t.Fatal(err)
	}
	st, err = get.Handle(ctx, v.ID)
	if err != nil || st.Draw == nil || st.Entrants != 24 || !slices.Equal(st.Winners, st.Draw.Order()[:5]) {
		t.Fatalf("after the draw: %+v, %v", st, err)
	}
	if _, err := enter.Handle(ctx, application.EnterDrawCmd{VoucherID: v.ID, UserID: 1002}); !errors.Is(err, domain.ErrEntriesClosed) {
		t.Fatalf("enter after the draw: %v, want entries closed", err)
	}
	if _, err := get.Handle(ctx, plain.ID); !errors.Is(err, domain.ErrNotDraw) {
		t.Fatalf("the draw of a first-come voucher: %v, want not a draw", err)
	}
}
