package history

import (
	"slices"
	"testing"
	"time"
)

// begins is when the sale of good opens; it lasts an hour.
var begins = time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)

// at is a moment inside the window of good.
func at(minute int) time.Time { return begins.Add(time.Duration(minute) * time.Minute) }

// good is a settled sale of 3 units that kept every promise, through faults: four
// users wanted it; user 1 grabbed, and paid; user 2's grab was cut off (status 0) but
// had reserved, and the retry reported the order; user 3's order failed and its unit
// went back, which user 4 then got; user 5 was told sold_out; user 4 cancelled once
// and grabbed again.
func good() History {
	return History{
		Stock:    3,
		BeginsAt: begins,
		EndsAt:   begins.Add(time.Hour),
		Requests: []Request{
			{Op: OpGrab, User: 1, Status: 202, OrderID: "A"},
			{Op: OpGrab, User: 2, Status: 0},
			{Op: OpGrab, User: 2, Status: 409, Code: "already_purchased", OrderID: "B"},
			{Op: OpGrab, User: 3, Status: 202, OrderID: "C"},
			{Op: OpGrab, User: 4, Status: 503, Code: "unavailable"},
			{Op: OpGrab, User: 4, Status: 202, OrderID: "D"},
			{Op: OpPay, User: 1, Status: 200, OrderID: "A"},
			{Op: OpCancel, User: 4, Status: 200, OrderID: "D"},
			{Op: OpGrab, User: 4, Status: 202, OrderID: "E"},
			{Op: OpGrab, User: 5, Status: 409, Code: "sold_out"},
			{Op: OpPay, User: 2, Status: 409, Code: "invalid_state", OrderID: "B"},
		},
		Orders: []Order{
			{ID: "A", User: 1, Quantity: 1, Status: "paid", CreatedAt: begins},
			{ID: "B", User: 2, Quantity: 1, Status: "awaiting_payment", CreatedAt: at(1)},
			{ID: "C", User: 3, Quantity: 1, Status: "failed", CreatedAt: at(2)},
			{ID: "D", User: 4, Quantity: 1, Status: "cancelled", CreatedAt: at(3)},
			{ID: "E", User: 4, Quantity: 1, Status: "awaiting_payment", CreatedAt: at(59)},
		},
		Stats: Stats{Stock: 3, Remaining: 0, AwaitingPayment: 2, Paid: 1, Cancelled: 1, Failed: 1},
	}
}

func TestAGoodHistoryPasses(t *testing.T) {
	if err := Check(good()); err != nil {
		t.Fatalf("a history that keeps every promise: %v", err)
	}
	// A reservation whose answer was lost and which then failed (units returned)
	// needs no report: the retry found the units free and reserved anew.
	h := good()
	h.Requests = append(h.Requests,
		Request{Op: OpGrab, User: 6, Status: 0},
		Request{Op: OpGrab, User: 6, Status: 409, Code: "paused"})
	h.Orders = append(h.Orders, Order{ID: "F", User: 6, Quantity: 1, Status: "failed", CreatedAt: at(30)})
	h.Stats.Failed = 2
	if err := Check(h); err != nil {
		t.Fatalf("an unreported failed order: %v", err)
	}
	// Edits move the stock: two units added (one refused removal moves nothing), one
	// more sold, one left; samples taken during the sale add up.
	h = good()
	h.Requests = append(h.Requests,
		Request{Op: OpEdit, User: 1, Status: 200, Units: 2},
		Request{Op: OpEdit, User: 1, Status: 409, Code: "not_enough_units", Units: -5},
		Request{Op: OpGrab, User: 6, Status: 202, OrderID: "F"})
	h.Orders = append(h.Orders, Order{ID: "F", User: 6, Quantity: 1, Status: "awaiting_payment", CreatedAt: at(30)})
	h.Stats = Stats{Stock: 5, Remaining: 1, AwaitingPayment: 3, Paid: 1, Cancelled: 1, Failed: 1}
	h.Samples = []Stats{{Stock: 3, Remaining: 2, Queued: 1}, {Stock: 5, Remaining: 1, Queued: 1, AwaitingPayment: 2, Paid: 1}}
	if err := Check(h); err != nil {
		t.Fatalf("a sale with edits and samples: %v", err)
	}
}

// TestBrokenHistoriesFail breaks one promise at a time and checks the checker names
// it — and only what was broken.
func TestBrokenHistoriesFail(t *testing.T) {
	tests := []struct {
		name    string
		breakIt func(*History)
		want    []string
	}{
		{"oversold: a fourth live unit", func(h *History) {
			h.Requests = append(h.Requests, Request{Op: OpGrab, User: 6, Status: 202, OrderID: "F"})
			h.Orders = append(h.Orders, Order{ID: "F", User: 6, Quantity: 1, Status: "awaiting_payment", CreatedAt: at(30)})
			h.Stats.AwaitingPayment, h.Stats.Remaining = 3, -1
		}, []string{Oversold}},
		{"duplicate live order", func(h *History) {
			h.Requests = append(h.Requests, Request{Op: OpGrab, User: 1, Status: 202, OrderID: "F"})
			h.Orders = append(h.Orders, Order{ID: "F", User: 1, Quantity: 1, Status: "awaiting_payment", CreatedAt: at(30)})
			h.Stock, h.Stats.Stock, h.Stats.AwaitingPayment = 4, 4, 3
		}, []string{TwoLiveOrders}},
		{"202 without an order", func(h *History) {
			h.Requests = append(h.Requests, Request{Op: OpGrab, User: 6, Status: 202, OrderID: "LOST"})
		}, []string{AcceptedWithoutRow}},
		{"202 for another user's order", func(h *History) {
			h.Requests = append(h.Requests, Request{Op: OpGrab, User: 6, Status: 202, OrderID: "B"})
		}, []string{AcceptedWithoutRow}},
		{"one order id answered to two grabs", func(h *History) {
			h.Requests = append(h.Requests, Request{Op: OpGrab, User: 6, Status: 202, OrderID: "A"})
		}, []string{OrderIDReused}},
		{"stats do not add up", func(h *History) {
			h.Stats.Remaining = 1
		}, []string{StatsDoNotAddUp}},
		{"stats disagree with the orders", func(h *History) {
			h.Stats.Cancelled, h.Stats.Failed = 0, 2
		}, []string{StatsDisagree}},
		{"sold out answered, units left, none returned", func(h *History) {
			*h = History{
				Stock:    2,
				BeginsAt: begins,
				EndsAt:   begins.Add(time.Hour),
				Requests: []Request{
					{Op: OpGrab, User: 1, Status: 202, OrderID: "A"},
					{Op: OpGrab, User: 2, Status: 409, Code: "sold_out"},
				},
				Orders: []Order{{ID: "A", User: 1, Quantity: 1, Status: "awaiting_payment", CreatedAt: at(1)}},
				Stats:  Stats{Stock: 2, Remaining: 1, AwaitingPayment: 1},
			}
		}, []string{NotSoldOut}},
		{"a 503 left an order the retry did not report", func(h *History) {
			h.Requests = append(h.Requests,
				Request{Op: OpGrab, User: 6, Status: 503, Code: "unavailable"},
				Request{Op: OpGrab, User: 6, Status: 409, Code: "paused"})
			h.Orders = append(h.Orders, Order{ID: "F", User: 6, Quantity: 1, Status: "expired", CreatedAt: at(30)})
			h.Stats.Expired = 1
		}, []string{UnreportedOrder}},
		{"a list that does not show the order", func(h *History) {
			h.Requests = append(h.Requests,
				Request{Op: OpGrab, User: 6, Status: 0},
				Request{Op: OpList, User: 6, Status: 200})
			h.Orders = append(h.Orders, Order{ID: "F", User: 6, Quantity: 1, Status: "expired", CreatedAt: at(30)})
			h.Stats.Expired = 1
		}, []string{UnreportedOrder}},
		{"already_purchased naming a stranger's order", func(h *History) {
			h.Requests = append(h.Requests, Request{Op: OpGrab, User: 5, Status: 409, Code: "already_purchased", OrderID: "A"})
		}, []string{UnknownOrderNamed}},
		{"paid answered 200, order expired", func(h *History) {
			h.Orders[0].Status = "expired"
			h.Stats.Paid, h.Stats.Expired, h.Stats.Remaining = 0, 1, 1
		}, []string{TransitionNotBorne}},
		{"the same order row twice", func(h *History) {
			h.Orders = append(h.Orders, h.Orders[2])
			h.Stats.Failed = 2
		}, []string{DuplicateOrderRow}},
		{"not settled", func(h *History) {
			h.Stats.Pending = 4
		}, []string{NotSettled}},
		{"a 202 judged at the sale's end", func(h *History) {
			h.Orders[4].CreatedAt = h.EndsAt
		}, []string{OutsideTheWindow}},
		{"a 202 judged before the sale began", func(h *History) {
			h.Orders[0].CreatedAt = begins.Add(-time.Millisecond)
		}, []string{OutsideTheWindow}},
		{"a sample that does not add up", func(h *History) {
			h.Samples = []Stats{{Stock: 3, Remaining: 3}, {Stock: 3, Remaining: 1, Queued: 1, AwaitingPayment: 2}}
		}, []string{SampleDoesNotAddUp}},
		{"a sample with a negative figure", func(h *History) {
			h.Samples = []Stats{{Stock: 3, Remaining: 4, Queued: -1}}
		}, []string{SampleDoesNotAddUp}},
		{"an edit's units not in the stats' stock", func(h *History) {
			h.Requests = append(h.Requests, Request{Op: OpEdit, User: 1, Status: 200, Units: 1})
		}, []string{StatsDoNotAddUp}},
		{"oversold after units were removed", func(h *History) {
			h.Requests = append(h.Requests, Request{Op: OpEdit, User: 1, Status: 200, Units: -1})
			h.Stats.Stock, h.Stats.Remaining = 2, -1
		}, []string{Oversold}},
		{"reconcile drift", func(h *History) {
			h.Drifts = []string{"stock_mismatch: remaining 1 + reserved 3 != stock 3"}
		}, []string{ReconcileDrift}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := good()
			tt.breakIt(&h)
			var kinds []string
			for _, v := range Violations(h) {
				if !slices.Contains(kinds, v.Kind) {
					kinds = append(kinds, v.Kind)
				}
			}
			slices.Sort(kinds)
			want := slices.Clone(tt.want)
			slices.Sort(want)
			if !slices.Equal(kinds, want) {
				t.Fatalf("violations %v, want %v:\n%v", kinds, want, Check(h))
			}
			if Check(h) == nil {
				t.Fatal("Check passed a broken history")
			}
		})
	}
}
