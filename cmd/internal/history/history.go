// Package history checks the record of one voucher's sale — every request sent, every
// answer received, and the state the service settled in — against the promises
// seckill makes, whatever faults were injected while it ran: every 202 is exactly one
// order, no user holds two live orders, nothing is oversold, a sale whose demand
// exceeded its stock sells all of it, every 202 was a grab inside the sale's window by
// the sale's clock, the stats add up — at the end and in every sample taken while the
// sale ran — pay and cancel answers are borne out by the orders, and an answer lost to
// a fault (a 503, a timeout, a killed instance) left
// nothing behind that asking again would not report. A history recorded with the
// times of each request is also checked for linearizability (linear.go, model.go):
// one sale, taking each request at one moment between its call and its answer,
// must be able to have given every answer — no sold_out while a unit was free, no
// 202 without one, no draw handing a unit to a user who gave theirs back.
//
// A fault-injection run records a History as it goes and passes it to Check once the
// service has settled (nothing queued, nothing pending): Check returns every
// violation it finds, so a failing seed's report says all that went wrong at once.
package history

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"
)

// Op is the kind of request a Request records.
type Op string

// The requests a sale's history holds.
const (
	OpGrab   Op = "grab"
	OpPay    Op = "pay"
	OpCancel Op = "cancel"
	// OpList is GET /api/v1/orders?voucher_id=: the user asking which orders they hold.
	OpList Op = "list"
	// OpEdit is an admin's PATCH /api/v1/vouchers/{id} adding or removing units.
	OpEdit Op = "edit"
)

// Request is one request and the answer it got.
type Request struct {
	Op   Op
	User int64
	// OrderID is the order a pay or cancel named; for a grab, the order its answer
	// named (a 202's, or an already_purchased's), if any.
	OrderID string
	// Status is the HTTP status of the answer; 0 when none came (a timeout, a
	// connection refused or cut by a killed instance).
	Status int
	// Code is the error code of a 4xx or 5xx answer.
	Code string
	// Listed are the orders a list answered with.
	Listed []string
	// Units are the units an edit added (negative: removed).
	Units int
	// Pass is the waiting room's pass a grab presented, if any.
	Pass string
	// Call and Return are when the request was sent and its answer (or the fault
	// that cut it off) came; a history without them is not checked for
	// linearizability.
	Call, Return time.Time
}

// answered reports whether the request got an answer that says what happened.
// A 503 says "nothing was done, or the outcome is unknown", so it does not.
func (r Request) answered() bool {
	return r.Status != 0 && r.Status != http.StatusServiceUnavailable
}

// Order is one order row as the database holds it at the end.
type Order struct {
	ID       string
	User     int64
	Quantity int
	// Status is the contract's: queued, awaiting_payment, paid, cancelled, expired
	// or failed.
	Status string
	// CreatedAt is when the grab was judged, by the sale's clock (the stock stamps
	// it).
	CreatedAt time.Time
}

// live reports whether the order holds units (awaiting payment or paid; a queued
// order does too, but a settled history has none).
func (o Order) live() bool {
	return o.Status == "queued" || o.Status == "awaiting_payment" || o.Status == "paid"
}

// Stats are the voucher's stats as GET /api/v1/vouchers/{id}/stats answers them.
type Stats struct {
	Stock, Remaining, Queued, AwaitingPayment, Paid, Cancelled, Expired, Failed int
	Pending                                                                     int64
}

// History is one voucher's sale: what was asked and answered, in the order sent
// (per user at least), and what the service settled in.
type History struct {
	// Stock is the stock the sale was created with; each edit answered 200 moves it
	// by its Units.
	Stock int
	// BeginsAt and EndsAt are the sale's window.
	BeginsAt, EndsAt time.Time
	Requests         []Request
	Orders           []Order
	Stats            Stats
	// Samples are the stats read while the sale ran, each of one moment.
	Samples []Stats
	// Drifts are what `seckill reconcile --json` reported for the voucher at the end;
	// none when Redis and the database agree.
	Drifts []string
	// Limit is the per-user limit (0: 1).
	Limit int
	// Draw says the sale's units were drawn: an entrant is handed a unit at most once.
	Draw bool
	// Hands are the units a draw or a waitlist handed on, in no particular order.
	Hands []Hand
	// Settled is when Stats was read; zero: at the last answer.
	Settled time.Time
	// Unsure are the stretches in which Redis may have been out of reach: a cancel
	// answered 200 in one may return its units after its answer (ReleaseClosed).
	Unsure []Interval
}

// Violation is one broken promise.
type Violation struct {
	// Kind names the promise.
	Kind string
	// Detail says where, with the users and orders concerned.
	Detail string
}

func (v Violation) String() string { return v.Kind + ": " + v.Detail }

// The kinds of Violation.
const (
	NotSettled         = "not settled"
	AcceptedWithoutRow = "202 without exactly one order"
	OutsideTheWindow   = "202 for a grab outside the sale's window"
	OrderIDReused      = "one order id for two grabs"
	DuplicateOrderRow  = "order row twice"
	TwoLiveOrders      = "two live orders for one user"
	Oversold           = "oversold"
	NotSoldOut         = "demand exceeded stock but units are left"
	StatsDoNotAddUp    = "stats do not add up"
	SampleDoesNotAddUp = "stats read during the sale do not add up"
	StatsDisagree      = "stats disagree with the orders"
	UnknownOrderNamed  = "already_purchased names no order of the user"
	UnreportedOrder    = "an order its user was never told of"
	TransitionNotBorne = "pay or cancel answered 200 but the order says otherwise"
	ReconcileDrift     = "reconcile reports drift"
)

// Check returns an error listing every violation in h, or nil when it keeps every
// promise.
func Check(h History) error {
	vs := Violations(h)
	if len(vs) == 0 {
		return nil
	}
	lines := make([]string, len(vs))
	for i, v := range vs {
		lines[i] = v.String()
	}
	return errors.New(strings.Join(lines, "\n"))
}

// Violations returns every violation in h, grouped by kind in the order checked.
func Violations(h History) []Violation {
	c := &checker{h: h, rows: make(map[string]Order, len(h.Orders))}
	if h.Stats.Queued != 0 || h.Stats.Pending != 0 {
		c.add(NotSettled, "%d units queued, %d entries pending: check a settled sale", h.Stats.Queued, h.Stats.Pending)
	}
	for _, o := range h.Orders {
		if _, seen := c.rows[o.ID]; seen {
			c.add(DuplicateOrderRow, "order %s", o.ID)
		}
		c.rows[o.ID] = o
	}
	c.accepted()
	c.liveUnits()
	c.stats()
	c.samples()
	c.told()
	c.transitions()
	if len(h.Drifts) > 0 {
		c.add(ReconcileDrift, "%s", strings.Join(h.Drifts, "; "))
	}
	c.linearizable(linearTimeout)
	return c.out
}

// linearTimeout bounds the linearizability search of one history (and each of the
// searches that name the first answer out of place: an eighth of it).
const linearTimeout = 2 * time.Minute

// checker holds one history, its order rows by id, and the violations found so far.
type checker struct {
	h    History
	rows map[string]Order
	out  []Violation
}

func (c *checker) add(kind, format string, args ...any) {
	c.out = append(c.out, Violation{Kind: kind, Detail: fmt.Sprintf(format, args...)})
}

// accepted: every 202 names exactly one order row, of the user it answered, judged
// inside the sale's window; no order id answers two grabs.
func (c *checker) accepted() {
	acceptedBy := map[string]int64{}
	for _, r := range c.h.Requests {
		if r.Op != OpGrab || r.Status != http.StatusAccepted {
			continue
		}
		if u, seen := acceptedBy[r.OrderID]; seen {
			c.add(OrderIDReused, "order %s answered 202 to user %d and to user %d", r.OrderID, u, r.User)
			continue
		}
		acceptedBy[r.OrderID] = r.User
		o, ok := c.rows[r.OrderID]
		switch {
		case !ok:
			c.add(AcceptedWithoutRow, "user %d got 202 for order %s, which is not in the database", r.User, r.OrderID)
		case o.User != r.User:
			c.add(AcceptedWithoutRow, "user %d got 202 for order %s, which the database gives user %d", r.User, r.OrderID, o.User)
		case o.CreatedAt.Before(c.h.BeginsAt) || !o.CreatedAt.Before(c.h.EndsAt):
			c.add(OutsideTheWindow, "user %d got 202 for order %s, judged at %s, outside [%s, %s)", r.User, r.OrderID,
				o.CreatedAt.Format(time.RFC3339Nano), c.h.BeginsAt.Format(time.RFC3339Nano), c.h.EndsAt.Format(time.RFC3339Nano))
		}
	}
}

// liveUnits: at most one live order per user; live units within the stock, and all of
// it sold when the sale said sold_out and no unit ever came back.
func (c *checker) liveUnits() {
	liveOf := map[int64][]string{}
	live := 0
	for _, o := range c.h.Orders {
		if o.live() {
			liveOf[o.User] = append(liveOf[o.User], o.ID)
			live += o.Quantity
		}
	}
	for _, u := range sortedKeys(liveOf) {
		if ids := liveOf[u]; len(ids) > 1 {
			c.add(TwoLiveOrders, "user %d holds %s", u, strings.Join(ids, ", "))
		}
	}
	stock := c.stock()
	if live > stock {
		c.add(Oversold, "%d units in live orders, stock %d", live, stock)
	}
	if live < stock && soldOutAnswered(c.h.Requests) && !unitsReturned(c.h.Orders) && !unitsAdded(c.h.Requests) {
		c.add(NotSoldOut, "grabs were answered sold_out and no unit came back, yet only %d of %d units are sold", live, stock)
	}
}

// stock is the sale's stock at the end: as created, moved by every edit answered 200.
func (c *checker) stock() int {
	stock := c.h.Stock
	for _, r := range c.h.Requests {
		if r.Op == OpEdit && r.Status == http.StatusOK {
			stock += r.Units
		}
	}
	return stock
}

// stats: the stats add up, and agree with the orders.
func (c *checker) stats() {
	s := c.h.Stats
	if stock := c.stock(); s.Stock != stock || s.Remaining+s.Queued+s.AwaitingPayment+s.Paid != s.Stock {
		c.add(StatsDoNotAddUp, "stock %d (voucher %d) != remaining %d + queued %d + awaiting_payment %d + paid %d",
			s.Stock, stock, s.Remaining, s.Queued, s.AwaitingPayment, s.Paid)
	}
	units := map[string]int{}
	for _, o := range c.h.Orders {
		units[o.Status] += o.Quantity
	}
	for _, st := range []struct {
		status string
		stat   int
	}{
		{"queued", s.Queued}, {"awaiting_payment", s.AwaitingPayment}, {"paid", s.Paid},
		{"cancelled", s.Cancelled}, {"expired", s.Expired}, {"failed", s.Failed},
	} {
		if units[st.status] != st.stat {
			c.add(StatsDisagree, "stats say %d units %s, the orders %d", st.stat, st.status, units[st.status])
		}
	}
}

// samples: every stats sample adds up, with no figure below zero.
func (c *checker) samples() {
	for i, s := range c.h.Samples {
		negative := min(s.Stock, s.Remaining, s.Queued, s.AwaitingPayment, s.Paid, s.Cancelled, s.Expired, s.Failed) < 0
		if negative || s.Remaining+s.Queued+s.AwaitingPayment+s.Paid != s.Stock {
			c.add(SampleDoesNotAddUp, "sample %d of %d: stock %d, remaining %d + queued %d + awaiting_payment %d + paid %d (cancelled %d, expired %d, failed %d)",
				i+1, len(c.h.Samples), s.Stock, s.Remaining, s.Queued, s.AwaitingPayment, s.Paid, s.Cancelled, s.Expired, s.Failed)
		}
	}
}

// told: what a user was told agrees with the orders: an already_purchased names one
// of theirs, and every order of theirs that did not fail was named to them by a
// grab's answer or a list — unless their last request went unanswered (no retry came
// to ask) or was a grab answered sold_out, which the contract lets a holder get too.
func (c *checker) told() {
	told := map[int64]map[string]bool{}
	last := map[int64]Request{}
	tell := func(user int64, id string) {
		if told[user] == nil {
			told[user] = map[string]bool{}
		}
		told[user][id] = true
	}
	for _, r := range c.h.Requests {
		if r.Op != OpGrab && r.Op != OpList {
			continue
		}
		last[r.User] = r
		if r.Op == OpGrab && r.Status == http.StatusConflict && r.Code == "already_purchased" {
			if o, ok := c.rows[r.OrderID]; !ok || o.User != r.User {
				c.add(UnknownOrderNamed, "user %d was told of order %q", r.User, r.OrderID)
			}
		}
		if !r.answered() {
			continue
		}
		if r.OrderID != "" {
			tell(r.User, r.OrderID)
		}
		for _, id := range r.Listed {
			tell(r.User, id)
		}
	}
	for _, o := range c.h.Orders {
		// A failed order gave its units back: not knowing of it costs its user nothing.
		if told[o.User][o.ID] || o.Status == "failed" {
			continue
		}
		if l, asked := last[o.User]; asked && (!l.answered() || l.Op == OpGrab && l.Code == "sold_out") {
			continue
		}
		c.add(UnreportedOrder, "order %s of user %d (%s) was never named to them", o.ID, o.User, o.Status)
	}
}

// transitions: a pay or cancel answered 200 is the order's final word: paid stays
// paid, and a cancelled order was not paid.
func (c *checker) transitions() {
	for _, r := range c.h.Requests {
		if (r.Op != OpPay && r.Op != OpCancel) || r.Status != http.StatusOK {
			continue
		}
		want := map[Op]string{OpPay: "paid", OpCancel: "cancelled"}[r.Op]
		if o, ok := c.rows[r.OrderID]; !ok || o.Status != want {
			c.add(TransitionNotBorne, "%s of order %s answered 200, the order is %q", r.Op, r.OrderID, o.Status)
		}
	}
}

// soldOutAnswered reports whether any grab was answered sold_out.
func soldOutAnswered(rs []Request) bool {
	return slices.ContainsFunc(rs, func(r Request) bool {
		return r.Op == OpGrab && r.Status == http.StatusConflict && r.Code == "sold_out"
	})
}

// unitsAdded reports whether an edit answered 200 put units on sale.
func unitsAdded(rs []Request) bool {
	return slices.ContainsFunc(rs, func(r Request) bool {
		return r.Op == OpEdit && r.Status == http.StatusOK && r.Units > 0
	})
}

// unitsReturned reports whether any order gave its units back to the sale.
func unitsReturned(os []Order) bool {
	return slices.ContainsFunc(os, func(o Order) bool {
		return o.Status == "cancelled" || o.Status == "expired" || o.Status == "failed"
	})
}

func sortedKeys[V any](m map[int64]V) []int64 {
	keys := make([]int64, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
