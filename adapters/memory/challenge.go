package memory

import (
	"context"
	"sync"

	"github.com/seckill/seckill/domain"
	"github.com/seckill/seckill/ports"
)

// Challenge is an in-memory ports.Challenge that issues the challenge "c" and takes
// the proof "good" (spent never).
type Challenge struct {
	mu sync.Mutex
	// VerifyErr, when set, answers every Verify.
	VerifyErr error
}

var _ ports.Challenge = (*Challenge)(nil)

// Issue returns the challenge "c" of difficulty bits.
func (f *Challenge) Issue(_ context.Context, _ domain.VoucherID, _ domain.UserID, difficulty int) (ports.ChallengeOffer, error) {
	return ports.ChallengeOffer{Challenge: "c", Difficulty: difficulty}, nil
}

// Verify takes "good", refuses anything else with domain.ErrChallengeRequired, or
// answers VerifyErr when set.
func (f *Challenge) Verify(_ context.Context, _ domain.VoucherID, _ domain.UserID, proof string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.VerifyErr != nil {
		return f.VerifyErr
	}
	if proof != "good" {
		return domain.ErrChallengeRequired
	}
	return nil
}
