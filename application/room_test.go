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

// roomFixture is a waiting-room voucher that begins at start, with its stores.
type roomFixture struct {
	clock    *memory.Clock
	vouchers *memory.Vouchers
	room     *memory.WaitingRoom
	shuffles *memory.Shuffles
	leases   *memory.Leases
	v        domain.Voucher
	start    time.Time
}

func newRoomFixture(t *testing.T) *roomFixture {
	t.Helper()
	start := time.Date(2026, 12, 6, 10, 0, 0, 0, time.UTC)
	clock := memory.NewClock(start.Add(-5 * time.Minute))
	f := &roomFixture{clock: clock, vouchers: memory.NewVouchers(), room: memory.NewWaitingRoom(clock), shuffles: memory.NewShuffles(),
		leases: memory.NewLeases(clock), start: start}
	f.v = domain.Voucher{Title: "room", Stock: 10, PerUserLimit: 1, BeginsAt: start, EndsAt: start.Add(time.Hour),
		Admission: domain.AdmissionWaitingRoom, QueueOpensAt: start.Add(-10 * time.Minute), QueueWindow: 3,
		Seed: domain.Seed([]byte("0123456789abcdef0123456789abcdef"))}
	if err := f.vouchers.Create(context.Background(), &f.v, domain.Author{Actor: "1"}, nil); err != nil {
		t.Fatal(err)
	}
	return f
}

func (f *roomFixture) admitter(holder string, obs application.RoomObserver) *application.AdmitQueues {
	return application.NewAdmitQueues(application.NewRoomSales(f.vouchers, nil), f.room, f.shuffles, f.leases, f.clock, application.RoomOptions{Holder: holder}, obs)
}

func TestAdmitQueuesShufflesOnceSavedBeforeInstalledThenAdmitsWithinTheWindow(t *testing.T) {
	ctx := context.Background()
	f := newRoomFixture(t)
	join := application.NewJoinQueue(f.room, application.NewBuyerGate(f.vouchers, f.clock, application.GateOptions{}))
	for u := domain.UserID(1); u <= 20; u++ {
		if err := join.Handle(ctx, application.JoinQueueCmd{VoucherID: f.v.ID, UserID: u}); err != nil {
			t.Fatal(err)
		}
	}
	savedFirst := false
	obs := application.RoomObserver{Saved: func(domain.VoucherID, int) {
		_, err := f.shuffles.Get(ctx, f.v.ID, false)
		installed, _ := f.room.Installed(ctx, f.v.ID)
		savedFirst = err == nil && !installed
	}}
	a, b := f.admitter("a", obs), f.admitter("b", obs)
	check(t, a.Handle(ctx))
	if f.room.Closes != 0 {
		t.Fatal("the room was shuffled before the start")
	}
	entrants := application.NewQueueEntrants(application.NewRoomSales(f.vouchers, nil), f.shuffles)
	if _, err := entrants.Handle(ctx, f.v.ID); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("the entrants before the shuffle: %v, want ErrNotFound", err)
	}
	f.clock.Set(f.start)
	// The first instance's install fails: the shuffle is saved, the room not open.
	f.room.FailInstalls = 1
	if err := a.Handle(ctx); !errors.Is(err, domain.ErrUnavailable) {
		t.Fatalf("Handle with a failing install: %v", err)
	}
	sh, err := f.shuffles.Get(ctx, f.v.ID, true)
	check(t, err)
	want := domain.SortEntrants([]domain.UserID{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20})
	if !slices.Equal(sh.Entrants, want) || sh.Digest != domain.EntrantsDigest(want) || sh.Seed != f.v.Seed {
		t.Fatalf("saved shuffle = %+v", sh)
	}
	// Another instance takes over (the lease was let go): the saved shuffle is
	// installed, the room not read again.
	if _, err := f.room.Join(ctx, f.v, 99); err != nil {
		t.Fatal(err)
	}
	check(t, b.Handle(ctx))
	if !savedFirst || f.room.Closes != 1 {
		t.Fatalf("saved before installed: %v; closes %d, want 1", savedFirst, f.room.Closes)
	}
	if got, err := entrants.Handle(ctx, f.v.ID); err != nil || !slices.Equal(got.Entrants, want) {
		t.Fatalf("the entrants published = %v, %v; want %v", got.Entrants, err, want)
	}
	order := domain.Shuffle(f.v.Seed, want)
	if !slices.Equal(f.room.Order, order) {
		t.Fatalf("installed %v, want %v", f.room.Order, order)
	}
	if f.room.Admitted != 3 {
		t.Fatalf("admitted %d, want the window, 3", f.room.Admitted)
	}

	status := application.NewQueueStatus(application.NewRoomSales(f.vouchers, nil), f.room, f.shuffles, f.clock, application.PassKey("k"))
	first, err := status.Handle(ctx, f.v.ID, order[0])
	check(t, err)
	if first.Position != 1 || !first.Admitted || first.Pass == "" || first.Shuffle == nil || first.Shuffle.Count != 20 {
		t.Fatalf("first in line = %+v", first)
	}
	if _, err := domain.VerifyPass([]byte("k"), first.Pass, f.v.ID, order[0], f.clock.Now()); err != nil {
		t.Fatalf("the pass does not verify: %v", err)
	}
	last, err := status.Handle(ctx, f.v.ID, 99)
	check(t, err)
	if last.Position != 21 || last.Admitted || last.Ahead != 17 || !last.WaitKnown || last.Wait != 9*time.Second || last.Pass != "" {
		t.Fatalf("the late joiner = %+v; want position 21, 17 ahead, 9 s", last)
	}
	if _, err := status.Handle(ctx, f.v.ID, 1000); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("a user who never joined: %v", err)
	}
}

func TestJoinQueueRefusesWhatTheContractRefuses(t *testing.T) {
	ctx := context.Background()
	f := newRoomFixture(t)
	list := memory.NewDenyList()
	if _, err := list.Deny(ctx, domain.Denial{User: 7}, domain.Author{Actor: "1"}, nil); err != nil {
		t.Fatal(err)
	}
	denied := application.NewDeniedUsers(list)
	check(t, denied.Reload(ctx))
	join := application.NewJoinQueue(f.room, application.NewBuyerGate(f.vouchers, f.clock, application.GateOptions{Denied: denied}))
	plain := domain.Voucher{Title: "plain", Stock: 1, PerUserLimit: 1, BeginsAt: f.start, EndsAt: f.start.Add(time.Hour)}
	check(t, f.vouchers.Create(ctx, &plain, domain.Author{Actor: "1"}, nil))
	for _, c := range []struct {
		name string
		at   time.Time
		v    domain.VoucherID
		user domain.UserID
		want error
	}{
		{"denied", f.start, f.v.ID, 7, domain.ErrDenied},
		{"first come", f.start, plain.ID, 1, domain.ErrNoWaitingRoom},
		{"no such voucher", f.start, 1000, 1, domain.ErrNotFound},
		{"before the queue opens", f.v.QueueOpensAt.Add(-time.Millisecond), f.v.ID, 1, domain.ErrNotStarted},
		{"ended", f.v.EndsAt, f.v.ID, 1, domain.ErrEnded},
		{"open", f.v.QueueOpensAt, f.v.ID, 1, nil},
	} {
		f.clock.Set(c.at)
		if err := join.Handle(ctx, application.JoinQueueCmd{VoucherID: c.v, UserID: c.user}); !errors.Is(err, c.want) || (c.want == nil) != (err == nil) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
	}
	entrants := application.NewQueueEntrants(application.NewRoomSales(f.vouchers, nil), f.shuffles)
	if _, err := entrants.Handle(ctx, plain.ID); !errors.Is(err, domain.ErrNoWaitingRoom) {
		t.Errorf("the entrants of a first-come voucher: %v, want ErrNoWaitingRoom", err)
	}
	if _, err := entrants.Handle(ctx, 1000); !errors.Is(err, domain.ErrNotFound) {
		t.Errorf("the entrants of no voucher: %v, want ErrNotFound", err)
	}
}

// check stops the test on an unexpected error.
func check(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestRoomSalesReadsACampaignsOneRoom: a campaign sold through a waiting room is one
// room, under its room id, with the campaign's settings: the active rooms list it
// once beside a voucher's own, its vouchers have none of their own (a join of one is
// refused), and its room is joined through the gate; without the campaigns, its room
// id is not found.
func TestRoomSalesReadsACampaignsOneRoom(t *testing.T) {
	ctx := context.Background()
	f := newRoomFixture(t)
	campaigns := memory.NewCampaigns(f.vouchers)
	c := domain.Campaign{Title: "drop", BeginsAt: f.start, EndsAt: f.start.Add(time.Hour), PerUserLimit: 1,
		Admission: domain.AdmissionWaitingRoom}.WithAdmissionDefaults(f.clock.Now())
	if err := campaigns.Create(ctx, &c, domain.Author{Actor: "1"}, nil); err != nil {
		t.Fatal(err)
	}
	var sizes []domain.Voucher
	for range 2 {
		v := domain.Voucher{Title: "size", Stock: 5, CampaignID: c.ID}
		if err := f.vouchers.Create(ctx, &v, domain.Author{Actor: "1"}, nil); err != nil {
			t.Fatal(err)
		}
		sizes = append(sizes, v)
	}
	rooms := application.NewRoomSales(f.vouchers, campaigns)
	active, err := rooms.Active(ctx, f.start.Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]domain.VoucherID, len(active))
	for i, v := range active {
		ids[i] = v.ID
	}
	if !slices.Equal(ids, []domain.VoucherID{f.v.ID, c.ID.Room()}) && !slices.Equal(ids, []domain.VoucherID{c.ID.Room(), f.v.ID}) {
		t.Fatalf("active rooms %v, want the voucher's %s and the campaign's %s once", ids, f.v.ID, c.ID.Room())
	}
	room, err := rooms.Get(ctx, c.ID.Room())
	if err != nil || room.Seed != c.Seed || room.QueueWindow != c.QueueWindow || !room.OwnRoom() {
		t.Fatalf("the campaign's room: %+v, %v", room, err)
	}
	gate := application.NewBuyerGate(f.vouchers, f.clock, application.GateOptions{Rooms: rooms})
	join := application.NewJoinQueue(f.room, gate)
	if err := join.Handle(ctx, application.JoinQueueCmd{VoucherID: sizes[0].ID, UserID: 7}); !errors.Is(err, domain.ErrNoWaitingRoom) {
		t.Fatalf("join of a campaign's voucher's own room: %v, want %v", err, domain.ErrNoWaitingRoom)
	}
	if err := join.Handle(ctx, application.JoinQueueCmd{VoucherID: c.ID.Room(), UserID: 7}); err != nil {
		t.Fatalf("join of the campaign's room: %v", err)
	}
	if _, err := application.NewRoomSales(f.vouchers, nil).Get(ctx, c.ID.Room()); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("a campaign's room without the campaigns: %v, want not found", err)
	}
}
