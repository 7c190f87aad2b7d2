// Package ports declares what the use cases need from the outside world. The core owns
// these interfaces; adapters implement them.
package ports

import (
	"context"
	"time"

	"github.com/seckill/seckill/domain"
)

// Stock holds the sellable units of each voucher, with what the grab path needs to
// judge a grab (window, per-user limit) kept beside them.
type Stock interface {
	// Warm loads a voucher's sale state only if it is absent, so a live counter is
	// never reset. It reports whether it loaded anything.
	Warm(ctx context.Context, v domain.Voucher) (bool, error)
	// Reserve takes r.Quantity units for r.UserID atomically and records the
	// reservation for fulfilment. It returns domain.ErrSoldOut, an
	// *domain.AlreadyPurchasedError naming the existing order, domain.ErrNotStarted,
	// domain.ErrEnded, domain.ErrNotFound (no sale state for the voucher) or a
	// *domain.ValidationError (quantity above the per-user limit).
	Reserve(ctx context.Context, r domain.Reservation) error
	// Remaining returns the units left of each voucher that has sale state; vouchers
	// without it are absent from the map.
	Remaining(ctx context.Context, ids ...domain.VoucherID) (map[domain.VoucherID]int, error)
	// Release returns an order's units to the sale and forgets the user's reservation,
	// only if that reservation still names o.ID; it reports whether it did. Applied
	// twice it releases once. A voucher without sale state releases nothing.
	Release(ctx context.Context, o domain.Order) (bool, error)
}

// Reservations reads what the grab path recorded and has not yet been persisted.
type Reservations interface {
	// Find returns the reservation an order id names, among the vouchers whose sale
	// state is loaded, or domain.ErrNotFound.
	Find(ctx context.Context, id domain.OrderID) (domain.Reservation, error)
	// ForUser returns the reservations a user holds now, at most one per voucher whose
	// sale state is loaded; persisted ones included.
	ForUser(ctx context.Context, user domain.UserID) ([]domain.Reservation, error)
	// Pending returns how many of a voucher's queue entries are not yet acknowledged
	// (delivered and pending, or not yet delivered).
	Pending(ctx context.Context, voucher domain.VoucherID) (int64, error)
}

// Vouchers stores vouchers.
type Vouchers interface {
	// Create stores v and sets v.ID and v.CreatedAt.
	Create(ctx context.Context, v *domain.Voucher) error
	// Get returns one voucher, or domain.ErrNotFound.
	Get(ctx context.Context, id domain.VoucherID) (domain.Voucher, error)
	// List returns all vouchers, newest first.
	List(ctx context.Context) ([]domain.Voucher, error)
	// Active returns the vouchers whose sale has not ended at now.
	Active(ctx context.Context, now time.Time) ([]domain.Voucher, error)
}

// Clock tells the application's time; the grab path judges sale windows by it.
type Clock interface {
	Now() time.Time
}

// OrderIDs mints order ids: time-ordered and unique across instances.
type OrderIDs interface {
	NewOrderID() domain.OrderID
}

// Delivery is one reservation handed to a fulfilment worker by the queue.
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
}

// PersistOutcome is what Orders.Persist did with one reservation.
type PersistOutcome int

// The outcomes of persisting a reservation.
const (
	// Persisted: stored as a new awaiting_payment order.
	Persisted PersistOutcome = iota + 1
	// AlreadyPersisted: a live or closed order with this id exists (a redelivery);
	// nothing changed.
	AlreadyPersisted
	// Failed: it can never become a live order (the user holds another live order for
	// the voucher, or the database's sold counter is full); it is stored as a failed
	// order, or was stored so by an earlier delivery, and its units must go back on
	// sale (releasing is idempotent, so a redelivery releases again safely).
	Failed
	// VoucherGone: its voucher no longer exists, so nothing could be stored.
	VoucherGone
)

// PersistResult pairs a reservation's order id with what became of it.
type PersistResult struct {
	OrderID domain.OrderID
	Outcome PersistOutcome
	// Reason explains Failed and VoucherGone.
	Reason string
}

// Orders stores orders.
type Orders interface {
	// Persist stores reservations as orders in one transaction, idempotently by order
	// id, moving each voucher's sold counter under the guard sold + quantity <= stock.
	// It returns one result per reservation, in order. An error means nothing was
	// stored.
	Persist(ctx context.Context, rs []domain.Reservation) ([]PersistResult, error)
	// Get returns one order, or domain.ErrNotFound.
	Get(ctx context.Context, id domain.OrderID) (domain.Order, error)
	// ListByUser returns a user's orders, newest first; voucher 0 means every voucher.
	ListByUser(ctx context.Context, user domain.UserID, voucher domain.VoucherID) ([]domain.Order, error)
	// UnitsByStatus returns the units a voucher's orders hold in each status.
	UnitsByStatus(ctx context.Context, voucher domain.VoucherID) (map[domain.OrderStatus]int, error)
}
