package httpapi_test

import (
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/seckill/seckill/adapters/httpapi"
	"github.com/seckill/seckill/adapters/testenv"
	"github.com/seckill/seckill/domain"
)

func TestTokensRoundTrip(t *testing.T) {
	t.Parallel()
	tokens := httpapi.NewTokens([]byte(secret))
	tok, err := tokens.Mint(42, true, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ { // the second parse is answered from memory
		p, err := tokens.Parse(tok)
		if err != nil || p.User != 42 || !p.Admin {
			t.Fatalf("parse %d: %+v, %v", i+1, p, err)
		}
	}
	if _, err := httpapi.NewTokens([]byte("another-secret-entirely")).Parse(tok); err == nil {
		t.Fatal("a token signed with another secret was accepted")
	}
	if _, err := tokens.Mint(0, false, time.Hour); err == nil {
		t.Fatal("minted a token for user 0")
	}
}

// TestRememberedTokensStillExpire: a token verified while valid is refused once it
// has expired, even though it was remembered.
func TestRememberedTokensStillExpire(t *testing.T) {
	t.Parallel()
	tokens := httpapi.NewTokens([]byte(secret))
	tok, err := tokens.Mint(7, false, 1100*time.Millisecond) // exp has whole-second precision
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tokens.Parse(tok); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, testenv.Patience, "the expired token refused", func() (bool, string) {
		_, err := tokens.Parse(tok)
		return err != nil, "still accepted"
	})
}

// TestTokensOfAnotherLibrary: a token that golang-jwt signs with the secret (as a
// shop's own login service might) is accepted, and one that Mint signs verifies
// under golang-jwt, HS256 pinned: the two agree on the format.
func TestTokensOfAnotherLibrary(t *testing.T) {
	t.Parallel()
	tokens := httpapi.NewTokens([]byte(secret))
	theirs, err := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{
		"sub": "31", "role": "admin", "exp": time.Now().Add(time.Hour).Unix(), "iat": time.Now().Unix(),
	}).SignedString([]byte(secret))
	if err != nil {
		t.Fatal(err)
	}
	if p, err := tokens.Parse(theirs); err != nil || p.User != 31 || !p.Admin {
		t.Fatalf("golang-jwt's token: %+v, %v", p, err)
	}
	ours, err := tokens.Mint(32, false, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	var c jwt.MapClaims
	_, err = jwt.NewParser(jwt.WithValidMethods([]string{"HS256"}), jwt.WithExpirationRequired(), jwt.WithIssuedAt()).
		ParseWithClaims(ours, &c, func(*jwt.Token) (any, error) { return []byte(secret), nil })
	if err != nil || c["sub"] != "32" || c["role"] != nil {
		t.Fatalf("Mint's token under golang-jwt: %v, %v", c, err)
	}
	if _, err := httpapi.NewTokens(nil).Mint(1, false, time.Hour); err == nil {
		t.Fatal("minted a token without a secret")
	}
	if _, err := httpapi.NewTokens(nil).Parse(ours); err == nil {
		t.Fatal("verified a token without a secret")
	}
}

// BenchmarkVerifyFreshToken is the token check of a grab from a user not seen before,
// the flash sale's case: every token is new, so none is answered from memory.
func BenchmarkVerifyFreshToken(b *testing.B) {
	tokens := httpapi.NewTokens([]byte(secret))
	minted := make([]string, b.N)
	for i := range minted {
		var err error
		if minted[i], err = tokens.Mint(domain.UserID(i+1), false, time.Hour); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for _, tok := range minted {
		if _, err := tokens.Parse(tok); err != nil {
			b.Fatal(err)
		}
	}
}
