package load

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// After a kill -9 mid-sale some grabs were taken though their clients saw no answer
// (their connections dropped): the store holds their orders, no 202 named them. The
// report names them as lost acknowledgements — one cause, not a broken promise — and
// keeps the verdict of the store, which holds no more than the stock and no user
// twice. (It once said only that there were more orders than 202s, "another client
// … or answers were lost".)
func TestSellReportsLostAcknowledgementsAsOneCause(t *testing.T) {
	f, srv := newFake(t, 200)
	f.lostAck = map[int64]bool{3: true, 7: true, 11: true}
	rep, table, m := sell(t, context.Background(), srv, Flags{Users: 100, Dup: 0.5, Stock: 200, Concurrency: 4, Timeout: 5 * time.Second})
	if err := rep.Err(); err != nil {
		t.Fatalf("verdict %v, want every promise kept\n%s", err, table)
	}
	if rep.LostAcks != 3 || rep.Oversold != 0 || rep.Duplicates != 0 || rep.LostOrders != 0 || rep.OtherOrders != 0 || !rep.Store {
		t.Fatalf("report %+v", rep)
	}
	if !strings.Contains(table, "\n  lost acknowledgements: 3 (grabs that succeeded though the client saw no answer)\n") ||
		strings.Contains(table, "BROKEN") || strings.Contains(table, "another client") || !strings.Contains(table, "\nall promises kept") {
		t.Fatalf("table:\n%s", table)
	}
	if m["lost_acknowledgements"] != 3.0 || m["verdict"] != "kept" || m["checked_against_store"] != true {
		t.Fatalf("JSON: %v", m)
	}
}

// The store is the truth both ways: an oversell or a second order of one user that it
// holds is a broken promise, and so is a 202 whose order it does not hold.
func TestSellJudgesByTheStore(t *testing.T) {
	for _, c := range []struct {
		name    string
		set     func(*fakeSeckill)
		problem string
	}{
		{"oversold", func(f *fakeSeckill) { f.oversell = true }, "oversold: the store's orders hold 10 units beyond the stock of 20"},
		{"duplicate", func(f *fakeSeckill) { f.duplicate = true; f.stock = 1000 }, "users hold more than one order in the store"},
		{"taken back", func(f *fakeSeckill) { f.takeBack = 4 }, "lost orders: 4 of this run's 202s have no order in the store"},
	} {
		f, srv := newFake(t, 20)
		c.set(f)
		rep, table, _ := sell(t, context.Background(), srv, Flags{Users: 30, Dup: 0.2, Stock: 20, Concurrency: 4, Timeout: 300 * time.Millisecond})
		if err := rep.Err(); !errors.Is(err, ErrBroken) || !strings.Contains(err.Error(), c.problem) {
			t.Fatalf("%s: verdict %v, want broken: %s\n%s", c.name, err, c.problem, table)
		}
	}
}

// A history of the shape a kill -9 leaves, judged by the report alone: 202s counted
// per answer exceed the stock (answers naming one order twice) while the store holds
// exactly the stock, no user twice, plus orders whose acknowledgement was lost. By
// the answers it was "oversold … BROKEN"; by the store it is every promise kept and
// the lost acknowledgements named.
func TestReportOfAKilledSaleNamesOnlyTheLostAcknowledgements(t *testing.T) {
	res := Result{Requests: 8, Reserved: 5, Other: 2, Unanswered: []int64{4, 5}, Reservations: []Reservation{
		{User: 1, OrderID: "a"}, {User: 2, OrderID: "b"}, {User: 2, OrderID: "b"}, {User: 3, OrderID: "c"}, {User: 3, OrderID: "c"},
	}}
	store := []StoreOrder{
		{ID: "a", User: 1, Quantity: 1, Status: "awaiting_payment"}, {ID: "b", User: 2, Quantity: 1, Status: "awaiting_payment"},
		{ID: "c", User: 3, Quantity: 1, Status: "paid"}, {ID: "d", User: 4, Quantity: 1, Status: "awaiting_payment"},
	}
	rep := NewReport(Sale{Voucher: "7", Stock: 4, Users: 6, Concurrency: 2}, res, 4, time.Millisecond, nil)
	if rep.Err() == nil {
		t.Fatalf("judged by the answers alone, 5 202s for 4 units look oversold: %+v", rep)
	}
	rep = rep.WithStore(CheckStore(4, nil, store, res))
	if err := rep.Err(); err != nil {
		t.Fatalf("verdict %v, want every promise kept", err)
	}
	if rep.LostAcks != 1 || rep.Oversold != 0 || rep.Duplicates != 0 || rep.LostOrders != 0 {
		t.Fatalf("report %+v", rep)
	}
	var table strings.Builder
	if err := rep.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(table.String(), "lost acknowledgements: 1 (grabs that succeeded though the client saw no answer)") || strings.Contains(table.String(), "BROKEN") {
		t.Fatalf("table:\n%s", table.String())
	}
}
