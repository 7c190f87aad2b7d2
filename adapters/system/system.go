// Package system provides the host's clock, the order id source and the accept-all
// payment gateway.
package system

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"fmt"
	"sync"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/seckill/seckill/domain"
	"github.com/seckill/seckill/ports"
)

// Clock tells the wall-clock time.
type Clock struct{}

var _ ports.Clock = Clock{}

// Now returns the current time.
func (Clock) Now() time.Time { return time.Now() }

// ULIDs mints order ids as ULIDs: 26 characters, 48 bits of time (the millisecond)
// then 80 random bits, unique across instances without coordination. The time is the
// clock's it is given — the sale's clock (Redis's time), which created_at is stamped
// by — so ids minted on every instance sort by when they were minted, whatever each
// host's clock says, and a voucher's orders, paged by id, are in the sale's order.
// Within this process ids only grow: in the same millisecond the random part counts
// up, and a clock that steps back (the sale's clock, measured again) mints in the
// millisecond of the last id until it has passed.
type ULIDs struct {
	clock ports.Clock

	mu      sync.Mutex
	last    uint64
	entropy *ulid.MonotonicEntropy
}

var _ ports.OrderIDs = (*ULIDs)(nil)

// NewULIDs returns the order ids whose time is clock's.
func NewULIDs(clock ports.Clock) *ULIDs {
	return &ULIDs{clock: clock, entropy: ulid.Monotonic(rand.Reader, 0)}
}

// NewOrderID returns a fresh ULID, greater than every one this ULIDs minted before.
func (u *ULIDs) NewOrderID() domain.OrderID {
	ms := ulid.Timestamp(u.clock.Now())
	u.mu.Lock()
	defer u.mu.Unlock()
	ms = max(ms, u.last)
	for {
		id, err := ulid.New(ms, u.entropy)
		if err == nil {
			u.last = ms
			return domain.OrderID(id.String())
		}
		// The random part cannot count up any further in this millisecond (about
		// 2^48 ids minted in it): the next one.
		ms++
	}
}

// DerivedOrderID returns the ULID whose time is at (in milliseconds) and whose 80 bits
// of entropy are the first of key's SHA-256.
func (*ULIDs) DerivedOrderID(at time.Time, key []byte) domain.OrderID {
	sum := sha256.Sum256(key)
	var id ulid.ULID
	if err := id.SetTime(ulid.Timestamp(at)); err != nil {
		// Only a time past the year 10889 has no ULID.
		panic(fmt.Sprintf("derived order id: %v", err))
	}
	if err := id.SetEntropy(sum[:10]); err != nil {
		panic(fmt.Sprintf("derived order id: %v", err)) // ten bytes are always right
	}
	return domain.OrderID(id.String())
}

// AcceptPayments is the payment gateway seckill ships with: it approves every payment,
// so paying records the transition and nothing else. A real gateway implements
// ports.Payments in its own adapter and replaces this one in the wiring.
type AcceptPayments struct{}

var _ ports.Payments = AcceptPayments{}

// Authorize approves o.
func (AcceptPayments) Authorize(context.Context, domain.Order) error { return nil }

// Void has nothing to undo.
func (AcceptPayments) Void(context.Context, domain.Order) error { return nil }
