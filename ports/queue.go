package ports

import (
	"context"
	"time"

	"github.com/seckill/seckill/domain"
)

// Delivery is one reservation handed to a fulfillment worker by the queue.
type Delivery struct {
	// ID is the queue's id of the entry; Ack and DeadLetter take it back.
	ID string
	// VoucherID is the voucher whose queue held the entry.
	VoucherID domain.VoucherID
	// Reservation is the entry decoded. It is valid only when Malformed is empty.
	Reservation domain.Reservation
	// Malformed says why the entry could not be decoded; empty when it could.
	Malformed string
	// Deliveries counts how often the entry has been delivered, this time included.
	Deliveries int64
	// TraceParent is the W3C trace context of the grab that made the entry, empty when
	// it was not traced; the work that persists the entry links to it.
	TraceParent string
}

// Queue is the consuming side of the reservation outbox the grab path appends to.
// Every process reads as its own consumer of one shared group, so each entry goes to
// one worker at a time and stays pending until acknowledged.
type Queue interface {
	// Read returns entries never delivered before, up to count from each voucher's
	// queue, waiting at most block while there are none. No entries is not an error.
	Read(ctx context.Context, count int, block time.Duration) ([]Delivery, error)
	// Claim takes over up to count entries left pending longer than minIdle by any
	// consumer (a crashed or stuck worker). Entries deleted meanwhile are acknowledged
	// away and not returned.
	Claim(ctx context.Context, minIdle time.Duration, count int) ([]Delivery, error)
	// Ack acknowledges deliveries whose effects are committed, and lets the queue drop
	// entries no consumer needs any more.
	Ack(ctx context.Context, ds ...Delivery) error
	// DeadLetter records d and reason in the dead-letter queue and acknowledges d, so a
	// poison entry stops being redelivered.
	DeadLetter(ctx context.Context, d Delivery, reason string) error
	// Refresh makes the next Read and Claim see every voucher's queue that exists now
	// (they may otherwise learn of a new voucher a little later).
	Refresh(ctx context.Context) error
}
