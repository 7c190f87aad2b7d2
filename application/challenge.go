package application

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/seckill/seckill/domain"
	"github.com/seckill/seckill/ports"
)

// The outcomes of a challenge, as IssueChallenge and VerifyProof report them
// (Observe).
const (
	ChallengeIssued   = "issued"
	ChallengeVerified = "verified"
	ChallengeRefused  = "refused"
)

// ChallengeOutcomes lists every outcome, for those who report each one.
var ChallengeOutcomes = []string{ChallengeIssued, ChallengeVerified, ChallengeRefused}

// challengeTermsLife is how long IssueChallenge trusts the challenge terms it read of
// a voucher: a flood of grabs refused for want of a proof, each answered with a fresh
// challenge, reads the database once per voucher in this time, not once per grab.
const challengeTermsLife = 5 * time.Second

// challengeTermsMax bounds the vouchers whose terms are remembered; past it they are
// forgotten at once.
const challengeTermsMax = 10_000

// IssueChallenge hands a user a fresh challenge for a voucher with one ("challenge":
// "pow"): GET /api/v1/vouchers/{id}/challenge, and every 403 challenge_required. It
// asks for the voucher's pow_difficulty plus the bits the caller raises it by under
// load, at most domain.MaxPowDifficulty.
type IssueChallenge struct {
	vouchers  *RoomSales
	challenge ports.Challenge
	clock     ports.Clock
	observe   func(outcome string)

	mu    sync.Mutex
	terms map[domain.VoucherID]challengeTerms
}

// challengeTerms are what IssueChallenge remembers of a voucher: whether it asks for a
// challenge, of how many bits, and when that was read.
type challengeTerms struct {
	kind       domain.ChallengeKind
	difficulty int
	read       time.Time
}

// NewIssueChallenge returns the use case: the challenges of the vouchers rooms reads,
// and of its campaigns' waiting rooms (whose joins ask for the campaign's challenge);
// clock dates what it remembers of each.
func NewIssueChallenge(rooms *RoomSales, challenge ports.Challenge, clock ports.Clock) *IssueChallenge {
	return &IssueChallenge{vouchers: rooms, challenge: challenge, clock: clock, observe: func(string) {},
		terms: make(map[domain.VoucherID]challengeTerms)}
}

// Observe makes every challenge issued report ChallengeIssued to fn. Call it before
// the use case serves.
func (uc *IssueChallenge) Observe(fn func(outcome string)) { uc.observe = fn }

// IssueChallengeCmd asks for a challenge for UserID on VoucherID, Raise bits harder
// than the voucher's own difficulty.
type IssueChallengeCmd struct {
	VoucherID domain.VoucherID
	UserID    domain.UserID
	Raise     int
}

// Handle returns a fresh challenge. It returns a *domain.ValidationError for ids below
// 1, domain.ErrNotFound for a voucher that does not exist or asks for no challenge,
// or an error wrapping domain.ErrUnavailable.
func (uc *IssueChallenge) Handle(ctx context.Context, cmd IssueChallengeCmd) (ports.ChallengeOffer, error) {
	switch {
	case cmd.VoucherID <= 0:
		return ports.ChallengeOffer{}, domain.Invalid("id", "must be a positive integer")
	case cmd.UserID <= 0:
		return ports.ChallengeOffer{}, domain.Invalid("user", "must be a positive integer")
	}
	t, err := uc.read(ctx, cmd.VoucherID)
	if err != nil {
		return ports.ChallengeOffer{}, err
	}
	if t.kind != domain.ChallengePow {
		return ports.ChallengeOffer{}, domain.ErrNotFound
	}
	difficulty := min(t.difficulty+max(cmd.Raise, 0), domain.MaxPowDifficulty)
	offer, err := uc.challenge.Issue(ctx, cmd.VoucherID, cmd.UserID, difficulty)
	if err != nil {
		return ports.ChallengeOffer{}, err
	}
	uc.observe(ChallengeIssued)
	return offer, nil
}

// read returns the voucher's challenge terms, read again once they are older than
// challengeTermsLife.
func (uc *IssueChallenge) read(ctx context.Context, id domain.VoucherID) (challengeTerms, error) {
	now := uc.clock.Now()
	uc.mu.Lock()
	t, ok := uc.terms[id]
	uc.mu.Unlock()
	if ok && now.Sub(t.read) < challengeTermsLife {
		return t, nil
	}
	v, err := uc.vouchers.Get(ctx, id)
	if err != nil {
		return challengeTerms{}, err
	}
	t = challengeTerms{kind: v.Challenge, difficulty: v.PowDifficulty, read: now}
	if t.difficulty < 1 {
		t.difficulty = domain.DefaultPowDifficulty
	}
	uc.mu.Lock()
	if len(uc.terms) >= challengeTermsMax {
		clear(uc.terms)
	}
	uc.terms[id] = t
	uc.mu.Unlock()
	return t, nil
}

// VerifyProof checks the proof a grab, queue join or draw entry of a voucher with a
// challenge carries, and spends it, counting each proof verified or refused.
type VerifyProof struct {
	challenge ports.Challenge
	observe   func(outcome string)
}

// NewVerifyProof returns the use case.
func NewVerifyProof(challenge ports.Challenge) *VerifyProof {
	return &VerifyProof{challenge: challenge, observe: func(string) {}}
}

// Observe makes every proof checked report ChallengeVerified or ChallengeRefused to
// fn (a request without a proof has none to check: it reports nothing). Call it
// before the use case serves.
func (uc *VerifyProof) Observe(fn func(outcome string)) { uc.observe = fn }

// VerifyProofCmd is a proof a user's request of a voucher carries.
type VerifyProofCmd struct {
	VoucherID domain.VoucherID
	UserID    domain.UserID
	// Proof is the solution as the client sent it; "" for none.
	Proof string
}

// Handle checks the command's proof (see ports.Challenge.Verify): nil, an error
// matching domain.ErrChallengeRequired (nothing spent), or one wrapping
// domain.ErrUnavailable.
func (uc *VerifyProof) Handle(ctx context.Context, cmd VerifyProofCmd) error {
	if cmd.Proof == "" {
		return domain.ErrChallengeRequired // no proof to count: the caller counts the refusal
	}
	err := uc.challenge.Verify(ctx, cmd.VoucherID, cmd.UserID, cmd.Proof)
	switch {
	case err == nil:
		uc.observe(ChallengeVerified)
	case errors.Is(err, domain.ErrChallengeRequired):
		uc.observe(ChallengeRefused)
	}
	return err
}
