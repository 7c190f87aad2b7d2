package domain

import "time"

// OrderID identifies an order. The application generates it before the reservation
// is made (time-ordered, unique across instances), so the id a grab answers with is the
// id the persisted order keeps.
type OrderID string

// OrderStatus is where an order is in its life.
type OrderStatus string

// The statuses of an order.
const (
	// StatusQueued: reserved in Redis, not yet persisted.
	StatusQueued OrderStatus = "queued"
	// StatusAwaitingPayment: persisted, waiting for the user to pay.
	StatusAwaitingPayment OrderStatus = "awaiting_payment"
	// StatusPaid: paid; final.
	StatusPaid OrderStatus = "paid"
	// StatusCancelled: cancelled by the user; its units went back on sale.
	StatusCancelled OrderStatus = "cancelled"
	// StatusExpired: not paid in time; its units went back on sale.
	StatusExpired OrderStatus = "expired"
	// StatusFailed: the reservation could never become an order; its units went back.
	StatusFailed OrderStatus = "failed"
)

// statuses lists every status, in the order of an order's life.
var statuses = []OrderStatus{StatusQueued, StatusAwaitingPayment, StatusPaid, StatusCancelled, StatusExpired, StatusFailed}

// transitions is the order state machine: the statuses each status may become. No
// status is reached twice in one order's life (the machine has no cycle), so a status
// an order has left never comes back; the stores rely on it when they retry a
// conditional update.
var transitions = map[OrderStatus][]OrderStatus{
	StatusQueued:          {StatusAwaitingPayment, StatusFailed},
	StatusAwaitingPayment: {StatusPaid, StatusCancelled, StatusExpired, StatusFailed},
}

// Valid reports whether s is one of the statuses above.
func (s OrderStatus) Valid() bool {
	for _, v := range statuses {
		if s == v {
			return true
		}
	}
	return false
}

// HoldsStock reports whether an order in status s keeps its units off the sale.
func (s OrderStatus) HoldsStock() bool {
	return s == StatusQueued || s == StatusAwaitingPayment || s == StatusPaid
}

// Final reports whether s is an order's last status: paid, cancelled, expired or
// failed — no status follows it.
func (s OrderStatus) Final() bool {
	return s.Valid() && len(transitions[s]) == 0
}

// CanBecome reports whether an order may move from s to next.
func (s OrderStatus) CanBecome(next OrderStatus) bool {
	for _, t := range transitions[s] {
		if t == next {
			return true
		}
	}
	return false
}

// ReachableFrom returns the statuses from which an order may become s, in the order
// of an order's life; none for a status no transition reaches. A store moves an order
// to s with one update conditional on its status being one of these.
func (s OrderStatus) ReachableFrom() []OrderStatus {
	var from []OrderStatus
	for _, f := range statuses {
		if f.CanBecome(s) {
			from = append(from, f)
		}
	}
	return from
}

// MaxQuantity bounds the units a single grab may ask for, before any voucher's own
// per-user limit is consulted.
const MaxQuantity = 1000

// Reservation is what a successful grab records: Quantity units of VoucherID held for
// UserID under OrderID, at At (the application's clock), to be paid by Expires.
//
// Pass and Proven are what the grab brought to its gates (Sale.Judge, rules 1 and 2),
// checked by the caller before the stock judges it; they are not recorded: no stream
// entry, order or record carries them.
type Reservation struct {
	OrderID   OrderID
	VoucherID VoucherID
	UserID    UserID
	Quantity  int
	At        time.Time
	// Expires is its order's payment deadline: At plus the payment window in force when
	// the stock took it (PaymentWindow.Deadline), recorded with it and kept from then on
	// (DESIGN.md v1.3 "Time"), through a restart with another window. The stock stamps
	// it when it takes the reservation, as it stamps At; zero only on a reservation
	// recorded before deadlines were, whose deadline is its At plus the window of
	// whoever reads it.
	Expires time.Time
	// Pass is the expiry of the waiting room's pass the grab carries, whose signature
	// the caller verified (VerifyPass) for this user and voucher; zero: none. The
	// stock takes a pass once: the reservation it admits uses it up.
	Pass time.Time
	// Proven reports that the caller verified a solved challenge of this user for
	// this voucher (a proof of work).
	Proven bool
}

// Validate checks that r can be recorded and read back: a quantity of at least 1, an
// order id, a positive user. It returns a *ValidationError naming the first field that
// is wrong, in that order. The grab's limits (MaxQuantity, the voucher's per-user
// limit) are judged elsewhere: by the use case and by Sale.Judge.
func (r Reservation) Validate() error {
	switch {
	case r.Quantity < 1:
		return Invalid("quantity", "must be at least 1")
	case r.OrderID == "":
		return Invalid("order_id", "must not be empty")
	case r.UserID < 1:
		return Invalid("user", "must be a positive integer")
	}
	return nil
}

// Order is a reservation as the database keeps it, with its status.
type Order struct {
	ID        OrderID
	VoucherID VoucherID
	UserID    UserID
	Quantity  int
	Status    OrderStatus
	CreatedAt time.Time
	// ExpiresAt is its payment deadline as recorded when it was reserved (its
	// reservation's Expires); zero when none was recorded. Read it through
	// PaymentWindow.ExpiresAt, which also knows when it no longer applies.
	ExpiresAt time.Time
}

// Reservation returns the reservation o was made from: its units held by its user
// since its creation, to be paid by its deadline.
func (o Order) Reservation() Reservation {
	return Reservation{OrderID: o.ID, VoucherID: o.VoucherID, UserID: o.UserID, Quantity: o.Quantity, At: o.CreatedAt,
		Expires: o.ExpiresAt}
}

// Order returns the order r makes with status s: created at r.At, to be paid by
// r.Expires.
func (r Reservation) Order(s OrderStatus) Order {
	return Order{ID: r.OrderID, VoucherID: r.VoucherID, UserID: r.UserID, Quantity: r.Quantity, Status: s,
		CreatedAt: r.At, ExpiresAt: r.Expires}
}

// ParseOrderID checks that s looks like an order id the application mints: a ULID, 26
// characters of Crockford's base32. It returns a *ValidationError otherwise.
func ParseOrderID(s string) (OrderID, error) {
	if len(s) != 26 || s[0] > '7' {
		return "", Invalid("id", "must be a 26-character order id")
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'A' && c <= 'Z' && c != 'I' && c != 'L' && c != 'O' && c != 'U') {
			return "", Invalid("id", "must be a 26-character order id")
		}
	}
	return OrderID(s), nil
}

// PaymentWindow is how long an order may wait for its payment from the moment it was
// reserved (SECKILL_PAYMENT_TIMEOUT). It is the one rule of an unpaid order's deadline:
// the deadline an order is answered with, the payment it refuses after it, and the
// orders the sweeper expires all come from it. The deadline is decided once, when the
// order is reserved (Deadline), and recorded with it: a change of the window applies
// to the orders reserved after it, never to one whose deadline was announced.
type PaymentWindow time.Duration

// Deadline returns the payment deadline of an order reserved at at under w.
func (w PaymentWindow) Deadline(at time.Time) time.Time {
	return at.Add(time.Duration(w))
}

// ExpiresAt returns when o expires if it is not paid by then — its recorded ExpiresAt,
// or, for an order recorded before deadlines were, its CreatedAt (the sale's clock at
// the grab) plus w — and true while o is queued or awaiting payment; for any other
// status there is nothing left to expire, and it returns false.
func (w PaymentWindow) ExpiresAt(o Order) (time.Time, bool) {
	if o.Status != StatusQueued && o.Status != StatusAwaitingPayment {
		return time.Time{}, false
	}
	if !o.ExpiresAt.IsZero() {
		return o.ExpiresAt, true
	}
	return w.Deadline(o.CreatedAt), true
}

// Lapsed reports whether o's window has passed at now: now is after ExpiresAt. A
// payment of a lapsed order is refused; the sweeper expires it.
func (w PaymentWindow) Lapsed(o Order, now time.Time) bool {
	at, ok := w.ExpiresAt(o)
	return ok && now.After(at)
}

// DueBefore returns the creation time before which an order still awaiting payment
// with no recorded deadline has lapsed at now (see Lapsed): the sweeper expires those
// created before it, and those whose recorded deadline is before now.
func (w PaymentWindow) DueBefore(now time.Time) time.Time {
	return now.Add(-time.Duration(w))
}
