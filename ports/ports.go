// Package ports declares what the use cases need from the outside world. The core owns
// these interfaces; adapters implement them.
package ports

import (
	"context"
	"fmt"
	"strings"
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

// Vouchers stores vouchers. Every admin change of one is written with its audit
// log entry (domain.VoucherAudit) in one transaction: a change that fails leaves no
// entry.
type Vouchers interface {
	// Create stores v, with the audit entry of its creation by by, and sets v.ID and
	// v.CreatedAt. With a receipt (nil: none) it keeps the receipt's answer in the
	// same transaction, or stores nothing and returns ErrClaimLost when the claim no
	// longer holds the key.
	Create(ctx context.Context, v *domain.Voucher, by domain.Author, r *Receipt[domain.Voucher]) error
	// Get returns one voucher, or domain.ErrNotFound.
	Get(ctx context.Context, id domain.VoucherID) (domain.Voucher, error)
	// List returns one page of vouchers, newest (highest id) first: at most q.Limit of
	// those q selects. It is the only list of vouchers the API reads, so it is paged
	// (one method, not an unbounded List beside a paged one: nothing may read them all).
	List(ctx context.Context, q VoucherQuery) ([]domain.Voucher, error)
	// Active returns the vouchers whose sale has not ended at now.
	Active(ctx context.Context, now time.Time) ([]domain.Voucher, error)
	// Update changes voucher id as u says, in one transaction that holds the
	// voucher's lock throughout (no other Update or Hold of it runs meanwhile), and
	// returns the voucher as it now is, or domain.ErrNotFound. An error from u.Change
	// or u.Commit is returned as it is and stores nothing; so does ErrClaimLost.
	Update(ctx context.Context, id domain.VoucherID, u VoucherUpdate) (domain.Voucher, error)
	// Hold calls fn with voucher id as stored, under the lock Update takes, and
	// returns fn's error, or domain.ErrNotFound: what fn carries from the voucher
	// elsewhere is not overtaken by a change of it. fn must not use this store but
	// through the context it is given (which may carry the transaction).
	Hold(ctx context.Context, id domain.VoucherID, fn func(context.Context, domain.Voucher) error) error
}

// VoucherUpdate is one admin change of a voucher, as Vouchers.Update runs it: read
// the voucher under its lock, Change it, write it with its audit entry (Action by By,
// domain.VoucherAudit), run Commit, keep the Receipt's answer, commit.
type VoucherUpdate struct {
	Action domain.AuditAction
	By     domain.Author
	// Change returns the voucher as the change leaves it, given it as stored. A
	// voucher returned equal to the one given is a change of nothing: nothing is
	// written, no entry either (a receipt's answer is kept all the same).
	Change func(domain.Voucher) (domain.Voucher, error)
	// Commit, when set, runs after the voucher and its entry are written, just before
	// the receipt's answer and the commit, with the voucher before and after: what
	// lies outside the database and must change with it or not at all. It must not use
	// the store but through the context it is given.
	Commit func(ctx context.Context, before, after domain.Voucher) error
	// Receipt, when set, keeps the request's answer in the same transaction.
	Receipt *Receipt[domain.Voucher]
}

// AuditLog is the log of admin changes: append-only, newest first when read.
type AuditLog interface {
	// Append writes e on its own, for a change no database transaction holds (the
	// repairs reconciliation makes in Redis); it sets nothing in e.
	Append(ctx context.Context, e domain.AuditEntry) error
	// List returns one page of entries, newest (highest id) first: at most q.Limit of
	// those q selects.
	List(ctx context.Context, q AuditQuery) ([]domain.AuditEntry, error)
}

// AuditQuery selects a page of the audit log.
type AuditQuery struct {
	// Voucher, when not 0, keeps only the entries of that voucher.
	Voucher domain.VoucherID
	// Before, when not 0, keeps only the entries whose id is below it: the last id of
	// the previous page (the keyset cursor).
	Before int64
	// Limit is the most entries returned; it is at least 1.
	Limit int
}

// SaleStatus is where a voucher's sale stands at a moment.
type SaleStatus string

// The sale statuses a list of vouchers can be filtered by.
const (
	// SaleUpcoming: begins_at is after the moment.
	SaleUpcoming SaleStatus = "upcoming"
	// SaleLive: begins_at is at or before the moment, and ends_at after it.
	SaleLive SaleStatus = "live"
	// SaleEnded: ends_at is at or before the moment.
	SaleEnded SaleStatus = "ended"
)

// VoucherQuery selects a page of vouchers.
type VoucherQuery struct {
	// Before, when not 0, keeps only vouchers whose id is below it: the last id of the
	// previous page (the keyset cursor).
	Before domain.VoucherID
	// Status, when not empty, keeps only the vouchers in that sale status at Now.
	Status SaleStatus
	// Now is the moment Status is judged at.
	Now time.Time
	// Limit is the most vouchers returned; it is at least 1.
	Limit int
}

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

// VoucherOrders reads one voucher's persisted orders, a page at a time, for its
// admin's list and export.
type VoucherOrders interface {
	// ListByVoucher returns one page of the voucher's orders, by id ascending (order
	// ids are time-ordered: oldest first): at most q.Limit of those q selects. Each
	// page is read on its own, holding nothing from one page to the next, so a reader
	// of a million orders never holds what writers wait for (and pages read at
	// different moments: an order is on one page, as it was when that page was read).
	// An unknown voucher has no orders; a q.Limit below 1 returns a
	// *domain.ValidationError.
	ListByVoucher(ctx context.Context, voucher domain.VoucherID, q VoucherOrderQuery) ([]domain.Order, error)
}

// Clock tells the application's time; the grab path judges sale windows by it.
type Clock interface {
	Now() time.Time
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

// IdempotentRequest is what is kept of a write request sent with an idempotency key.
type IdempotentRequest struct {
	// Fingerprint identifies the request (method, route, parameters, body): the same
	// key with another fingerprint is a different request.
	Fingerprint string
	// Status is the first answer's HTTP status; 0 while the first request is still in
	// progress.
	Status int
	// Body is the first answer's body.
	Body []byte
}

// KeyClaim is an idempotency key held by the request in progress under it: whose key,
// and the token that proves this request still holds it. A retry takes the key over
// once the claim's lease has passed (its holder is presumed dead), and from then on
// nothing the old holder does under its token is kept.
type KeyClaim struct {
	User  domain.UserID
	Key   string
	Token string
}

// Held reports whether c is a claim (Idempotency.Claim returns the zero KeyClaim when
// the key is another request's).
func (c KeyClaim) Held() bool { return c.Token != "" }

// ErrClaimLost says that a request's idempotency key was taken over by a retry (its
// lease passed) or already answered, so its answer cannot be kept: the write it would
// have answered for is rolled back. It wraps domain.ErrUnavailable: nothing was done
// by this request, and a retry gets the answer of whichever request holds the key.
var ErrClaimLost = fmt.Errorf("idempotency key taken over by another request: %w", domain.ErrUnavailable)

// Receipt asks a repository to keep a claimed key's answer in the same transaction as
// the write it answers for, so a crash can never leave the work done and its answer
// unkept. T is what the write stores (a voucher, an order).
type Receipt[T any] struct {
	// Claim is the key the answer is kept under, only while Claim still holds it.
	Claim KeyClaim
	// Answer renders the request's answer (an HTTP status and body) from what the
	// write stored, inside its transaction; an error rolls the write back.
	Answer func(T) (status int, body []byte, err error)
}

// Idempotency keeps the answers of write requests by caller and idempotency key, for
// at least a day, so a repeated request is answered as the first one was without
// doing the work again. A request in progress holds its key under a lease; a retry
// that finds the lease passed takes the key over, and every later write of the old
// holder's is refused (it is conditional on the claim's token). Every method returns
// an error wrapping domain.ErrUnavailable when the store cannot be reached; a claim
// whose Complete or Release failed so lapses with its lease.
type Idempotency interface {
	// Claim starts the request fingerprint of user under key at now, holding the key
	// until now + lease. It returns the claim (Held) when the key is free: never used,
	// released, its last request older than a day, or its holder's lease passed with
	// no answer kept (a takeover, whatever that holder's fingerprint). Otherwise it
	// returns the zero KeyClaim and what is kept of the earlier request (Status 0:
	// still in progress).
	Claim(ctx context.Context, user domain.UserID, key, fingerprint string, now time.Time, lease time.Duration) (KeyClaim, IdempotentRequest, error)
	// Complete keeps the answer of a claimed request, only while c holds the key and
	// no answer is kept yet (a Receipt's may be); it reports whether it kept it.
	Complete(ctx context.Context, c KeyClaim, status int, body []byte) (bool, error)
	// Release forgets a claimed request that ended with no answer worth keeping (the
	// work was not done: a retry must do it), so the key may be used again — only
	// while c holds it and no answer is kept.
	Release(ctx context.Context, c KeyClaim) error
	// Purge forgets what was kept before cutoff and returns how many requests.
	Purge(ctx context.Context, cutoff time.Time) (int, error)
}

// Change names what changed: a voucher's sale (Order empty: its terms, its pause, its
// units) or one of its orders (its status). It carries no state: whoever hears of it
// reads the truth again.
type Change struct {
	Voucher domain.VoucherID
	Order   domain.OrderID
}

// Changes tells every instance that an order or a sale changed, so each can wake the
// event streams it holds. It is lossy by design (a hint, never a ledger): a change
// announced while a subscriber is reconnecting is lost, and a stream must read the
// truth again on a timer of its own too.
type Changes interface {
	// Publish announces changes, after the writes they name have committed. It returns
	// an error wrapping domain.ErrUnavailable when the announcement could not be made;
	// the change itself stands.
	Publish(ctx context.Context, changes ...Change) error
	// Subscribe calls fn with each change of voucher v announced from the moment it
	// returns until stop is called, one call at a time; fn must not block. It returns
	// an error wrapping domain.ErrUnavailable when the subscription could not be made.
	// After it returns the subscription rides out reconnections by itself (losing
	// what is announced meanwhile).
	Subscribe(ctx context.Context, v domain.VoucherID, fn func(Change)) (stop func(), err error)
}

// StreamTickets keeps the single-use tickets with which a browser opens an event
// stream (EventSource sends no headers, and a bearer token never goes in a URL). A
// ticket is shared by every instance.
type StreamTickets interface {
	// Issue keeps ticket for user for ttl. It returns an error wrapping
	// domain.ErrUnavailable when the store cannot be reached.
	Issue(ctx context.Context, ticket string, user domain.UserID, ttl time.Duration) error
	// Redeem returns the user a ticket was issued to and forgets it, atomically: a
	// ticket is redeemed once, on whichever instance. It returns domain.ErrNotFound
	// for a ticket unknown, used already or expired, and an error wrapping
	// domain.ErrUnavailable when the store cannot be reached.
	Redeem(ctx context.Context, ticket string) (domain.UserID, error)
}
