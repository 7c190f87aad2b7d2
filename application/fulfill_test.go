package application_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"

	"github.com/seckill/seckill/adapters/memory"
	"github.com/seckill/seckill/application"
	"github.com/seckill/seckill/domain"
	"github.com/seckill/seckill/ports"
)

// sale wires every use case over in-memory fakes: grabs land in the queue, the
// fulfillment use case turns them into orders.
type sale struct {
	grabFixture
	queue   *memory.Queue
	orders  *memory.Orders
	fulfill *application.FulfillOrder
	maxDlvr int64
}

func newSale(t *testing.T, stock, limit int) sale {
	t.Helper()
	v := window
	v.Stock, v.PerUserLimit = stock, limit
	f := newGrabFixture(t, v)
	q := &memory.Queue{}
	f.stock.Queue = q
	orders := memory.NewOrders(f.vouchers)
	return sale{grabFixture: f, queue: q, orders: orders, maxDlvr: 5,
		fulfill: application.NewFulfillOrder(orders, q, application.NewCompensate(f.stock, orders), f.changes, 5)}
}

func (s sale) read(t *testing.T) []ports.Delivery {
	t.Helper()
	ds, err := s.queue.Read(context.Background(), 100, 0)
	if err != nil {
		t.Fatal(err)
	}
	return ds
}

func (s sale) order(t *testing.T, id domain.OrderID) domain.Order {
	t.Helper()
	o, err := s.orders.Get(context.Background(), id)
	if err != nil {
		t.Fatalf("order %s: %v", id, err)
	}
	return o
}

func (s sale) remaining(t *testing.T) int {
	t.Helper()
	left, err := s.stock.Remaining(context.Background(), s.id)
	if err != nil {
		t.Fatal(err)
	}
	return left[s.id]
}

func TestFulfillPersistsAndAcknowledges(t *testing.T) {
	t.Parallel()
	s := newSale(t, 10, 2)
	a, b := mustGrab(t, s.grabFixture, 1, 1), mustGrab(t, s.grabFixture, 2, 2)
	rep, err := s.fulfill.Handle(context.Background(), s.read(t))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(rep, application.FulfillReport{Persisted: 2}) {
		t.Fatalf("report = %+v", rep)
	}
	for _, r := range []domain.Reservation{a, b} {
		o := s.order(t, r.OrderID)
		if o.Status != domain.StatusAwaitingPayment || o.Quantity != r.Quantity || o.UserID != r.UserID || !o.CreatedAt.Equal(t0) {
			t.Fatalf("order = %+v for %+v", o, r)
		}
	}
	if got := s.queue.Pending(s.id); got != 0 {
		t.Fatalf("pending = %d after fulfillment, want 0", got)
	}
	v, _ := s.vouchers.Get(context.Background(), s.id)
	if v.Sold != 3 {
		t.Fatalf("sold = %d, want 3", v.Sold)
	}
}

func TestFulfillRedeliveryCreatesNothingNew(t *testing.T) {
	t.Parallel()
	s := newSale(t, 10, 1)
	mustGrab(t, s.grabFixture, 1, 1)
	ds := s.read(t)
	for i := 0; i < 3; i++ {
		rep, err := s.fulfill.Handle(context.Background(), ds)
		if err != nil {
			t.Fatal(err)
		}
		want := application.FulfillReport{Redelivered: 1}
		if i == 0 {
			want = application.FulfillReport{Persisted: 1}
		}
		if !reflect.DeepEqual(rep, want) {
			t.Fatalf("delivery %d: report = %+v, want %+v", i+1, rep, want)
		}
	}
	if v, _ := s.vouchers.Get(context.Background(), s.id); v.Sold != 1 {
		t.Fatalf("sold = %d, want 1", v.Sold)
	}
}

func TestFulfillAcknowledgesNothingWhileTheDatabaseIsDown(t *testing.T) {
	t.Parallel()
	s := newSale(t, 10, 1)
	mustGrab(t, s.grabFixture, 1, 1)
	mustGrab(t, s.grabFixture, 2, 1)
	ds := s.read(t)
	s.orders.Err = fmt.Errorf("connect: %w", domain.ErrUnavailable)
	rep, err := s.fulfill.Handle(context.Background(), ds)
	if !errors.Is(err, domain.ErrUnavailable) || rep.Left != 2 {
		t.Fatalf("report %+v, err %v; want 2 left and ErrUnavailable", rep, err)
	}
	if got := s.queue.Pending(s.id); got != 2 {
		t.Fatalf("pending = %d during the outage, want 2", got)
	}
	s.orders.Err = nil
	if rep, err := s.fulfill.Handle(context.Background(), ds); err != nil || rep.Persisted != 2 {
		t.Fatalf("after the outage: %+v, %v", rep, err)
	}
}

func TestFulfillIsolatesAPoisonReservation(t *testing.T) {
	t.Parallel()
	s := newSale(t, 10, 1)
	good := mustGrab(t, s.grabFixture, 1, 1)
	bad := mustGrab(t, s.grabFixture, 2, 1)
	s.orders.Poison = map[domain.OrderID]error{bad.OrderID: errors.New("value out of range")}

	rep, err := s.fulfill.Handle(context.Background(), s.read(t))
	if err != nil || rep.Persisted != 1 || rep.Left != 1 || len(rep.Problems) != 1 {
		t.Fatalf("first delivery: %+v, %v", rep, err)
	}
	s.order(t, good.OrderID)
	// It keeps failing on redelivery until the delivery limit, then it is dead-lettered
	// and its unit goes back on sale.
	for i := 2; ; i++ {
		ds, err := s.queue.Claim(context.Background(), 0, 10)
		if err != nil || len(ds) != 1 || ds[0].Deliveries != int64(i) {
			t.Fatalf("claim %d: %+v, %v", i, ds, err)
		}
		rep, err := s.fulfill.Handle(context.Background(), ds)
		if err != nil {
			t.Fatal(err)
		}
		if int64(i) <= s.maxDlvr {
			if rep.Left != 1 {
				t.Fatalf("delivery %d: %+v", i, rep)
			}
			continue
		}
		if rep.DeadLettered != 1 {
			t.Fatalf("delivery %d: %+v, want dead-lettered", i, rep)
		}
		break
	}
	if len(s.queue.Dead) != 1 || s.queue.Dead[0].Delivery.Reservation.OrderID != bad.OrderID {
		t.Fatalf("dead letters = %+v", s.queue.Dead)
	}
	if got := s.remaining(t); got != 9 {
		t.Fatalf("remaining = %d, want 9 (the poison's unit returned)", got)
	}
	if got := s.queue.Pending(s.id); got != 0 {
		t.Fatalf("pending = %d, want 0", got)
	}
}

// TestFulfillNeverDeadLettersForDeliveriesAlone: entries re-claimed many times during
// an outage are persisted once the database is back, not dead-lettered.
func TestFulfillNeverDeadLettersForDeliveriesAlone(t *testing.T) {
	t.Parallel()
	s := newSale(t, 10, 1)
	r := mustGrab(t, s.grabFixture, 1, 1)
	ds := s.read(t)
	s.orders.Err = domain.ErrUnavailable
	for i := 0; i < 10; i++ {
		if _, err := s.fulfill.Handle(context.Background(), ds); !errors.Is(err, domain.ErrUnavailable) {
			t.Fatalf("during the outage: %v", err)
		}
		if ds, _ = s.queue.Claim(context.Background(), 0, 10); len(ds) != 1 {
			t.Fatalf("claim: %+v", ds)
		}
	}
	if ds[0].Deliveries <= s.maxDlvr {
		t.Fatalf("deliveries = %d, want past the limit", ds[0].Deliveries)
	}
	s.orders.Err = nil
	rep, err := s.fulfill.Handle(context.Background(), ds)
	if err != nil || rep.Persisted != 1 || rep.DeadLettered != 0 {
		t.Fatalf("after the outage: %+v, %v", rep, err)
	}
	if o := s.order(t, r.OrderID); o.Status != domain.StatusAwaitingPayment {
		t.Fatalf("order = %+v", o)
	}
	if len(s.queue.Dead) != 0 || s.remaining(t) != 9 {
		t.Fatalf("dead letters %v, remaining %d", s.queue.Dead, s.remaining(t))
	}
}

func TestFulfillDeadLettersWhatTheStoreRefuses(t *testing.T) {
	t.Parallel()
	s := newSale(t, 10, 1)
	good := mustGrab(t, s.grabFixture, 1, 1)
	bad := mustGrab(t, s.grabFixture, 2, 1)
	s.orders.Poison = map[domain.OrderID]error{bad.OrderID: domain.Invalid("quantity", "must be at least 1")}
	rep, err := s.fulfill.Handle(context.Background(), s.read(t))
	if err != nil || rep.Persisted != 1 || rep.DeadLettered != 1 || rep.Left != 0 {
		t.Fatalf("report %+v, %v", rep, err)
	}
	s.order(t, good.OrderID)
	if got := s.remaining(t); got != 9 {
		t.Fatalf("remaining = %d, want 9", got)
	}
}

func TestFulfillDeadLettersMalformedEntries(t *testing.T) {
	t.Parallel()
	s := newSale(t, 10, 1)
	s.queue.Append(ports.Delivery{VoucherID: s.id, Malformed: `field "qty": not a positive integer`})
	r := mustGrab(t, s.grabFixture, 1, 1)
	rep, err := s.fulfill.Handle(context.Background(), s.read(t))
	if err != nil || rep.Persisted != 1 || rep.DeadLettered != 1 || len(rep.Problems) != 1 {
		t.Fatalf("report %+v, %v", rep, err)
	}
	s.order(t, r.OrderID)
	if len(s.queue.Dead) != 1 || s.queue.Dead[0].Reason == "" {
		t.Fatalf("dead letters = %+v", s.queue.Dead)
	}
}

func TestFulfillFailsADuplicateAndReturnsItsUnits(t *testing.T) {
	t.Parallel()
	s := newSale(t, 10, 1)
	first := mustGrab(t, s.grabFixture, 1, 1)
	if _, err := s.fulfill.Handle(context.Background(), s.read(t)); err != nil {
		t.Fatal(err)
	}
	// Redis forgot the user's reservation (say, rebuilt after a crash) while the
	// database kept the live order: the second reservation can never become an order.
	if _, err := s.stock.Release(context.Background(), s.order(t, first.OrderID)); err != nil {
		t.Fatal(err)
	}
	second := mustGrab(t, s.grabFixture, 1, 1)
	rep, err := s.fulfill.Handle(context.Background(), s.read(t))
	if err != nil || rep.Failed != 1 {
		t.Fatalf("report %+v, %v", rep, err)
	}
	if o := s.order(t, second.OrderID); o.Status != domain.StatusFailed {
		t.Fatalf("second order = %+v, want failed", o)
	}
	if got := s.remaining(t); got != 10 {
		t.Fatalf("remaining = %d, want 10", got)
	}
}

func TestFulfillRetriesTheReleaseOfAFailedOrder(t *testing.T) {
	t.Parallel()
	s := newSale(t, 1, 1)
	r := mustGrab(t, s.grabFixture, 1, 1)
	ds := s.read(t)
	// The database's counter is full (drift): the reservation fails, and Redis is down
	// when its unit should go back, so nothing is acknowledged.
	v, _ := s.vouchers.Get(context.Background(), s.id)
	v.Sold = v.Stock
	s.vouchers.Put(v)
	s.stock.Err = domain.ErrUnavailable
	if _, err := s.fulfill.Handle(context.Background(), ds); err == nil {
		t.Fatal("want an error while the release cannot be applied")
	}
	if got := s.queue.Pending(s.id); got != 1 {
		t.Fatalf("pending = %d, want 1", got)
	}
	// Redelivered once Redis is back: the failed row is found and the release applied.
	s.stock.Err = nil
	rep, err := s.fulfill.Handle(context.Background(), ds)
	if err != nil || rep.Failed != 1 {
		t.Fatalf("redelivery: %+v, %v", rep, err)
	}
	if o := s.order(t, r.OrderID); o.Status != domain.StatusFailed {
		t.Fatalf("order = %+v", o)
	}
	if got := s.remaining(t); got != 1 {
		t.Fatalf("remaining = %d, want 1", got)
	}
}

func TestFulfillDeadLettersAReservationWhoseVoucherIsGone(t *testing.T) {
	t.Parallel()
	s := newSale(t, 10, 1)
	s.queue.Append(ports.Delivery{VoucherID: 77, Reservation: domain.Reservation{OrderID: "gone", VoucherID: 77, UserID: 1, Quantity: 1, At: t0}})
	rep, err := s.fulfill.Handle(context.Background(), s.read(t))
	if err != nil || rep.DeadLettered != 1 {
		t.Fatalf("report %+v, %v", rep, err)
	}
}
