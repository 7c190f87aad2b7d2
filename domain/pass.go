package domain

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"time"
)

// Pass lets one user of a waiting room grab one voucher until Expires. It is signed
// (SignPass), so the grab checks it without asking any store; the stock makes sure a
// pass admits one order only.
type Pass struct {
	Voucher VoucherID
	User    UserID
	Expires time.Time
}

// The layout of a pass token, before base64url: voucher, user and expiry (Unix ms),
// 8 bytes each, big endian, then the first passMACSize bytes of their HMAC-SHA256.
const (
	passBodySize = 24
	passMACSize  = 16
)

// SignPass returns p's token: base64url (unpadded) of p's voucher, user and expiry
// in Unix milliseconds (8 bytes each, big endian) followed by the first 16 bytes of
// their HMAC-SHA256 under key.
func SignPass(key []byte, p Pass) string {
	buf := make([]byte, passBodySize, passBodySize+sha256.Size)
	binary.BigEndian.PutUint64(buf[0:], uint64(p.Voucher))
	binary.BigEndian.PutUint64(buf[8:], uint64(p.User))
	binary.BigEndian.PutUint64(buf[16:], uint64(p.Expires.UnixMilli()))
	mac := hmac.New(sha256.New, key)
	mac.Write(buf)
	buf = mac.Sum(buf)[:passBodySize+passMACSize]
	return base64.RawURLEncoding.EncodeToString(buf)
}

// VerifyPass reads token as a pass of user for voucher that has not expired at now.
// A token that is malformed or spelt otherwise than SignPass spells it (DecodeToken),
// forged (its signature is not key's), another user's or another voucher's, or
// expired returns ErrQueueRequired.
func VerifyPass(key []byte, token string, voucher VoucherID, user UserID, now time.Time) (Pass, error) {
	raw, ok := DecodeToken(token)
	if !ok || len(raw) != passBodySize+passMACSize {
		return Pass{}, ErrQueueRequired
	}
	mac := hmac.New(sha256.New, key)
	mac.Write(raw[:passBodySize])
	if !hmac.Equal(mac.Sum(nil)[:passMACSize], raw[passBodySize:]) {
		return Pass{}, ErrQueueRequired
	}
	p := Pass{
		Voucher: VoucherID(binary.BigEndian.Uint64(raw[0:])),
		User:    UserID(binary.BigEndian.Uint64(raw[8:])),
		Expires: time.UnixMilli(int64(binary.BigEndian.Uint64(raw[16:]))).UTC(),
	}
	if p.Voucher != voucher || p.User != user || !now.Before(p.Expires) {
		return Pass{}, ErrQueueRequired
	}
	return p, nil
}
