package application_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/seckill/seckill/adapters/memory"
	"github.com/seckill/seckill/application"
	"github.com/seckill/seckill/domain"
)

// TestBuyerGateJudgesEachDoorInOrder pins the order of the gate's refusals at every
// door that reads the voucher: the command, the deny list, the voucher, its admission
// and window, then the proof, which asks the verifier only when nothing cheaper
// refused.
func TestBuyerGateJudgesEachDoorInOrder(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	vouchers := memory.NewVouchers()
	start := t0.Add(time.Hour)
	create := func(v domain.Voucher) domain.VoucherID {
		v.Title, v.Stock, v.PerUserLimit, v.BeginsAt, v.EndsAt = "v", 5, 1, start, start.Add(time.Hour)
		if err := vouchers.Create(ctx, &v, domain.Author{Actor: "1"}, nil); err != nil {
			t.Fatal(err)
		}
		return v.ID
	}
	room := create(domain.Voucher{Admission: domain.AdmissionWaitingRoom, QueueOpensAt: t0, QueueWindow: 3, Challenge: domain.ChallengePow})
	draw := create(domain.Voucher{Admission: domain.AdmissionDraw, EntriesOpenAt: t0, Challenge: domain.ChallengePow})
	plain := create(domain.Voucher{Challenge: domain.ChallengePow})
	list := memory.NewDenyList()
	if _, err := list.Deny(ctx, domain.Denial{User: 9}, domain.Author{Actor: "1"}, nil); err != nil {
		t.Fatal(err)
	}
	denied := application.NewDeniedUsers(list)
	check(t, denied.Reload(ctx))
	tests := []struct {
		name string
		cmd  application.BuyerCommand
		want error
		// verified: the proof reached the verifier.
		verified bool
	}{
		{"no voucher id", application.BuyerCommand{Door: application.DoorQueue, UserID: 9}, &domain.ValidationError{}, false},
		{"no user", application.BuyerCommand{Door: application.DoorDraw, VoucherID: draw}, &domain.ValidationError{}, false},
		{"a grab of no unit", application.BuyerCommand{Door: application.DoorGrab, VoucherID: plain, UserID: 9}, &domain.ValidationError{}, false},
		{"denied before the voucher is read", application.BuyerCommand{Door: application.DoorWaitlist, VoucherID: 1000, UserID: 9}, domain.ErrDenied, false},
		{"no such voucher", application.BuyerCommand{Door: application.DoorDraw, VoucherID: 1000, UserID: 1, Proof: "good"}, domain.ErrNotFound, false},
		{"the queue of a first-come voucher", application.BuyerCommand{Door: application.DoorQueue, VoucherID: plain, UserID: 1, Proof: "good"}, domain.ErrNoWaitingRoom, false},
		{"the draw of a waiting room", application.BuyerCommand{Door: application.DoorDraw, VoucherID: room, UserID: 1, Proof: "good"}, domain.ErrNotDraw, false},
		{"the waitlist of a draw", application.BuyerCommand{Door: application.DoorWaitlist, VoucherID: draw, UserID: 1}, domain.ErrWaitlistUnsupported, false},
		{"a queue join without a proof", application.BuyerCommand{Door: application.DoorQueue, VoucherID: room, UserID: 1}, domain.ErrChallengeRequired, false},
		{"a queue join with a wrong proof", application.BuyerCommand{Door: application.DoorQueue, VoucherID: room, UserID: 1, Proof: "bad"}, domain.ErrChallengeRequired, true},
		{"a queue join with a proof", application.BuyerCommand{Door: application.DoorQueue, VoucherID: room, UserID: 1, Proof: "good"}, nil, true},
		{"a draw entry without a proof", application.BuyerCommand{Door: application.DoorDraw, VoucherID: draw, UserID: 1}, domain.ErrChallengeRequired, false},
		{"a draw entry with a proof", application.BuyerCommand{Door: application.DoorDraw, VoucherID: draw, UserID: 1, Proof: "good"}, nil, true},
		{"a waitlist join asks no proof", application.BuyerCommand{Door: application.DoorWaitlist, VoucherID: plain, UserID: 1}, nil, false},
		{"a grab's proof is left to the stock when missing", application.BuyerCommand{Door: application.DoorGrab, VoucherID: plain, UserID: 1, Quantity: 1}, nil, false},
		{"a grab's proof carried is verified", application.BuyerCommand{Door: application.DoorGrab, VoucherID: plain, UserID: 1, Quantity: 1, Proof: "bad"}, domain.ErrChallengeRequired, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := &proofs{}
			gate := application.NewBuyerGate(vouchers, memory.NewClock(t0.Add(time.Minute)), application.GateOptions{Denied: denied, Proofs: p})
			b, err := gate.Check(ctx, tc.cmd)
			var invalid *domain.ValidationError
			switch {
			case errors.As(tc.want, &invalid):
				if !errors.As(err, &invalid) {
					t.Fatalf("check = %v, want a validation error", err)
				}
			case !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil):
				t.Fatalf("check = %v, want %v", err, tc.want)
			}
			if verified := p.calls.Load() > 0; verified != tc.verified {
				t.Fatalf("the proof reached the verifier: %v, want %v", verified, tc.verified)
			}
			if err == nil && b.Proven != tc.verified {
				t.Fatalf("proven = %v, want %v", b.Proven, tc.verified)
			}
		})
	}
}

// TestBuyerGateQueueWindow: a waiting room is joined from its queue_opens_at until its
// sale ends.
func TestBuyerGateQueueWindow(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newRoomFixture(t)
	gate := application.NewBuyerGate(f.vouchers, f.clock, application.GateOptions{})
	for _, c := range []struct {
		at   time.Time
		want error
	}{
		{f.v.QueueOpensAt.Add(-time.Millisecond), domain.ErrNotStarted},
		{f.v.QueueOpensAt, nil},
		{f.v.EndsAt.Add(-time.Millisecond), nil},
		{f.v.EndsAt, domain.ErrEnded},
	} {
		f.clock.Set(c.at)
		if _, err := gate.Check(ctx, application.BuyerCommand{Door: application.DoorQueue, VoucherID: f.v.ID, UserID: 1}); !errors.Is(err, c.want) || (c.want == nil) != (err == nil) {
			t.Errorf("at %s: %v, want %v", c.at, err, c.want)
		}
	}
}
