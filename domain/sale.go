package domain

import "time"

// Sale is a voucher's sale state as a stock holds it when it judges a grab: the
// operator's pause, the window, the per-user limit and the units left.
type Sale struct {
	Paused       bool
	BeginsAt     time.Time
	EndsAt       time.Time
	PerUserLimit int
	Remaining    int
}

// Judge is the grab rule: it decides whether r may take r.Quantity units of the sale,
// given held, the order r.UserID already holds of the voucher ("" for none). It checks,
// in this order, and answers the first rule r breaks:
//
//  1. the sale is paused: ErrPaused;
//  2. the window, judged at r.At to the millisecond (the precision the stocks keep):
//     ErrNotStarted before BeginsAt, ErrEnded from EndsAt on;
//  3. the per-user limit: a *ValidationError on quantity;
//  4. an order already held: an *AlreadyPurchasedError naming held;
//  5. the units left: ErrSoldOut when fewer than r.Quantity remain.
//
// It returns nil when r may be taken. Every ports.Stock written in Go calls it once it
// has read the state; the Redis grab script (adapters/redisstore/reserve.lua) is the
// one other copy of the rule, held to it by the stock contract suite. A stock with a
// per-user rate judges the rate before Judge, and one with a bound on the backlog
// judges it after (ARCHITECTURE.md, "Where the rules live").
func (s Sale) Judge(r Reservation, held OrderID) error {
	if s.Paused {
		return ErrPaused
	}
	if err := window(toMillis(s.BeginsAt), toMillis(s.EndsAt), toMillis(r.At)); err != nil {
		return err
	}
	switch {
	case r.Quantity > s.PerUserLimit:
		return Invalid("quantity", "exceeds the per-user limit")
	case held != "":
		return &AlreadyPurchasedError{OrderID: held}
	case s.Remaining < r.Quantity:
		return ErrSoldOut
	}
	return nil
}

// toMillis drops t's sub-millisecond part.
func toMillis(t time.Time) time.Time {
	return time.UnixMilli(t.UnixMilli())
}
