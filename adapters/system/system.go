// Package system provides the production clock and order id source.
package system

import (
	"context"
	"crypto/sha256"
	"fmt"
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

// ULIDs mints order ids as ULIDs: 26 characters, sortable by creation time, and with
// 80 random bits (monotonic within a millisecond in one process), unique across
// instances without coordination.
type ULIDs struct{}

var _ ports.OrderIDs = ULIDs{}

// NewOrderID returns a fresh ULID.
func (ULIDs) NewOrderID() domain.OrderID { return domain.OrderID(ulid.Make().String()) }

// DerivedOrderID returns the ULID whose time is at (in milliseconds) and whose 80 bits
// of entropy are the first of key's SHA-256.
func (ULIDs) DerivedOrderID(at time.Time, key []byte) domain.OrderID {
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
