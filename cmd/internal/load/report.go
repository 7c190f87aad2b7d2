package load

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"
	"time"
)

// Report is what a flash sale showed, with the checks of the three promises. Its JSON
// is one object with the keys the issue names (plus the sale's voucher, stock, users,
// broken and a few examples of other answers).
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
	Oversold         int      `json:"oversold"`
	Duplicates       int      `json:"duplicates"`
	OrdersPersisted  int      `json:"orders_persisted"`
	P50Ms            float64  `json:"p50_ms"`
	P99Ms            float64  `json:"p99_ms"`
	MaxMs            float64  `json:"max_ms"`
	RPS              float64  `json:"rps"`
	PersistMs        float64  `json:"persist_ms"`
	BrokenPromise    bool     `json:"broken"`
}

// Sale names what was sold: the voucher, the units on sale when the load began
// (its stock, for a fresh voucher), the users and the concurrency.
type Sale struct {
	Voucher     string
	Stock       int
	Users       int
	Concurrency int
}

// NewReport combines a sale, its Result and the orders persisted for it (persisted
// orders, and how long they took to persist after the last answer).
func NewReport(s Sale, r Result, persisted int, persistTook time.Duration) Report {
	rep := Report{
		Voucher: s.Voucher, Stock: s.Stock, Users: s.Users, Concurrency: s.Concurrency,
		Requests: r.Requests, Reserved: r.Reserved, SoldOut: r.SoldOut,
		AlreadyPurchased: r.AlreadyPurchased, Other: r.Other, OtherExamples: r.OtherExamples,
		Oversold: r.Oversold(s.Stock), Duplicates: r.Duplicates(), OrdersPersisted: persisted,
		P50Ms: ms(r.P50), P99Ms: ms(r.P99), MaxMs: ms(r.Max),
		RPS:       math.Round(r.RPS*10) / 10,
		PersistMs: ms(persistTook),
	}
	rep.BrokenPromise = rep.Broken()
	return rep
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

// Problems lists the broken promises, one phrase each.
func (r Report) Problems() []string {
	var p []string
	if r.Oversold > 0 || r.Reserved > r.Stock || r.OrdersPersisted > r.Stock {
		p = append(p, fmt.Sprintf("oversold: %d reserved and %d orders persisted for a stock of %d", r.Reserved, r.OrdersPersisted, r.Stock))
	}
	if r.Duplicates > 0 {
		p = append(p, fmt.Sprintf("%d users hold more than one order", r.Duplicates))
	}
	// More orders than 202s is no broken promise: a request that timed out after its
	// order was taken lost its answer, not its order (GET /api/v1/orders shows it).
	if r.OrdersPersisted < r.Reserved {
		p = append(p, fmt.Sprintf("lost orders: %d reserved but %d orders persisted", r.Reserved, r.OrdersPersisted))
	}
	return p
}

// WriteJSON writes the report as one JSON object on one line.
func (r Report) WriteJSON(w io.Writer) error {
	r.BrokenPromise = r.Broken()
	return json.NewEncoder(w).Encode(r)
}

// WriteTable writes the report as a table for people.
func (r Report) WriteTable(w io.Writer) error {
	repeats := r.Requests - r.Users
	fmt.Fprintf(w, "flash sale: voucher %s, %d units, %d users (%d twice), %d in flight\n",
		r.Voucher, r.Stock, r.Users, max(repeats, 0), r.Concurrency)
	must := func(n int) string {
		if n == 0 {
			return "ok"
		}
		return "BROKEN"
	}
	persisted := "ok"
	if r.OrdersPersisted != r.Reserved {
		persisted = "BROKEN"
	}
	rows := []struct{ name, value, note string }{
		{"requests", fmt.Sprint(r.Requests), ""},
		{"reserved", fmt.Sprint(r.Reserved), ""},
		{"sold out", fmt.Sprint(r.SoldOut), ""},
		{"already purchased", fmt.Sprint(r.AlreadyPurchased), ""},
		{"other answers", fmt.Sprint(r.Other), ""},
		{"oversold", fmt.Sprint(r.Oversold), must(r.Oversold)},
		{"duplicate buyers", fmt.Sprint(r.Duplicates), must(r.Duplicates)},
		{"orders persisted", fmt.Sprint(r.OrdersPersisted), persisted},
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
	var err error
	if p := r.Problems(); len(p) > 0 {
		_, err = fmt.Fprintf(w, "PROMISE BROKEN: %s\n", strings.Join(p, "; "))
	} else {
		_, err = fmt.Fprintln(w, "all promises kept: no oversell, no duplicate, no lost order")
	}
	return err
}
