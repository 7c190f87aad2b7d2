package load

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"time"
)

// Report is what a flash sale showed, with the checks of the three promises. Its JSON
// is one object with the keys the issue names (plus the sale's voucher, stock, users,
// broken, the verdict — kept, broken, not_served or unverified — why it is
// unverified, and a few examples of other answers).
type Report struct {
	Voucher     string `json:"voucher_id"`
	Stock       int    `json:"stock"`
	Users       int    `json:"users"`
	Concurrency int    `json:"concurrency"`

	Requests         int      `json:"requests"`
	Reserved         int      `json:"reserved"`
	SoldOut          int      `json:"sold_out"`
	AlreadyPurchased int      `json:"already_purchased"`
	Other            int      `json:"other"`
	OtherExamples    []string `json:"other_examples,omitempty"`
	// Oversold and Duplicates are the units beyond the stock and the users holding
	// more than one order: as the store holds them once it was read (Store), else as
	// this run's 202s show them.
	Oversold   int `json:"oversold"`
	Duplicates int `json:"duplicates"`
	// LostOrders counts this run's 202s whose order the store does not hold (or holds
	// as failed); LostAcks the grabs that succeeded though the client saw no answer;
	// OtherOrders the new orders in the store that another client took. All 0 until
	// the store was read.
	LostOrders  int `json:"lost_orders"`
	LostAcks    int `json:"lost_acknowledgements"`
	OtherOrders int `json:"other_clients_orders"`
	// Store says whether the promises were judged by the orders the store holds (its
	// CSV export, read after the wait) rather than by the answers alone.
	Store bool `json:"checked_against_store"`
	// OrdersPersisted are the orders the stats showed persisted for the sale; while
	// Unverified, the last count read (0 if none was).
	OrdersPersisted int     `json:"orders_persisted"`
	P50Ms           float64 `json:"p50_ms"`
	P99Ms           float64 `json:"p99_ms"`
	MaxMs           float64 `json:"max_ms"`
	RPS             float64 `json:"rps"`
	PersistMs       float64 `json:"persist_ms"`
	BrokenPromise   bool    `json:"broken"`
	Verdict         string  `json:"verdict"`
	// Unverified says why the orders persisted could not be counted at the end (the
	// stats did not answer); empty when they were.
	Unverified string `json:"unverified,omitempty"`

	// late is why the orders were not all persisted in time, when they were not.
	late string
}

// The verdicts of a report, strongest first: a promise broken, nothing served, the
// orders persisted not known, every promise checked and kept.
const (
	verdictBroken     = "broken"
	verdictNotServed  = "not_served"
	verdictUnverified = "unverified"
	verdictKept       = "kept"
)

// The verdicts that are not "kept", as errors a command exits with (see Report.Err).
var (
	ErrBroken     = errors.New("a promise was broken")
	ErrNotServed  = errors.New("nothing was served")
	ErrUnverified = errors.New("could not verify")
)

// Sale names what was sold: the voucher, the units on sale when the load began
// (its stock, for a fresh voucher), the users and the concurrency.
type Sale struct {
	Voucher     string
	Stock       int
	Users       int
	Concurrency int
}

// NewReport combines a sale, its Result and what WaitPersisted saw: the orders
// persisted for the sale, how long they took after the last answer, and its error
// (nil, or wrapping ErrNotPersisted or ErrNoStats).
func NewReport(s Sale, r Result, persisted int, persistTook time.Duration, waitErr error) Report {
	rep := Report{
		Voucher: s.Voucher, Stock: s.Stock, Users: s.Users, Concurrency: s.Concurrency,
		Requests: r.Requests, Reserved: r.Reserved, SoldOut: r.SoldOut,
		AlreadyPurchased: r.AlreadyPurchased, Other: r.Other, OtherExamples: r.OtherExamples,
		Oversold: r.Oversold(s.Stock), Duplicates: r.Duplicates(), OrdersPersisted: persisted,
		P50Ms: ms(r.P50), P99Ms: ms(r.P99), MaxMs: ms(r.Max),
		RPS:       math.Round(r.RPS*10) / 10,
		PersistMs: ms(persistTook),
	}
	switch {
	case errors.Is(waitErr, ErrNoStats):
		rep.Unverified = waitErr.Error()
	case waitErr != nil:
		rep.late = waitErr.Error()
	}
	rep.BrokenPromise, rep.Verdict = rep.Broken(), rep.verdict()
	return rep
}

// WithStore returns the report judged by what the store holds (see CheckStore): the
// oversell and the duplicates are the store's, a 202 without its order is a lost
// order, and an order no 202 named is a lost acknowledgement or another client's —
// neither a broken promise.
func (r Report) WithStore(c StoreCheck) Report {
	r.Store = true
	r.Oversold, r.Duplicates, r.LostOrders, r.LostAcks, r.OtherOrders = c.Oversold, c.Duplicates, c.LostOrders, c.LostAcks, c.Others
	r.BrokenPromise, r.Verdict = r.Broken(), r.verdict()
	return r
}

// WithoutStore returns the report of a sale whose orders could not be read from the
// store: unverified, judged by the answers alone.
func (r Report) WithoutStore(err error) Report {
	r.Unverified = err.Error()
	r.BrokenPromise, r.Verdict = r.Broken(), r.verdict()
	return r
}

// ms is d in milliseconds, to the microsecond.
func ms(d time.Duration) float64 {
	return math.Round(float64(d)/float64(time.Microsecond)) / 1000
}

// Broken reports whether a promise was broken: units oversold, a user with two
// orders, or a reservation that did not become a persisted order.
func (r Report) Broken() bool {
	return len(r.Problems()) > 0
}

// Problems lists the broken promises, one phrase each: by the store once it was read,
// else by the answers. Whether a reservation was lost is judged only when the orders
// persisted were counted (not Unverified).
func (r Report) Problems() []string {
	if r.Store {
		var p []string
		if r.Oversold > 0 {
			p = append(p, fmt.Sprintf("oversold: the store's orders hold %d units beyond the stock of %d", r.Oversold, r.Stock))
		}
		if r.Duplicates > 0 {
			p = append(p, fmt.Sprintf("%d users hold more than one order in the store", r.Duplicates))
		}
		if r.LostOrders > 0 {
			p = append(p, fmt.Sprintf("lost orders: %d of this run's 202s have no order in the store", r.LostOrders))
		}
		return p
	}
	var p []string
	if r.oversold() {
		p = append(p, fmt.Sprintf("oversold: %d reserved and %d orders persisted for a stock of %d", r.Reserved, r.OrdersPersisted, r.Stock))
	}
	if r.Duplicates > 0 {
		p = append(p, fmt.Sprintf("%d users hold more than one order", r.Duplicates))
	}
	if r.lost() {
		p = append(p, fmt.Sprintf("lost orders: %d reserved but %d orders persisted", r.Reserved, r.OrdersPersisted))
	}
	return p
}

// oversold reports whether more units were reserved, or are held by persisted orders,
// than were on sale.
func (r Report) oversold() bool {
	return r.Oversold > 0 || r.Reserved > r.Stock || r.OrdersPersisted > r.Stock
}

// lost reports whether fewer orders were counted persisted than reservations were
// answered. More orders than 202s is no broken promise: a request that timed out
// after its order was taken lost its answer, not its order (GET /api/v1/orders shows
// it), and another client may be selling the same voucher.
func (r Report) lost() bool {
	if r.Store {
		return r.LostOrders > 0
	}
	return r.Unverified == "" && r.OrdersPersisted < r.Reserved
}

// served is the number of requests answered as a sale answers.
func (r Report) served() int { return r.Reserved + r.SoldOut + r.AlreadyPurchased }

func (r Report) verdict() string {
	switch {
	case r.Broken():
		return verdictBroken
	case r.served() == 0:
		return verdictNotServed
	case r.Unverified != "":
		return verdictUnverified
	}
	return verdictKept
}

// Err is the report's verdict as the error a command exits with: nil when every
// promise was checked and kept; else, in this order, one wrapping ErrBroken (with the
// problems), ErrNotServed (no request got a sale's answer, whatever else was seen) or
// ErrUnverified (no promise seen broken, but the orders persisted could not be
// counted).
func (r Report) Err() error {
	switch r.verdict() {
	case verdictBroken:
		p := r.Problems()
		if r.late != "" && r.lost() {
			p = append(p, r.late)
		}
		return fmt.Errorf("%w: %s", ErrBroken, strings.Join(p, "; "))
	case verdictNotServed:
		return fmt.Errorf("%w: %s", ErrNotServed, r.notServed())
	case verdictUnverified:
		return fmt.Errorf("%w %s", ErrUnverified, r.unverified())
	}
	return nil
}

func (r Report) notServed() string {
	s := fmt.Sprintf("none of the %d requests got a sale's answer (202, sold_out or already_purchased)", r.Requests)
	if len(r.OtherExamples) > 0 {
		s += "; e.g. " + r.OtherExamples[0]
	}
	return s
}

func (r Report) unverified() string {
	return fmt.Sprintf("that every reservation became an order: %s", r.Unverified)
}

// Print writes the report to w, as JSON with asJSON, else as a table, and returns its
// verdict (Err).
func (r Report) Print(w io.Writer, asJSON bool) error {
	var err error
	if asJSON {
		err = r.WriteJSON(w)
	} else {
		err = r.WriteTable(w)
	}
	if err != nil {
		return err
	}
	return r.Err()
}

// WriteJSON writes the report as one JSON object on one line.
func (r Report) WriteJSON(w io.Writer) error {
	r.BrokenPromise, r.Verdict = r.Broken(), r.verdict()
	return json.NewEncoder(w).Encode(r)
}

// WriteTable writes the report as a table for people. Each check's mark and the last
// line come from the same verdict as Err, so the table never says otherwise.
func (r Report) WriteTable(w io.Writer) error {
	repeats := r.Requests - r.Users
	fmt.Fprintf(w, "flash sale: voucher %s, %d units, %d users (%d twice), %d in flight\n",
		r.Voucher, r.Stock, r.Users, max(repeats, 0), r.Concurrency)
	mark := func(broken bool) string {
		if broken {
			return "BROKEN"
		}
		return "ok"
	}
	persisted, persistedMark := fmt.Sprint(r.OrdersPersisted), mark(r.lost() || (!r.Store && r.OrdersPersisted > r.Stock))
	if r.Unverified != "" {
		persisted, persistedMark = "?", "UNVERIFIED"
	}
	rows := []struct{ name, value, note string }{
		{"requests", fmt.Sprint(r.Requests), ""},
		{"reserved", fmt.Sprint(r.Reserved), ""},
		{"sold out", fmt.Sprint(r.SoldOut), ""},
		{"already purchased", fmt.Sprint(r.AlreadyPurchased), ""},
		{"other answers", fmt.Sprint(r.Other), ""},
		{"oversold", fmt.Sprint(r.Oversold), mark(r.Oversold > 0)},
		{"duplicate buyers", fmt.Sprint(r.Duplicates), mark(r.Duplicates > 0)},
		{"orders persisted", persisted, persistedMark},
		{"latency p50", fmt.Sprintf("%.2f ms", r.P50Ms), ""},
		{"latency p99", fmt.Sprintf("%.2f ms", r.P99Ms), ""},
		{"latency max", fmt.Sprintf("%.2f ms", r.MaxMs), ""},
		{"requests per second", fmt.Sprintf("%.0f", r.RPS), ""},
		{"time to persist", fmt.Sprintf("%.0f ms", r.PersistMs), ""},
	}
	for _, row := range rows {
		if _, err := fmt.Fprintln(w, strings.TrimRight(fmt.Sprintf("  %-20s %12s  %s", row.name, row.value, row.note), " ")); err != nil {
			return err
		}
	}
	for _, ex := range r.OtherExamples {
		fmt.Fprintf(w, "  other, e.g.: %s\n", ex)
	}
	if r.LostAcks > 0 {
		fmt.Fprintf(w, "  lost acknowledgements: %d (grabs that succeeded though the client saw no answer)\n", r.LostAcks)
	}
	if r.Store {
		if r.OtherOrders > 0 {
			fmt.Fprintf(w, "  note: %d orders more than this run's 202s: another client sold this voucher meanwhile\n", r.OtherOrders)
		}
	} else if extra := r.OrdersPersisted - r.Reserved; r.Unverified == "" && extra > 0 {
		fmt.Fprintf(w, "  note: %d orders more than this run's 202s: another client sold this voucher meanwhile, or answers were lost (a request that timed out after its order was taken)\n", extra)
	}
	var err error
	switch r.verdict() {
	case verdictBroken:
		_, err = fmt.Fprintf(w, "PROMISE BROKEN: %s\n", strings.Join(r.Problems(), "; "))
	case verdictNotServed:
		_, err = fmt.Fprintf(w, "NOTHING SERVED: %s\n", r.notServed())
	case verdictUnverified:
		_, err = fmt.Fprintf(w, "COULD NOT VERIFY %s; no oversell and no duplicate among the answers\n", r.unverified())
	default:
		_, err = fmt.Fprintln(w, "all promises kept: no oversell, no duplicate, no lost order")
	}
	return err
}
