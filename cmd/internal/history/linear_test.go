package history

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// linear runs the linearizability check alone.
func linear(h History) error {
	c := &checker{h: h, rows: map[string]Order{}}
	for _, o := range h.Orders {
		c.rows[o.ID] = o
	}
	c.linearizable(time.Minute)
	var lines []string
	for _, v := range c.out {
		lines = append(lines, v.String())
	}
	if len(lines) == 0 {
		return nil
	}
	return errors.New(strings.Join(lines, "\n"))
}

// ms is a moment ms milliseconds into the sale of good.
func ms(n int) time.Time { return begins.Add(time.Duration(n) * time.Millisecond) }

// req is a request called at from and answered at to (ms into the sale).
func req(op Op, user int64, status int, code, order string, from, to int) Request {
	return Request{Op: op, User: user, Status: status, Code: code, OrderID: order, Call: ms(from), Return: ms(to)}
}

// timed is a settled sale of 2 units whose answers a sale could have given, with
// their times: grabs overlapping a sold_out that could come before them, a grab cut
// off (status 0) whose order the retry reported, a cancel whose unit user 4 then
// got, an edit whose answer was lost, and a sold_out once every unit was taken.
func timed() History {
	return History{
		Stock: 2, BeginsAt: begins, EndsAt: begins.Add(time.Hour),
		Requests: []Request{
			req(OpGrab, 1, 202, "", "A", 0, 50),
			req(OpGrab, 2, 0, "", "", 10, 3010),
			req(OpGrab, 3, 409, "sold_out", "", 40, 45), // after A and B, both in flight
			req(OpGrab, 2, 409, "already_purchased", "B", 3100, 3110),
			req(OpCancel, 1, 200, "", "A", 3200, 3250),
			req(OpGrab, 4, 202, "", "C", 3300, 3350),
			{Op: OpEdit, User: 99, Units: 1, Status: 200, Call: ms(3400), Return: ms(3450)},
			req(OpGrab, 5, 202, "", "D", 6500, 6550),
			req(OpGrab, 6, 409, "sold_out", "", 6600, 6610),
		},
		Orders: []Order{
			{ID: "A", User: 1, Quantity: 1, Status: "cancelled", CreatedAt: ms(20)},
			{ID: "B", User: 2, Quantity: 1, Status: "awaiting_payment", CreatedAt: ms(30)},
			{ID: "C", User: 4, Quantity: 1, Status: "awaiting_payment", CreatedAt: ms(3320)},
			{ID: "D", User: 5, Quantity: 1, Status: "awaiting_payment", CreatedAt: ms(6520)},
		},
		Stats:   Stats{Stock: 3, AwaitingPayment: 3, Cancelled: 1},
		Settled: ms(7000),
	}
}

func TestLinearizableHistoryPasses(t *testing.T) {
	if err := Check(timed()); err != nil {
		t.Fatalf("a linearizable history is reported:\n%v", err)
	}
}

// TestLinearizabilityNamesEachBrokenAnswer breaks timed() one way at a time; the
// check must name each.
func TestLinearizabilityNamesEachBrokenAnswer(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(*History)
		want   string
	}{
		{"sold_out after a cancel gave a unit back", func(h *History) {
			h.Requests = append(h.Requests, req(OpGrab, 7, 409, "sold_out", "", 3260, 3290))
		}, SoldOutWhileFree},
		{"a 202 with every unit taken", func(h *History) {
			h.Requests[2] = req(OpGrab, 3, 202, "", "X", 100, 120)
			h.Orders = append(h.Orders, Order{ID: "X", User: 3, Quantity: 1, Status: "awaiting_payment", CreatedAt: ms(110)})
		}, AcceptedWithNoUnit},
		{"already_purchased to a user who holds nothing", func(h *History) {
			h.Requests = append(h.Requests, req(OpGrab, 1, 409, "already_purchased", "A", 3260, 3290))
		}, AlreadyWithoutOrder},
		{"a user given two", func(h *History) {
			h.Requests[5] = req(OpGrab, 2, 202, "", "C", 3300, 3350)
			h.Orders[2].User = 2
		}, OverLimit},
		{"a pass admitting two", func(h *History) {
			h.Requests[0].Pass, h.Requests[5].Pass = "p1", "p1"
		}, PassReused},
		{"settled stock off by one", func(h *History) {
			h.Stats.Remaining, h.Stats.Stock = 1, 4
		}, SettledDisagrees},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := timed()
			tc.mutate(&h)
			err := linear(h)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("want a violation %q, got:\n%v", tc.want, err)
			}
			t.Log(err)
		})
	}
}

// TestSoldOutBesideAnUnsureCancel: a cancel answered while Redis was out of reach
// may give its unit back after its answer, so a sold_out after it is no violation.
func TestSoldOutBesideAnUnsureCancel(t *testing.T) {
	h := timed()
	h.Requests = append(h.Requests, req(OpGrab, 7, 409, "sold_out", "", 3260, 3290))
	h.Unsure = []Interval{{From: ms(3100), To: ms(3220)}}
	h.Requests[5] = req(OpGrab, 4, 202, "", "C", 3300, 5000) // its grab may come after the release
	if err := linear(h); err != nil {
		t.Fatalf("a release deferred by an outage is reported:\n%v", err)
	}
}

// drawn is a draw of 2 units among entrants 1..4: positions 1 and 2 win, 1 cancels
// and its unit goes to position 3.
func drawn() History {
	return History{
		Stock: 2, BeginsAt: begins, EndsAt: begins.Add(time.Hour), Draw: true,
		Requests: []Request{req(OpCancel, 1, 200, "", "A", 1000, 1050)},
		Hands: []Hand{
			{User: 1, Position: 1, OrderID: "A", From: ms(0), To: ms(10)},
			{User: 2, Position: 2, OrderID: "B", From: ms(0), To: ms(10)},
			{User: 3, Position: 3, OrderID: "C", From: ms(1000), To: ms(1050)},
		},
		Orders: []Order{
			{ID: "A", User: 1, Quantity: 1, Status: "cancelled", CreatedAt: ms(5)},
			{ID: "B", User: 2, Quantity: 1, Status: "awaiting_payment", CreatedAt: ms(5)},
			{ID: "C", User: 3, Quantity: 1, Status: "awaiting_payment", CreatedAt: ms(1020)},
		},
		Stats:   Stats{Stock: 2, AwaitingPayment: 2, Cancelled: 1},
		Settled: ms(2000),
	}
}

func TestDrawHistory(t *testing.T) {
	if err := linear(drawn()); err != nil {
		t.Fatalf("a draw that handed on in order is reported:\n%v", err)
	}
	// The draw restarts: user 2 cancels, and its unit goes back to user 1, who had
	// cancelled, instead of position 4.
	h := drawn()
	h.Requests = append(h.Requests, req(OpCancel, 2, 200, "", "B", 3000, 3050))
	h.Orders[1].Status = "cancelled"
	h.Hands = append(h.Hands, Hand{User: 1, Position: 1, OrderID: "D", From: ms(3000), To: ms(3050)})
	h.Orders = append(h.Orders, Order{ID: "D", User: 1, Quantity: 1, Status: "awaiting_payment", CreatedAt: ms(3020)})
	h.Stats.Cancelled = 2
	h.Settled = ms(4000)
	err := linear(h)
	if err == nil || !strings.Contains(err.Error(), HandedToALeaver) {
		t.Fatalf("want %q, got:\n%v", HandedToALeaver, err)
	}
	t.Log(err)
}
