package redisstore

import (
	"context"
	"crypto/rand"
	_ "embed"
	"encoding/base64"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/domain"
	"github.com/seckill/seckill/ports"
)

// ChallengeLifetime is how long a proof-of-work challenge may be answered: long enough
// for a slow phone to solve one of 20 bits, short enough that a pile of them solved
// ahead of a sale is stale by its start.
const ChallengeLifetime = 2 * time.Minute

// challengeRandom is how many random bytes a challenge holds; one byte more carries its
// difficulty.
const challengeRandom = 16

// challengeLen is the length of a challenge as the client gets it: base64url without
// padding of challengeRandom+1 bytes.
var challengeLen = base64.RawURLEncoding.EncodedLen(challengeRandom + 1)

// ChallengesPerUser bounds the unexpired challenges one user holds for one voucher:
// issuing one more drops the oldest, so however many a client asks for, the service
// keeps five of them a user and voucher.
const ChallengesPerUser = 5

// issue: KEYS[1] a user's challenges of a voucher (Keys.Challenges). ARGV: the
// challenge, now_ms, lifetime_ms, ChallengesPerUser. Returns the challenge's expiry
// (Unix ms).
//
//go:embed pow_issue.lua
var powIssueSrc string
var powIssueScript = newScript(powIssueSrc)

// spend: KEYS[1] a user's challenges of a voucher (Keys.Challenges). ARGV: the
// challenge, now_ms. Returns 1 spent; 0 no such challenge.
//
//go:embed spend.lua
var spendSrc string
var spendScript = newScript(spendSrc)

// ProofOfWork is the built-in ports.Challenge: a challenge is 16 random bytes and the
// difficulty it asks for (one byte), base64url, kept in Redis for ChallengeLifetime
// among the user's challenges of the voucher (Keys.Challenges, under the voucher's
// hash tag), of which the newest ChallengesPerUser are kept.
// Verifying a proof costs one SHA-256 here and one script call (spend) that checks
// and deletes the challenge in one step; a proof that fails the hash never reaches
// Redis, and one refused there changes nothing.
type ProofOfWork struct {
	client redis.UniversalClient
	keys   Keys
	clock  ports.Clock
}

var _ ports.Challenge = (*ProofOfWork)(nil)

// NewProofOfWork returns the proof-of-work challenges on client; clock (the sale's)
// dates their expiry and judges it.
func NewProofOfWork(client redis.UniversalClient, opts Options, clock ports.Clock) *ProofOfWork {
	return &ProofOfWork{client: client, keys: Keys{Prefix: opts.Prefix}, clock: clock}
}

// Issue draws a challenge asking for difficulty bits (clamped to 1..domain.MaxPowDifficulty) and
// keeps it for user on voucher for ChallengeLifetime, dropping the user's oldest
// challenge of the voucher when ChallengesPerUser are kept already. It returns an
// error wrapping domain.ErrUnavailable when Redis did not take it.
func (p *ProofOfWork) Issue(ctx context.Context, voucher domain.VoucherID, user domain.UserID, difficulty int) (ports.ChallengeOffer, error) {
	difficulty = min(max(difficulty, 1), domain.MaxPowDifficulty)
	var raw [challengeRandom + 1]byte
	_, _ = rand.Read(raw[:challengeRandom]) // crypto/rand never fails (it crashes instead)
	raw[challengeRandom] = byte(difficulty)
	challenge := base64.RawURLEncoding.EncodeToString(raw[:])
	expires, err := powIssueScript.Run(ctx, p.client, []string{p.keys.Challenges(voucher, user)},
		challenge, p.clock.Now().UnixMilli(), ChallengeLifetime.Milliseconds(), ChallengesPerUser).Int64()
	if err != nil {
		return ports.ChallengeOffer{}, unavailable("issue a challenge", err)
	}
	return ports.ChallengeOffer{Challenge: challenge, Difficulty: difficulty, ExpiresAt: time.UnixMilli(expires).UTC()}, nil
}

// Verify checks proof ("<challenge>:<nonce>") for user on voucher and spends its
// challenge. It returns domain.ErrChallengeRequired for a proof that is malformed, does
// not solve its challenge, or names a challenge not issued to user for voucher (or
// expired, replaced by newer ones, or spent), and an error wrapping domain.ErrUnavailable when Redis did not
// answer.
func (p *ProofOfWork) Verify(ctx context.Context, voucher domain.VoucherID, user domain.UserID, proof string) error {
	challenge, ok := checkProof(proof)
	if !ok {
		return domain.ErrChallengeRequired
	}
	n, err := spendScript.Run(ctx, p.client, []string{p.keys.Challenges(voucher, user)}, challenge, p.clock.Now().UnixMilli()).Int()
	if err != nil {
		return unavailable("spend a challenge", err)
	}
	if n != 1 {
		return domain.ErrChallengeRequired
	}
	return nil
}

// checkProof reads proof as "<challenge>:<nonce>" and checks that the nonce solves the
// challenge at the difficulty the challenge carries (a client that changed that byte
// names a challenge never issued). It returns the challenge, and whether the proof
// holds up.
func checkProof(proof string) (string, bool) {
	challenge, nonce, found := strings.Cut(proof, ":")
	if !found || len(challenge) != challengeLen || len(nonce) < 1 || len(nonce) > domain.MaxPowNonce {
		return "", false
	}
	for _, c := range []byte(nonce) {
		if c < '0' || c > '9' {
			return "", false
		}
	}
	raw, ok := domain.DecodeToken(challenge)
	if !ok || len(raw) != challengeRandom+1 {
		return "", false
	}
	difficulty := int(raw[challengeRandom])
	if difficulty < 1 || difficulty > domain.MaxPowDifficulty || !domain.PowSolves(challenge, nonce, difficulty) {
		return "", false
	}
	return challenge, true
}
