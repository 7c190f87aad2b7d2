package redisstore_test

import (
	"context"
	"encoding/base64"
	"errors"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/adapters/redisstore"
	"github.com/seckill/seckill/adapters/system"
	"github.com/seckill/seckill/adapters/testenv"
	"github.com/seckill/seckill/domain"
)

// newPow returns proof-of-work challenges on the test Redis under a prefix of the
// test's own, with the client they use.
func newPow(t testing.TB) (*redisstore.ProofOfWork, redis.UniversalClient, redisstore.Keys) {
	t.Helper()
	client := testenv.Redis(t)
	opts := redisstore.Options{Prefix: "t" + testenv.Unique()}
	return redisstore.NewProofOfWork(client, opts, system.Clock{}), client, redisstore.Keys{Prefix: opts.Prefix}
}

// respell returns token with the lowest bit of its last character's value flipped:
// one of its padding bits, so a loose base64url decoder reads the same bytes.
func respell(token string) string {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	last := strings.IndexByte(alphabet, token[len(token)-1])
	return token[:len(token)-1] + string(alphabet[last^1])
}

// solved is the proof a client sends for c.
func solved(c string, difficulty int) string {
	return c + ":" + domain.SolvePow(c, difficulty)
}

// A challenge is bound to its user and voucher and good once: the proofs of another
// user, for another voucher, with a wrong or malformed nonce are refused and change
// nothing (the owner's proof passes after them); the owner's passes once; an expired
// challenge is refused.
func TestProofOfWorkBindsUserAndVoucherAndIsSpentOnce(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pow, client, keys := newPow(t)
	const voucher, other, user, stranger = domain.VoucherID(7), domain.VoucherID(8), domain.UserID(42), domain.UserID(43)
	before := time.Now()
	offer, err := pow.Issue(ctx, voucher, user, 8)
	check(t, err)
	if offer.Difficulty != 8 || offer.ExpiresAt.Before(before.Add(redisstore.ChallengeLifetime-time.Second)) ||
		offer.ExpiresAt.After(time.Now().Add(redisstore.ChallengeLifetime+time.Second)) {
		t.Fatalf("offer %+v, want difficulty 8 expiring %v from now", offer, redisstore.ChallengeLifetime)
	}
	ttl, err := client.PTTL(ctx, keys.Challenges(voucher, user)).Result()
	check(t, err)
	if ttl <= 0 || ttl > redisstore.ChallengeLifetime {
		t.Fatalf("the challenges' key lives %v, want at most %v", ttl, redisstore.ChallengeLifetime)
	}
	proof := solved(offer.Challenge, offer.Difficulty)
	var wrong string
	for n := 0; wrong == ""; n++ {
		if !domain.PowSolves(offer.Challenge, strconv.Itoa(n), offer.Difficulty) {
			wrong = offer.Challenge + ":" + strconv.Itoa(n)
		}
	}
	// The difficulty byte lowered to 1 and solved: a challenge never issued.
	raw, _ := base64.RawURLEncoding.DecodeString(offer.Challenge)
	raw[len(raw)-1] = 1
	easier := base64.RawURLEncoding.EncodeToString(raw)
	for _, tc := range []struct {
		name    string
		voucher domain.VoucherID
		user    domain.UserID
		proof   string
	}{
		{"another user's", voucher, stranger, proof},
		{"for another voucher", other, user, proof},
		{"a wrong nonce", voucher, user, wrong},
		{"a lowered difficulty", voucher, user, solved(easier, 1)},
		{"missing", voucher, user, ""},
		{"no nonce", voucher, user, offer.Challenge},
		{"an empty nonce", voucher, user, offer.Challenge + ":"},
		{"a negative nonce", voucher, user, offer.Challenge + ":-1"},
		{"a nonce not decimal", voucher, user, offer.Challenge + ":1e3"},
		{"a nonce too long", voucher, user, offer.Challenge + ":" + strings.Repeat("0", 21)},
		{"a challenge too short", voucher, user, offer.Challenge[1:] + ":0"},
		{"a challenge not base64url", voucher, user, "!" + offer.Challenge[1:] + ":0"},
		{"two colons", voucher, user, proof + ":0"},
		{"a challenge respelt in its padding bits", voucher, user, solved(respell(offer.Challenge), offer.Difficulty)},
	} {
		if err := pow.Verify(ctx, tc.voucher, tc.user, tc.proof); !errors.Is(err, domain.ErrChallengeRequired) {
			t.Errorf("a proof %s: %v, want ErrChallengeRequired", tc.name, err)
		}
	}
	if err := pow.Verify(ctx, voucher, user, proof); err != nil {
		t.Fatalf("the owner's proof after the refusals: %v, want nil", err)
	}
	if err := pow.Verify(ctx, voucher, user, proof); !errors.Is(err, domain.ErrChallengeRequired) {
		t.Fatalf("the same proof again: %v, want ErrChallengeRequired (spent)", err)
	}
	if n, err := client.Exists(ctx, keys.Challenges(voucher, user)).Result(); err != nil || n != 0 {
		t.Fatalf("the spent challenge's key: exists %d (%v), want gone", n, err)
	}
}

// settableClock is a ports.Clock a test moves.
type settableClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *settableClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *settableClock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// A challenge expires ChallengeLifetime after it was issued, by the clock the
// challenges are given: its proof is refused from then on.
func TestProofOfWorkChallengesExpire(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	client := testenv.Redis(t)
	clock := &settableClock{now: time.Now()}
	pow := redisstore.NewProofOfWork(client, redisstore.Options{Prefix: "t" + testenv.Unique()}, clock)
	offer, err := pow.Issue(ctx, 1, 2, 4)
	check(t, err)
	if want := clock.Now().Add(redisstore.ChallengeLifetime).UnixMilli(); offer.ExpiresAt.UnixMilli() != want {
		t.Fatalf("expires at %v, want %v", offer.ExpiresAt, time.UnixMilli(want))
	}
	clock.add(redisstore.ChallengeLifetime)
	if err := pow.Verify(ctx, 1, 2, solved(offer.Challenge, offer.Difficulty)); !errors.Is(err, domain.ErrChallengeRequired) {
		t.Fatalf("an expired challenge's proof: %v, want ErrChallengeRequired", err)
	}
}

// However many challenges a user asks for, the service keeps the newest
// ChallengesPerUser of each voucher, in one key: a sixth replaces the oldest, whose
// proof is refused from then on, while the five kept each pass once. Another voucher's
// and another user's challenges are kept apart.
func TestProofOfWorkKeepsFiveChallengesAUserAndVoucher(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pow, client, keys := newPow(t)
	const voucher, user = domain.VoucherID(5), domain.UserID(6)
	var offers []string
	for range 1000 {
		offer, err := pow.Issue(ctx, voucher, user, 1)
		check(t, err)
		offers = append(offers, solved(offer.Challenge, offer.Difficulty))
	}
	other, err := pow.Issue(ctx, voucher+1, user, 1)
	check(t, err)
	stranger, err := pow.Issue(ctx, voucher, user+1, 1)
	check(t, err)
	if n, err := client.ZCard(ctx, keys.Challenges(voucher, user)).Result(); err != nil || n != redisstore.ChallengesPerUser {
		t.Fatalf("the user keeps %d challenges (%v), want %d", n, err, redisstore.ChallengesPerUser)
	}
	var found []string
	iter := client.Scan(ctx, 0, keys.Prefix+":{v"+voucher.String()+"}:pow:*", 100).Iterator()
	for iter.Next(ctx) {
		found = append(found, iter.Val())
	}
	check(t, iter.Err())
	if len(found) != 2 {
		t.Fatalf("1,002 challenges of two users made keys %v, want one a user", found)
	}
	// The sixth newest was replaced: refused, and it spends nothing.
	kept := len(offers) - redisstore.ChallengesPerUser
	if err := pow.Verify(ctx, voucher, user, offers[kept-1]); !errors.Is(err, domain.ErrChallengeRequired) {
		t.Fatalf("a replaced challenge's proof: %v, want ErrChallengeRequired", err)
	}
	for i, proof := range offers[kept:] {
		if err := pow.Verify(ctx, voucher, user, proof); err != nil {
			t.Fatalf("the proof of kept challenge %d: %v", i, err)
		}
	}
	check(t, pow.Verify(ctx, voucher+1, user, solved(other.Challenge, other.Difficulty)))
	check(t, pow.Verify(ctx, voucher, user+1, solved(stranger.Challenge, stranger.Difficulty)))
}

// Issue asks for 1 to 32 bits, whatever it is given, and every challenge is new.
func TestProofOfWorkClampsTheDifficulty(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pow, _, _ := newPow(t)
	seen := map[string]bool{}
	for _, tc := range []struct{ asked, want int }{{0, 1}, {-3, 1}, {1, 1}, {20, 20}, {32, 32}, {40, 32}} {
		offer, err := pow.Issue(ctx, 1, 1, tc.asked)
		check(t, err)
		if offer.Difficulty != tc.want {
			t.Errorf("Issue(difficulty %d) asks for %d bits, want %d", tc.asked, offer.Difficulty, tc.want)
		}
		if seen[offer.Challenge] || len(offer.Challenge) != 23 {
			t.Errorf("challenge %q: repeated or not 23 characters", offer.Challenge)
		}
		seen[offer.Challenge] = true
	}
}

// Of many proofs of one challenge sent at once, by any number of instances, one
// passes.
func TestProofOfWorkSpendsAChallengeOnceUnderRaces(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pow, _, _ := newPow(t)
	offer, err := pow.Issue(ctx, 3, 9, 6)
	check(t, err)
	proof := solved(offer.Challenge, offer.Difficulty)
	var passed, refused atomic.Int32
	var wg sync.WaitGroup
	for range 32 {
		wg.Go(func() {
			switch err := pow.Verify(ctx, 3, 9, proof); {
			case err == nil:
				passed.Add(1)
			case errors.Is(err, domain.ErrChallengeRequired):
				refused.Add(1)
			default:
				t.Errorf("Verify: %v", err)
			}
		})
	}
	wg.Wait()
	if passed.Load() != 1 || refused.Load() != 31 {
		t.Fatalf("%d passed and %d refused, want 1 and 31", passed.Load(), refused.Load())
	}
}

// A Redis that does not answer makes Issue and Verify unavailable, not a refusal.
func TestProofOfWorkUnavailableWithoutRedis(t *testing.T) {
	t.Parallel()
	client := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1, DialTimeout: 100 * time.Millisecond})
	t.Cleanup(func() { _ = client.Close() })
	pow := redisstore.NewProofOfWork(client, redisstore.Options{}, system.Clock{})
	ctx, cancel := context.WithTimeout(t.Context(), testenv.Patience)
	defer cancel()
	if _, err := pow.Issue(ctx, 1, 1, 4); !errors.Is(err, domain.ErrUnavailable) {
		t.Fatalf("Issue without Redis: %v, want ErrUnavailable", err)
	}
	c := base64.RawURLEncoding.EncodeToString(append(make([]byte, 16), 1))
	if err := pow.Verify(ctx, 1, 1, solved(c, 1)); !errors.Is(err, domain.ErrUnavailable) {
		t.Fatalf("Verify without Redis: %v, want ErrUnavailable", err)
	}
}

// BenchmarkProofOfWorkVerify measures what a grab's proof costs the service: one
// SHA-256 and one script call that checks and spends the challenge (the challenges
// are issued and solved before the timer starts).
func BenchmarkProofOfWorkVerify(b *testing.B) {
	ctx := b.Context()
	pow, _, _ := newPow(b)
	proofs := make([]string, b.N)
	for i := range proofs {
		offer, err := pow.Issue(ctx, 1, domain.UserID(i+1), 1)
		if err != nil {
			b.Fatal(err)
		}
		proofs[i] = solved(offer.Challenge, offer.Difficulty)
	}
	b.ResetTimer()
	for i := range b.N {
		if err := pow.Verify(ctx, 1, domain.UserID(i+1), proofs[i]); err != nil {
			b.Fatal(err)
		}
	}
}
