package domain

import "encoding/base64"

// DecodeToken returns the bytes of token, a string the service issued (a pass, a
// stream ticket, a challenge): base64url without padding, read strictly. A token is
// one string: another spelling of the same bytes — padding bits set in its last
// character, a line break inside, padding added — is no token the service issued,
// and ok is false for it as for anything that is not base64url.
func DecodeToken(token string) (raw []byte, ok bool) {
	raw, err := base64.RawURLEncoding.Strict().DecodeString(token)
	// Strict checks the padding bits; the decoder still skips '\r' and '\n', which
	// the length catches.
	if err != nil || len(token) != base64.RawURLEncoding.EncodedLen(len(raw)) {
		return nil, false
	}
	return raw, true
}
