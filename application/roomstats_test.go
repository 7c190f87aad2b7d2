package application_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/seckill/seckill/application"
	"github.com/seckill/seckill/domain"
)

// TestGetQueueStatsFollowsTheRoom: an admin's figures of a waiting room follow its
// joins, its shuffle (the seed published only then) and its admissions, and the
// passes' expiry; a voucher sold otherwise and no voucher are refused.
func TestGetQueueStatsFollowsTheRoom(t *testing.T) {
	ctx := context.Background()
	f := newRoomFixture(t)
	stats := application.NewGetQueueStats(application.NewRoomSales(f.vouchers, nil), f.room, f.shuffles)
	join := application.NewJoinQueue(f.room, application.NewBuyerGate(f.vouchers, f.clock, application.GateOptions{}))
	read := func(when string) application.QueueStats {
		t.Helper()
		s, err := stats.Handle(ctx, f.v.ID)
		if err != nil {
			t.Fatalf("stats %s: %v", when, err)
		}
		if s.Window != f.v.QueueWindow || s.Commitment != f.v.Commitment() {
			t.Fatalf("stats %s: window %d, commitment %q; want %d, %q", when, s.Window, s.Commitment, f.v.QueueWindow, f.v.Commitment())
		}
		return s
	}
	if s := read("of an empty room"); s.Joined() != 0 || s.Shuffle != nil {
		t.Fatalf("stats of an empty room = %+v", s)
	}
	for u := domain.UserID(1); u <= 5; u++ {
		check(t, join.Handle(ctx, application.JoinQueueCmd{VoucherID: f.v.ID, UserID: u}))
	}
	check(t, join.Handle(ctx, application.JoinQueueCmd{VoucherID: f.v.ID, UserID: 2})) // again: the same place
	if s := read("before the start"); s.Early != 5 || s.Late != 0 || s.Waiting != 5 || s.Admitted != 0 || s.Shuffle != nil {
		t.Fatalf("stats before the start = %+v; want 5 early, all waiting, no seed", s)
	}

	f.clock.Set(f.start)
	check(t, f.admitter("a", application.RoomObserver{}).Handle(ctx))
	for _, u := range []domain.UserID{10, 11} {
		check(t, join.Handle(ctx, application.JoinQueueCmd{VoucherID: f.v.ID, UserID: u}))
	}
	s := read("once admitting")
	if s.Early != 5 || s.Late != 2 || s.Joined() != 7 || s.Admitted != 3 || s.Waiting != 4 || s.Outstanding != 3 {
		t.Fatalf("stats once admitting = %+v; want 5 early, 2 late, 3 let in with passes, 4 waiting", s)
	}
	if s.Shuffle == nil || s.Shuffle.Seed != f.v.Seed || s.Shuffle.Count != 5 || s.Shuffle.Entrants != nil {
		t.Fatalf("the published shuffle = %+v; want the seed, 5 entrants, no list", s.Shuffle)
	}
	f.clock.Set(f.start.Add(domain.PassLifetime + time.Millisecond))
	if s := read("once the passes expired"); s.Outstanding != 0 || s.Admitted != 3 {
		t.Fatalf("stats once the passes expired = %+v; want none outstanding, 3 let in", s)
	}

	plain := domain.Voucher{Title: "plain", Stock: 1, PerUserLimit: 1, BeginsAt: f.start, EndsAt: f.start.Add(time.Hour)}
	check(t, f.vouchers.Create(ctx, &plain, domain.Author{Actor: "1"}, nil))
	if _, err := stats.Handle(ctx, plain.ID); !errors.Is(err, domain.ErrNoWaitingRoom) {
		t.Errorf("the stats of a first-come voucher: %v, want ErrNoWaitingRoom", err)
	}
	if _, err := stats.Handle(ctx, 1000); !errors.Is(err, domain.ErrNotFound) {
		t.Errorf("the stats of no voucher: %v, want ErrNotFound", err)
	}
}
