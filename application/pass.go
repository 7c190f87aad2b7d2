package application

import (
	"crypto/hmac"
	"crypto/sha256"
)

// PassKey signs and checks a waiting room's passes (domain.SignPass, domain.VerifyPass).
// Every instance derives the same key from the service's secret, so a pass issued by
// one is checked by any other with no store asked.
type PassKey []byte

// NewPassKey derives the pass key from secret (the bearer tokens' secret): its
// HMAC-SHA256 of a fixed label, so the passes' key is never the tokens' own.
func NewPassKey(secret []byte) PassKey {
	mac := hmac.New(sha256.New, secret)
	mac.Write([]byte("seckill pass key"))
	return mac.Sum(nil)
}
