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
	// never reset: stock v.Stock, remaining v.Stock - v.Sold (the units the database's
	// live orders hold), never below 0. It says what it found and did (WarmOutcome). A
	// state loaded with v.Sold above 0 is loaded restoring: it answers grabs with an
	// error wrapping domain.ErrUnavailable until the live orders' reservations are
	// restored (RecoverVoucher), so no user who holds an order can grab again
	// meanwhile; Warm reports WarmRestoring for it until they are.
	Warm(ctx context.Context, v domain.Voucher) (WarmOutcome, error)
	// Reserve takes r.Quantity units for r.UserID atomically and records the
	// reservation for fulfillment. The grab is judged at r.At; a zero r.At is judged
	// by the sale's clock at the moment the stock judges it (Redis's TIME, the clock
	// every instance shares), which then stamps the reservation. The voucher's gates
	// come first (domain.Sale.Judge): a proof-of-work sale takes only r.Proven, a
	// waiting room only a grab whose pass (r.Pass) the stock holds outstanding and
	// unexpired, and the reservation uses the pass up in the same step. It returns
	// domain.ErrChallengeRequired, domain.ErrQueueRequired, domain.ErrPaused,
	// domain.ErrNotStarted, domain.ErrEnded (also for a sale the queue has settled), a
	// *domain.ValidationError (quantity below 1 or above the per-user limit), an
	// *domain.AlreadyPurchasedError naming the existing order, domain.ErrSoldOut,
	// domain.ErrNotFound (no sale state for the voucher), a *domain.RateLimitedError
	// (the user's grabs of the voucher are over their rate), or an error wrapping domain.ErrUnavailable (the sale state is being restored,
	// the voucher's backlog is over its bound, the store is down or too busy: nothing
	// was taken, or the outcome is unknown — a retry tells).
	Reserve(ctx context.Context, r domain.Reservation) error
	// Remaining returns the units left of each voucher that has sale state; vouchers
	// without it are absent from the map.
	Remaining(ctx context.Context, ids ...domain.VoucherID) (map[domain.VoucherID]int, error)
	// SetPaused pauses or resumes a voucher's grabs (they answer domain.ErrPaused
	// meanwhile). It reports false when the voucher has no sale state; Warm then loads
	// the flag from the voucher.
	SetPaused(ctx context.Context, id domain.VoucherID, paused bool) (bool, error)
	// Release returns a closed order's units to the sale and forgets the user's
	// reservation, only if that reservation still names o.ID; it reports whether it
	// did. Applied twice it releases once. A voucher without sale state releases
	// nothing. The order is closed for good: no later StockAudit.Restore records it
	// again.
	Release(ctx context.Context, o domain.Order) (bool, error)
	// Edit carries v's terms — stock, window, per-user limit, and v.Version with them
	// — into its sale state, as mode says (see EditMode): the remaining units move by
	// the change of the stock (never below 0), a sale whose end moves later is open
	// to grabs again, and units that come back on sale are announced (every instance
	// drops its sold-out flag). It reports whether it changed anything; a voucher
	// without sale state changes nothing (Warm loads one with the terms). With
	// EditHeldStrict it returns domain.ErrNotEnoughUnits, changing nothing, when the
	// stock takes away more units than remain on sale, and an error wrapping
	// domain.ErrUnavailable while the sale state is being restored.
	Edit(ctx context.Context, v domain.Voucher, mode EditMode) (bool, error)
}

// EditMode says how Stock.Edit treats the version of the terms the sale state holds.
type EditMode int

// The modes of Stock.Edit.
const (
	// EditIfNewer carries the terms only when the sale state holds an older version:
	// a late write of older terms changes nothing. For a write after the change
	// committed, outside the voucher's lock.
	EditIfNewer EditMode = iota
	// EditHeld carries them whatever version the sale state holds: for a caller that
	// holds the voucher's lock (Vouchers.Hold, VoucherUpdate.Commit), so no other
	// change of it is under way and the database's terms are the truth.
	EditHeld
	// EditHeldStrict is EditHeld that refuses with domain.ErrNotEnoughUnits, changing
	// nothing, when fewer units remain on sale than the stock loses.
	EditHeldStrict
)

// WarmOutcome is what Stock.Warm found of a voucher's sale state, and did.
type WarmOutcome int

// The outcomes of Stock.Warm.
const (
	// WarmPresent: the sale state was there and whole; nothing changed.
	WarmPresent WarmOutcome = iota
	// WarmLoaded: it was absent and is loaded, open to grabs (no live order holds
	// units).
	WarmLoaded
	// WarmRestoring: it is marked restoring — loaded now because live orders hold
	// units, or left so by a recovery that did not finish — and answers grabs
	// unavailable until its reservations are restored and it is marked whole
	// (StockAudit.Restored).
	WarmRestoring
	// WarmStale: it was there and whole, but holds terms of another version than the
	// voucher's (an edit whose write to the stock did not land, or one under way);
	// nothing changed. RecoverVoucher carries the voucher's terms into it.
	WarmStale
)

// Reservations reads what the grab path recorded and has not yet been persisted.
type Reservations interface {
	// Find returns the reservation order id names, among the vouchers whose sale state
	// is loaded, or domain.ErrNotFound. User, when not 0, is whose it must be: only
	// that user's reservations are looked at, at a cost that does not grow with the
	// vouchers. 0 looks at every user's, at a cost that grows with the sales going on
	// (for an admin, who does not say whose order it is).
	Find(ctx context.Context, user domain.UserID, id domain.OrderID) (domain.Reservation, error)
	// ForUser returns the reservations a user holds now that may not be persisted yet,
	// at most one per voucher whose sale state is loaded; some persisted ones may be
	// among them.
	ForUser(ctx context.Context, user domain.UserID) ([]domain.Reservation, error)
}

// StockSnapshot is what Redis holds for one voucher. It is read a page at a time, so
// a snapshot taken during a sale is not one moment's state unless Consistent says so.
type StockSnapshot struct {
	// Present is false when the voucher's sale state is gone (never warmed, expired, or
	// lost with a Redis restart); the other fields are then empty.
	Present bool
	// Stock and Remaining are the units on sale and left.
	Stock, Remaining int
	// Reservations are the reservations users hold.
	Reservations []domain.Reservation
	// Unacked are the queue's entries not yet acknowledged (pending or not yet
	// delivered), decoded; malformed entries are left out.
	Unacked []domain.Reservation
	// Consistent says that Remaining and Reservations are one moment's state: nothing
	// changed the remaining or the held units while they were read. When it is false
	// they may disagree with each other (a grab taken between the reads), so their sum
	// proves nothing.
	Consistent bool
	// Read says that the fulfillment workers read the voucher's queue (it is among the
	// queues they read). Entries in Unacked of a queue they do not read would never
	// be persisted.
	Read bool
}

// StockTally is what Redis counts for one voucher: the figures of its stats, kept as
// the sale goes rather than summed from its reservations or its queue.
type StockTally struct {
	// Present is false when the voucher's sale state is gone; the other fields are
	// then empty.
	Present bool
	// Stock and Remaining are the units on sale and left.
	Stock, Remaining int
	// Queued is the units of the queue's entries not yet acknowledged (reserved, not
	// yet persisted).
	Queued int
	// Pending counts the queue's entries not yet acknowledged.
	Pending int64
	// Oldest is when the first entry in the queue not yet acknowledged was reserved;
	// zero when none waits.
	Oldest time.Time
}

// StockAudit inspects and repairs a voucher's sale state, for reconciliation and
// stats. Every repair is idempotent and safe while the sale is live.
type StockAudit interface {
	// Snapshot returns what Redis holds for a voucher.
	Snapshot(ctx context.Context, id domain.VoucherID) (StockSnapshot, error)
	// Tally returns what Redis counts for a voucher, at a cost that does not grow with
	// its reservations or its queue.
	Tally(ctx context.Context, id domain.VoucherID) (StockTally, error)
	// Restore makes the stock agree with the database about the orders given, many
	// at a time (a million take seconds, not a round trip each), whatever it held
	// before. A live order's reservation becomes its user's, replacing one that named
	// another order (a closed one an older snapshot remembers, or a reservation that
	// can never be persisted beside the live order), except an order whose units were
	// released since (Stock.Release: it closed after the caller read it live). A closed
	// order is released for good: its reservation is forgotten while its user's still
	// names it, without touching the remaining units. Recount sets those. It reports,
	// per order, whether the stock agrees with it now (false without sale state, or for
	// a live order released since); on an error some may have been written (restoring
	// again is harmless).
	Restore(ctx context.Context, os ...domain.Order) ([]bool, error)
	// Holds reports which of orders hold a reservation of voucher id now: the
	// targeted second look reconciliation takes before it calls anything drift.
	Holds(ctx context.Context, id domain.VoucherID, orders []domain.OrderID) (map[domain.OrderID]bool, error)
	// Requeue appends a reservation to its voucher's queue again.
	Requeue(ctx context.Context, r domain.Reservation) error
	// Recount sets a voucher's remaining units to stock minus the units its
	// reservations hold, atomically, and returns the new value. An implementation
	// that counts a page at a time may give up while they keep changing, with an
	// error wrapping domain.ErrUnavailable (nothing set: try again later).
	Recount(ctx context.Context, id domain.VoucherID) (int, error)
	// Restoring marks a voucher's sale state as being restored: grabs answer an error
	// wrapping domain.ErrUnavailable until Restored. A voucher without sale state is
	// left as it is.
	Restoring(ctx context.Context, id domain.VoucherID) error
	// Restored marks a voucher's sale state whole once the live orders' reservations
	// are restored, so grabs are taken again (see Stock.Warm). A voucher without sale
	// state, or one already whole, is left as it is.
	Restored(ctx context.Context, id domain.VoucherID) error
}
