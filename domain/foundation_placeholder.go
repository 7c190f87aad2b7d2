package domain

// PLACEHOLDER until the lead's "Fair admission foundation" lands on main: the names
// this branch builds on, as the foundation defines them. Removed in the merge.

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"time"
)

// Admission is how a voucher's buyers are let in to grab.
type Admission string

// The admission modes.
const (
	AdmissionFirstCome   Admission = "first_come"
	AdmissionWaitingRoom Admission = "waiting_room"
	AdmissionDraw        Admission = "draw"
)

// ChallengeKind is what a voucher asks of a client before it may grab.
type ChallengeKind string

// The challenge kinds.
const (
	ChallengeNone ChallengeKind = "none"
	ChallengePow  ChallengeKind = "pow"
)

// PassLifetime is how long a waiting room's pass stays valid once issued.
const PassLifetime = 120 * time.Second

// Placeholder errors.
var (
	ErrQueueRequired     = errors.New("a pass from the waiting room is required")
	ErrChallengeRequired = errors.New("a solved challenge is required")
)

// Pass lets one user of a waiting room grab one voucher until Expires.
type Pass struct {
	Voucher VoucherID
	User    UserID
	Expires time.Time
}

// SignPass returns p's token.
func SignPass(key []byte, p Pass) string {
	buf := make([]byte, 24, 24+sha256.Size)
	binary.BigEndian.PutUint64(buf[0:], uint64(p.Voucher))
	binary.BigEndian.PutUint64(buf[8:], uint64(p.User))
	binary.BigEndian.PutUint64(buf[16:], uint64(p.Expires.UnixMilli()))
	mac := hmac.New(sha256.New, key)
	mac.Write(buf)
	buf = mac.Sum(buf)[:40]
	return base64.RawURLEncoding.EncodeToString(buf)
}

// VerifyPass reads token as a pass of user for voucher that has not expired at now.
func VerifyPass(key []byte, token string, voucher VoucherID, user UserID, now time.Time) (Pass, error) {
	raw, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil || len(raw) != 40 {
		return Pass{}, ErrQueueRequired
	}
	mac := hmac.New(sha256.New, key)
	mac.Write(raw[:24])
	if !hmac.Equal(mac.Sum(nil)[:16], raw[24:]) {
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
