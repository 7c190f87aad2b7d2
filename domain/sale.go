package domain

import (
	"errors"
	"time"
)

// Sale is a voucher's sale state as a stock holds it when it judges a grab: how
// buyers are admitted and what they must solve, the operator's pause, the window, the
// per-user limit and the units left.
type Sale struct {
	// Admission and Challenge are the voucher's; "" reads as first come and none.
	Admission Admission
	Challenge ChallengeKind
	// PassOutstanding reports that the stock holds the pass the grab carries
	// (Reservation.Pass) as outstanding: issued to the grab's user for this voucher
	// with that expiry, and not used yet. A stock reads it for a waiting room's grab
	// that carries a pass; it means nothing otherwise.
	PassOutstanding bool
	// Drawn reports that the voucher's draw has been carried out to its end (every
	// winner's order reserved, the backfill in place); it means nothing but for a
	// draw.
	Drawn        bool
	Paused       bool
	BeginsAt     time.Time
	EndsAt       time.Time
	PerUserLimit int
	Remaining    int
	// Campaign, for a voucher of a campaign, is the campaign's side of the grab; nil
	// for a voucher outside any campaign.
	Campaign *CampaignSale
}

// Judge is the grab rule: it decides whether r may take r.Quantity units of the sale,
// given held, the order r.UserID already holds of the voucher ("" for none). It checks,
// in this order, and answers the first rule r breaks:
//
//  1. the challenge: ErrChallengeRequired when the sale asks for a proof of work and
//     r brings none (r.Proven false);
//  2. the admission (admit): ErrQueueRequired for a waiting room's grab without an
//     outstanding pass that is still valid at r.At; ErrNotStarted for a draw's grab
//     until the draw has been carried out;
//  3. the sale is paused: ErrPaused;
//  4. the window, judged at r.At to the millisecond (the precision the stocks keep):
//     ErrNotStarted before BeginsAt, ErrEnded from EndsAt on;
//  5. the per-user limit (the voucher's, and its campaign's): a *ValidationError on
//     quantity;
//  6. an order already held: an *AlreadyPurchasedError naming held;
//  7. a campaign's per-user limit: an *AlreadyPurchasedError naming the orders the
//     user holds of the campaign, when those units and r.Quantity exceed it;
//  8. the units left: ErrSoldOut when fewer than r.Quantity remain;
//  9. a campaign's cap: ErrCampaignSoldOut when fewer than r.Quantity of its units
//     are left under the cap (the voucher has units, the campaign has none for them).
//
// The gates come first: a client that skipped them learns nothing of the sale's state
// (paused, sold out, its own order) without passing them.
//
// It returns nil when r may be taken. Every ports.Stock written in Go calls it once it
// has read the state; the Redis grab script (adapters/redisstore/reserve.lua) is the
// one other copy of the rule, held to it by the stock contract suite. A stock with a
// per-user rate judges the rate before Judge, and one with a bound on the backlog
// judges it after (ARCHITECTURE.md, "Where the rules live"). A stock that takes r
// with a pass uses the pass up in the same step.
func (s Sale) Judge(r Reservation, held OrderID) error {
	if s.Challenge == ChallengePow && !r.Proven {
		return ErrChallengeRequired
	}
	if err := s.admit(r); err != nil {
		return err
	}
	if s.Paused {
		return ErrPaused
	}
	if err := window(toMillis(s.BeginsAt), toMillis(s.EndsAt), toMillis(r.At)); err != nil {
		return err
	}
	switch {
	case r.Quantity > s.PerUserLimit || s.Campaign != nil && r.Quantity > s.Campaign.PerUserLimit:
		return Invalid("quantity", "exceeds the per-user limit")
	case held != "":
		return &AlreadyPurchasedError{OrderID: held}
	}
	c := s.Campaign
	switch {
	case c != nil && len(c.UserOrders) > 0 && c.UserUnits+r.Quantity > c.PerUserLimit:
		return &AlreadyPurchasedError{OrderID: c.UserOrders[0], Orders: c.UserOrders}
	case s.Remaining < r.Quantity:
		return ErrSoldOut
	case c != nil && c.Capped && c.CapLeft < r.Quantity:
		return ErrCampaignSoldOut
	}
	return nil
}

// admit is the admission gate of a first-come grab (Judge, rule 2), the one place the
// admission modes' grab rules live: a waiting room admits a grab that carries a pass
// the stock holds as outstanding (PassOutstanding) and that has not expired at r.At,
// judged to the millisecond (a pass expiring at r.At is expired, as VerifyPass has
// it); first come admits every grab. A draw's units are not on first-come sale until
// the draw has been carried out (Drawn): its grabs answer ErrNotStarted until then —
// the draw's first-come part starts when the draw is over — and are first come's
// after it, for the units the winners left (more units than entrants) or gave back
// with the backfill exhausted. reserve.lua's admitted is its copy.
func (s Sale) admit(r Reservation) error {
	if s.Admission == AdmissionDraw && !s.Drawn {
		return ErrNotStarted
	}
	if s.Admission == AdmissionWaitingRoom {
		if r.Pass.IsZero() || !s.PassOutstanding || !toMillis(r.At).Before(toMillis(r.Pass)) {
			return ErrQueueRequired
		}
	}
	return nil
}

// toMillis drops t's sub-millisecond part.
func toMillis(t time.Time) time.Time {
	return time.UnixMilli(t.UnixMilli())
}

// SaleState is where a voucher's sale stands for its buyers at a moment, as every
// voucher answer says it ("state").
type SaleState string

// The states of a sale.
const (
	// StateUpcoming: the sale has not begun.
	StateUpcoming SaleState = "upcoming"
	// StateLive: the sale is on and units are left.
	StateLive SaleState = "live"
	// StatePaused: an operator has paused the sale within its window.
	StatePaused SaleState = "paused"
	// StateSoldOut: the sale is on and no unit is left (units may come back: an order
	// cancelled or expired).
	StateSoldOut SaleState = "sold_out"
	// StateEnded: the sale's window has closed. Nothing changes it any more.
	StateEnded SaleState = "ended"
)

// State returns v's sale state at now, remaining units left. The first that holds
// wins: ended from EndsAt on, upcoming before BeginsAt, paused, sold_out with no unit
// left, else live. The window is judged to the millisecond, as Judge judges a grab, so
// a voucher reads live exactly when a grab of it is judged in the window.
//
// The order is what a buyer needs told first: an ended sale is over whatever else holds
// (a pause, stock), an upcoming one counts down to BeginsAt (a pause before it is an
// operator's business, and it may be lifted by then); within the window a pause stops
// every grab, sold out or not, so it comes before sold_out.
func (v Voucher) State(now time.Time, remaining int) SaleState {
	switch err := window(toMillis(v.BeginsAt), toMillis(v.EndsAt), toMillis(now)); {
	case errors.Is(err, ErrEnded):
		return StateEnded
	case errors.Is(err, ErrNotStarted):
		return StateUpcoming
	case v.Paused:
		return StatePaused
	case remaining <= 0:
		return StateSoldOut
	}
	return StateLive
}
