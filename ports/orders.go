package ports

import (
	"context"
	"strings"
	"time"

	"github.com/seckill/seckill/domain"
)

// OrderKey is an order's place in a list of orders, newest first: by CreatedAt, then by
// ID, both descending.
type OrderKey struct {
	CreatedAt time.Time
	ID        domain.OrderID
}

// KeyOf returns the key of order o.
func KeyOf(o domain.Order) OrderKey {
	return OrderKey{CreatedAt: o.CreatedAt, ID: o.ID}
}

// Compare returns -1, 0 or +1 as k sorts before, with or after o in a list newest
// first: a newer key sorts before an older one.
func (k OrderKey) Compare(o OrderKey) int {
	if c := o.CreatedAt.Compare(k.CreatedAt); c != 0 {
		return c
	}
	return strings.Compare(string(o.ID), string(k.ID))
}

// OrderQuery selects a page of one user's orders.
type OrderQuery struct {
	// Voucher, when not 0, keeps only the orders of that voucher.
	Voucher domain.VoucherID
	// After, when not nil, keeps only the orders that sort after it, newest first: the
	// key of the last order of the previous page (the keyset cursor).
	After *OrderKey
	// Limit is the most orders returned; it is at least 1.
	Limit int
}

// VoucherOrderQuery selects a page of one voucher's orders, oldest (lowest id) first.
type VoucherOrderQuery struct {
	// Status, when not empty, keeps only the orders in that status.
	Status domain.OrderStatus
	// After, when not empty, keeps only the orders whose id sorts after it: the last
	// id of the previous page (the keyset cursor).
	After domain.OrderID
	// Limit is the most orders returned; it is at least 1.
	Limit int
}

// OrderIDs mints order ids: time-ordered and unique across instances.
type OrderIDs interface {
	NewOrderID() domain.OrderID
	// DerivedOrderID returns the order id that at and key name: the same id for the
	// same two on every call and every instance, ordered by at among ids, and, for
	// distinct keys, distinct. A draw's steps are given such ids, so a step carried
	// out again (the draw resumed after Redis forgot its progress) is known by the
	// order it made the first time.
	DerivedOrderID(at time.Time, key []byte) domain.OrderID
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

// FirstOfEach returns rs with every repeat of an order id left out, in order: a batch
// that holds an order twice holds one reservation delivered twice, and Persist stores
// the first.
func FirstOfEach(rs []domain.Reservation) []domain.Reservation {
	unique := make([]domain.Reservation, 0, len(rs))
	seen := make(map[domain.OrderID]bool, len(rs))
	for _, r := range rs {
		if !seen[r.OrderID] {
			seen[r.OrderID] = true
			unique = append(unique, r)
		}
	}
	return unique
}

// AnswerRepeats answers each of rs, in order, from outcomes, what persisting
// FirstOfEach(rs) did by order id: the first of an order id gets its outcome, a repeat
// answers AlreadyPersisted as a redelivery would — unless the voucher is gone, which
// it is for every copy.
func AnswerRepeats(rs []domain.Reservation, outcomes map[domain.OrderID]PersistResult) []PersistResult {
	out := make([]PersistResult, len(rs))
	answered := make(map[domain.OrderID]bool, len(outcomes))
	for i, r := range rs {
		res := outcomes[r.OrderID]
		if answered[r.OrderID] && res.Outcome != VoucherGone {
			res = PersistResult{OrderID: r.OrderID, Outcome: AlreadyPersisted}
		}
		answered[r.OrderID] = true
		out[i] = res
	}
	return out
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
	// ListByUser returns one page of a user's orders, newest first (by OrderKey): at
	// most q.Limit of those q selects. Paged in place of an unbounded list, since a
	// user's history only grows.
	ListByUser(ctx context.Context, user domain.UserID, q OrderQuery) ([]domain.Order, error)
	// UnitsByStatus returns the units a voucher's orders hold in each status. With at
	// (nil: none) they are those of the moment at runs: while it runs, no change of
	// the voucher's stock or of the units its live orders hold commits (at must not
	// use this store but through the context it is given). Its error is returned as
	// it is.
	UnitsByStatus(ctx context.Context, voucher domain.VoucherID, at func(context.Context) error) (map[domain.OrderStatus]int, error)
}

// OrderLifecycle moves persisted orders through their states. Every change is a
// conditional update on the current state, so of two racing changes exactly one wins.
type OrderLifecycle interface {
	// Transition moves the order id of user (0: of any user) from awaiting_payment to
	// to (paid, cancelled or expired). Closing it (cancelled, expired) also takes its
	// units off the voucher's sold counter, in the same transaction. It returns the
	// order as it now is, or domain.ErrNotFound (no such order of that user) or
	// domain.ErrInvalidState (it is not awaiting payment). With a receipt (nil: none) it
	// keeps the receipt's answer in the same transaction, or changes nothing and
	// returns ErrClaimLost when the claim no longer holds the key.
	Transition(ctx context.Context, id domain.OrderID, user domain.UserID, to domain.OrderStatus, r *Receipt[domain.Order]) (domain.Order, error)
	// ExpireDue expires up to limit orders awaiting payment whose window lapsed at now
	// (w.Lapsed: their recorded deadline is before now or, for one recorded without a
	// deadline, its creation is before w.DueBefore(now)), as Transition would, skipping
	// those another instance is expiring at the same time, and returns the ones it
	// expired.
	ExpireDue(ctx context.Context, now time.Time, w domain.PaymentWindow, limit int) ([]domain.Order, error)
}

// Releases remembers which closed orders still have to give their units back to the
// sale, so a release that failed (Redis down) is retried until it succeeds, across
// restarts.
type Releases interface {
	// Unreleased returns up to limit closed orders (cancelled, expired, failed) whose
	// units are not yet marked released, oldest first.
	Unreleased(ctx context.Context, limit int) ([]domain.Order, error)
	// MarkReleased records that these orders' units are back on sale.
	MarkReleased(ctx context.Context, ids ...domain.OrderID) error
}

// Payments is where a payment gateway plugs in. Pay authorizes before the order is
// marked paid and voids the authorization if the order could not be marked (it
// expired or was cancelled meanwhile).
type Payments interface {
	// Authorize reserves the order's amount with the gateway.
	Authorize(ctx context.Context, o domain.Order) error
	// Void cancels an authorization that will not be captured.
	Void(ctx context.Context, o domain.Order) error
}

// Ledger is what the database holds for one voucher, read consistently.
type Ledger struct {
	Voucher domain.Voucher
	Orders  []domain.Order
}

// OrderAudit inspects and repairs the database side of a voucher.
type OrderAudit interface {
	// Ledger returns a voucher and all its orders as of one moment, or
	// domain.ErrNotFound.
	Ledger(ctx context.Context, id domain.VoucherID) (Ledger, error)
	// RecountSold sets a voucher's sold counter to the units of its live orders,
	// without racing concurrent fulfillment, and returns the new value.
	RecountSold(ctx context.Context, id domain.VoucherID) (int, error)
}
