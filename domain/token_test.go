package domain_test

import (
	"bytes"
	"encoding/base64"
	"strings"
	"testing"

	"github.com/seckill/seckill/domain"
)

// respell returns token with the lowest bit of its last character's value flipped: a
// padding bit when the token's length leaves any, so the loose decoder reads the same
// bytes from it.
func respell(token string) string {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	last := strings.IndexByte(alphabet, token[len(token)-1])
	return token[:len(token)-1] + string(alphabet[last^1])
}

// A token is read only as the service spells it: the same bytes spelt otherwise (a
// padding bit set, a line break, padding, the standard alphabet) are refused, though
// the loose decoder reads them.
func TestDecodeTokenTakesOneSpellingOnly(t *testing.T) {
	for _, size := range []int{17, 32, 40} { // a challenge, a ticket, a pass
		raw := bytes.Repeat([]byte{0xfb}, size)
		token := base64.RawURLEncoding.EncodeToString(raw)
		if got, ok := domain.DecodeToken(token); !ok || !bytes.Equal(got, raw) {
			t.Fatalf("DecodeToken of %d bytes = %x, %v; want them back", size, got, ok)
		}
		for name, other := range map[string]string{
			"respelt in its padding bits": respell(token),
			"with a line break":           token[:5] + "\n" + token[5:],
			"with a carriage return":      token + "\r",
			"padded":                      base64.URLEncoding.EncodeToString(raw),
			"in the standard alphabet":    base64.RawStdEncoding.EncodeToString(raw),
		} {
			if loose, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(other, "=")); name != "in the standard alphabet" &&
				(err != nil || !bytes.Equal(loose, raw)) {
				t.Fatalf("%d bytes %s: the loose decoder reads %x, %v; the case tests nothing", size, name, loose, err)
			}
			if got, ok := domain.DecodeToken(other); ok {
				t.Errorf("DecodeToken of %d bytes %s (%q) = %x, want refused", size, name, other, got)
			}
		}
	}
	for _, bad := range []string{"!", "a", "abc$", "ab=="} {
		if _, ok := domain.DecodeToken(bad); ok {
			t.Errorf("DecodeToken(%q) accepted", bad)
		}
	}
}
