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

// A challenge asks for the voucher's pow_difficulty raised by the load, at most 32
// bits; a voucher without a challenge, or none at all, has none to give.
func TestIssueChallengeAsksTheVouchersDifficultyRaised(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	vouchers := memory.NewVouchers()
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	store := func(v domain.Voucher) domain.VoucherID {
		v.Title, v.Stock, v.PerUserLimit, v.BeginsAt, v.EndsAt = "x", 5, 1, now, now.Add(time.Hour)
		if err := vouchers.Create(ctx, &v, domain.Author{}, nil); err != nil {
			t.Fatal(err)
		}
		return v.ID
	}
	pow := store(domain.Voucher{Challenge: domain.ChallengePow, PowDifficulty: 18})
	hard := store(domain.Voucher{Challenge: domain.ChallengePow, PowDifficulty: 31})
	plain := store(domain.Voucher{Challenge: domain.ChallengeNone})
	fake := &memory.Challenge{}
	uc := application.NewIssueChallenge(application.NewRoomSales(vouchers, nil), fake, memory.NewClock(now))
	var issued int
	uc.Observe(func(o string) {
		if o == application.ChallengeIssued {
			issued++
		}
	})
	for _, tc := range []struct {
		id          domain.VoucherID
		raise, want int
	}{{pow, 0, 18}, {pow, 2, 20}, {pow, -5, 18}, {hard, 2, 32}} {
		offer, err := uc.Handle(ctx, application.IssueChallengeCmd{VoucherID: tc.id, UserID: 1, Raise: tc.raise})
		if err != nil || offer.Difficulty != tc.want {
			t.Fatalf("voucher %s raised %d: %+v %v, want %d bits", tc.id, tc.raise, offer, err, tc.want)
		}
	}
	for _, id := range []domain.VoucherID{plain, 999} {
		if _, err := uc.Handle(ctx, application.IssueChallengeCmd{VoucherID: id, UserID: 1}); !errors.Is(err, domain.ErrNotFound) {
			t.Fatalf("voucher %s: %v, want ErrNotFound", id, err)
		}
	}
	for _, cmd := range []application.IssueChallengeCmd{{VoucherID: 0, UserID: 1}, {VoucherID: pow, UserID: 0}} {
		if _, err := uc.Handle(ctx, cmd); !errors.Is(err, domain.ErrInvalid) {
			t.Fatalf("%+v: %v, want ErrInvalid", cmd, err)
		}
	}
	if issued != 4 {
		t.Fatalf("%d challenges reported issued, want 4", issued)
	}
}

// VerifyProof passes the adapter's answer on and counts it; an empty proof is refused
// without asking, and not counted (there was no proof to check).
func TestVerifyProofCountsVerifiedAndRefused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	fake := &memory.Challenge{}
	uc := application.NewVerifyProof(fake)
	seen := map[string]int{}
	uc.Observe(func(o string) { seen[o]++ })
	if err := uc.Handle(ctx, application.VerifyProofCmd{VoucherID: 1, UserID: 1, Proof: "good"}); err != nil {
		t.Fatalf("a good proof: %v", err)
	}
	for _, p := range []string{"", "bad"} {
		if err := uc.Handle(ctx, application.VerifyProofCmd{VoucherID: 1, UserID: 1, Proof: p}); !errors.Is(err, domain.ErrChallengeRequired) {
			t.Fatalf("proof %q: %v, want ErrChallengeRequired", p, err)
		}
	}
	fake.VerifyErr = domain.ErrUnavailable
	if err := uc.Handle(ctx, application.VerifyProofCmd{VoucherID: 1, UserID: 1, Proof: "good"}); !errors.Is(err, domain.ErrUnavailable) {
		t.Fatalf("an adapter unavailable: %v", err)
	}
	if seen[application.ChallengeVerified] != 1 || seen[application.ChallengeRefused] != 1 || len(seen) != 2 {
		t.Fatalf("reported %v, want 1 verified and 1 refused", seen)
	}
}
