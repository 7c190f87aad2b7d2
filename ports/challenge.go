package ports

import (
	"context"
	"time"

	"github.com/seckill/seckill/domain"
)

// Challenge stands between a voucher with a challenge ("challenge": "pow") and the
// scripts that would fan out over it: every grab, queue join and draw entry of such a
// voucher carries a proof (the X-Seckill-Pow header) of a challenge issued to its user
// for that voucher. An operator picks one adapter per deployment: proof of work
// (redisstore.ProofOfWork, built in) or Cloudflare Turnstile (turnstile.Verifier).
type Challenge interface {
	// Issue returns a fresh challenge for user on voucher. An adapter that asks for
	// work asks for difficulty bits of it (1 to 32); one that does not ignores it.
	// It returns an error wrapping domain.ErrUnavailable when it could not keep the
	// challenge.
	Issue(ctx context.Context, voucher domain.VoucherID, user domain.UserID, difficulty int) (ChallengeOffer, error)
	// Verify checks proof, as the client sent it, for user on voucher, and spends it:
	// a proof is good once. It returns nil, domain.ErrChallengeRequired (missing,
	// malformed, wrong, expired, spent, issued to another user or for another voucher;
	// nothing spent), or an error wrapping domain.ErrUnavailable when it could not tell.
	Verify(ctx context.Context, voucher domain.VoucherID, user domain.UserID, proof string) error
}

// ChallengeOffer is what a client needs to prove itself: a proof-of-work challenge, or
// the Turnstile widget's settings — whichever the deployment's Challenge asks for.
type ChallengeOffer struct {
	// Challenge (base64url) and Difficulty (bits) are the proof of work's: the client
	// finds a decimal nonce with SHA-256(Challenge + ":" + nonce) starting with
	// Difficulty zero bits. The challenge lapses at ExpiresAt.
	Challenge  string
	Difficulty int
	ExpiresAt  time.Time
	// SiteKey, Action and CData are Turnstile's: the client renders the widget with
	// them and sends the token it gets.
	SiteKey string
	Action  string
	CData   string
}
