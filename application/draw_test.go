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
	v, draws, entries, vouchers := drawFixture(t)
	clock := memory.NewClock(t0.Add(time.Second))
	leases := memory.NewLeases(clock)
	var finished []int
	obs := application.DrawObserver{Drawn: func(entrants, winners int, _ time.Duration) { finished = append(finished, entrants, winners) }}
	rooms := application.NewRoomSales(vouchers, nil)
	a := application.NewRunDraws(draws, entries, leases, &memory.OrderIDs{}, clock, rooms, "a", application.DrawOptions{Batch: 4}, obs)
	b := application.NewRunDraws(draws, entries, leases, &memory.OrderIDs{}, clock, rooms, "b", application.DrawOptions{Batch: 4}, obs)

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
	rooms := application.NewRoomSales(vouchers, nil)
	get := application.NewGetDraw(draws, entries, rooms)
	st, err := get.Handle(ctx, v.ID)
	if err != nil || st.Draw != nil || st.Entrants != 24 || st.Commitment != v.Commitment() {
		t.Fatalf("before the draw: %+v, %v", st, err)
	}
	run := application.NewRunDraws(draws, entries, memory.NewLeases(memory.NewClock(t0)), &memory.OrderIDs{}, memory.NewClock(t0), rooms, "a", application.DrawOptions{}, application.DrawObserver{})
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

// TestRunDrawsWalksADrop: a campaign's draw — entries naming a voucher of the drop,
// the latest choice standing — walks the shuffle giving each entrant its choice while
// that voucher and the cap have units: the winners are those a walk recomputed here
// from the seed, the entrants and their choices finds, each reserved once on the
// voucher it chose, and everyone else joins the backfill of its choice.
func TestRunDrawsWalksADrop(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	vouchers := memory.NewVouchers()
	campaigns := memory.NewCampaigns(vouchers)
	limit := 6
	c := domain.Campaign{Title: "drop", BeginsAt: t0, EndsAt: t0.Add(time.Hour), PerUserLimit: 1, Cap: &limit,
		Admission: domain.AdmissionDraw, EntriesOpenAt: t0.Add(-time.Hour)}.WithAdmissionDefaults(t0.Add(-2 * time.Hour))
	check(t, campaigns.Create(ctx, &c, domain.Author{Actor: "1"}, nil))
	var sizes []domain.VoucherID
	for _, stock := range []int{4, 1, 4} {
		v := domain.Voucher{Title: "size", Stock: stock, CampaignID: c.ID}
		check(t, vouchers.Create(ctx, &v, domain.Author{Actor: "1"}, nil))
		sizes = append(sizes, v.ID)
	}
	c, err := campaigns.Get(ctx, c.ID)
	check(t, err)
	draws := memory.NewDraws(c.Room())
	entries := memory.NewEntries(draws)
	clock := memory.NewClock(t0.Add(-time.Minute))
	rooms := application.NewRoomSales(vouchers, campaigns)
	enter := application.NewEnterDraw(entries, application.NewBuyerGate(vouchers, clock, application.GateOptions{Rooms: rooms}))
	chose := map[domain.UserID]domain.VoucherID{}
	for u := domain.UserID(1); u <= 30; u++ {
		first, last := sizes[int(u)%2], sizes[int(u)%3]
		for _, choice := range []domain.VoucherID{first, last} {
			if _, err := enter.Handle(ctx, application.EnterDrawCmd{VoucherID: c.ID.Room(), UserID: u * 11, Choice: choice}); err != nil {
				t.Fatalf("enter %d choosing %s: %v", u*11, choice, err)
			}
		}
		chose[u*11] = last
	}
	var invalid *domain.ValidationError
	for _, choice := range []domain.VoucherID{0, (c.ID + 1).Variant(1), c.ID.Variant(4)} {
		if _, err := enter.Handle(ctx, application.EnterDrawCmd{VoucherID: c.ID.Room(), UserID: 99, Choice: choice}); !errors.As(err, &invalid) || invalid.Field != "voucher_id" {
			t.Fatalf("an entry choosing %s: %v, want voucher_id invalid", choice, err)
		}
	}
	if _, err := enter.Handle(ctx, application.EnterDrawCmd{VoucherID: sizes[0], UserID: 99}); !errors.Is(err, domain.ErrNotDraw) {
		t.Fatalf("an entry in a drop's voucher's own draw: %v, want %v", err, domain.ErrNotDraw)
	}

	clock.Set(t0.Add(time.Second))
	run := application.NewRunDraws(draws, entries, memory.NewLeases(clock), &memory.OrderIDs{}, clock, rooms, "a",
		application.DrawOptions{Batch: 2}, application.DrawObserver{})
	if n, err := run.Handle(ctx); err != nil || n != 1 {
		t.Fatalf("run = %d, %v; want the drop drawn", n, err)
	}
	st, err := application.NewGetDraw(draws, entries, rooms).Handle(ctx, c.ID.Room())
	check(t, err)

	// The walk, recomputed from what the draw publishes.
	units := map[domain.VoucherID]int{sizes[0]: 4, sizes[1]: 1, sizes[2]: 4}
	capLeft := limit
	var want []domain.UserID
	for _, u := range domain.Shuffle(st.Draw.Seed, st.Draw.Entrants) {
		if capLeft > 0 && units[chose[u]] > 0 {
			units[chose[u]]--
			capLeft--
			want = append(want, u)
		}
	}
	if !slices.Equal(st.Winners, want) || len(want) != limit {
		t.Fatalf("winners %v, want %v", st.Winners, want)
	}
	for _, u := range want {
		if entries.Reserved[u] != 1 {
			t.Fatalf("winner %d reserved %d times", u, entries.Reserved[u])
		}
	}
	if len(entries.Reserved) != limit || len(entries.Backfill) != 30-limit {
		t.Fatalf("reserved %v, backfill %v", entries.Reserved, entries.Backfill)
	}
	for i, u := range st.Draw.Entrants {
		if st.Draw.Drop.Choices[i] != chose[u] {
			t.Fatalf("entrant %d's choice %s, want its latest %s", u, st.Draw.Drop.Choices[i], chose[u])
		}
	}
	if st.Draw.Digest != domain.DropEntrantsDigest(st.Draw.Entrants, st.Draw.Drop.Choices) {
		t.Fatal("the digest is not over the entrants' lines")
	}
	for _, id := range sizes {
		if _, drawn, err := entries.Progress(ctx, id); err != nil || !drawn {
			t.Fatalf("voucher %s's part: drawn %v, %v", id, drawn, err)
		}
	}
}
