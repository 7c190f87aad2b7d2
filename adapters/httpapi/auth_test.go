package httpapi_test

import (
	"testing"
	"time"

	"github.com/seckill/seckill/adapters/httpapi"
	"github.com/seckill/seckill/adapters/testenv"
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
