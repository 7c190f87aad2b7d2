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

// drawFixture is a draw voucher of 5 units with 23 entrants, its sale begun.
func drawFixture(t *testing.T) (domain.Voucher, *memory.Draws, *memory.Entries, *memory.Vouchers) {
	vouchers := memory.NewVouchers()
	v := domain.Voucher{Title: "draw", Stock: 5, BeginsAt: t0, EndsAt: t0.Add(time.Hour), PerUserLimit: 1,
		Admission: domain.AdmissionDraw, Challenge: domain.ChallengeNone, EntriesOpenAt: t0.Add(-time.Hour), Seed: domain.Seed{9}}
	if err := vouchers.Create(context.Background(), &v, domain.Author{}, nil); err != nil {
		t.Fatal(err)
	}
	draws := memory.NewDraws(v)
	entries := memory.NewEntries(draws)
	for u := domain.UserID(1); u <= 23; u++ {
		entries.Entrants[u*7] = true
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
	clock := memory.NewClock(t0.Add(time.Second))
	leases := memory.NewLeases(clock)
	var finished []int
	obs := application.DrawObserver{Drawn: func(entrants, winners int, _ time.Duration) { finished = append(finished, entrants, winners) }}
	a := application.NewRunDraws(draws, entries, leases, &memory.OrderIDs{}, clock, "a", application.DrawOptions{Batch: 4}, obs)
	b := application.NewRunDraws(draws, entries, leases, &memory.OrderIDs{}, clock, "b", application.DrawOptions{Batch: 4}, obs)

	entries.FailAfter = 3
	if _, err := a.Handle(ctx); !errors.Is(err, domain.ErrUnavailable) {
		t.Fatalf("a's round: %v, want unavailable", err)
	}
	if entries.Taken != 12 || entries.Drawn {
		t.Fatalf("steps taken = %d (drawn %v), want 12", entries.Taken, entries.Drawn)
	}
	entries.FailAfter = 0
	if n, err := b.Handle(ctx); err != nil || n != 0 || entries.Taken != 12 {
		t.Fatalf("b's round while a holds the lease = %d, %v (taken %d); want nothing", n, err, entries.Taken)
	}
	leases.Expire("draws") // a's lease ran out
	if n, err := b.Handle(ctx); err != nil || n != 1 {
		t.Fatalf("b's round = %d, %v; want the draw finished", n, err)
	}
	d, err := draws.Get(ctx, v.ID)
	check(t, err)
	order := domain.Shuffle(v.Seed, d.Entrants)
	for _, u := range order[:5] {
		if entries.Reserved[u] != 1 {
			t.Fatalf("winner %d reserved %d times, want once", u, entries.Reserved[u])
		}
	}
	if len(entries.Reserved) != 5 || !slices.Equal(entries.Backfill, order[5:]) {
		t.Fatalf("reserved %v, backfill %v; want the first 5 of %v, then the rest", entries.Reserved, entries.Backfill, order)
	}
	if !slices.Equal(finished, []int{23, 5}) || leases.Holder("draws") != "" {
		t.Fatalf("observed %v, lease held by %q; want one draw of 23 entrants and 5 winners, the lease given up", finished, leases.Holder("draws"))
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
	run := application.NewRunDraws(draws, entries, memory.NewLeases(memory.NewClock(t0)), &memory.OrderIDs{}, memory.NewClock(t0), "a", application.DrawOptions{}, application.DrawObserver{})
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
