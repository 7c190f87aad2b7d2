package application_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/seckill/seckill/adapters/memory"
	"github.com/seckill/seckill/application"
	"github.com/seckill/seckill/domain"
	"github.com/seckill/seckill/ports"
)

// TestGrabWaitsForItsOrdersCommit: with PersistedOrders, a grab is answered only once
// the worker announced its order committed; a grab whose order is not committed in
// time answers unavailable, holding its reservation (a retry names it).
func TestGrabWaitsForItsOrdersCommit(t *testing.T) {
	f := newGrabFixture(t, domain.Voucher{Title: "t", Stock: 5, BeginsAt: t0.Add(-time.Minute), EndsAt: t0.Add(time.Hour), PerUserLimit: 1})
	persisted := application.NewPersistedOrders(time.Hour)
	grab := application.NewGrabVoucher(f.stock, f.clock, &memory.OrderIDs{}, nil,
		application.NewBuyerGate(f.vouchers, f.clock, application.GateOptions{}), application.GrabOptions{Persisted: persisted})
	committed := persisted.Changes(f.changes)
	ctx := context.Background()

	type answer struct {
		r   domain.Reservation
		err error
	}
	answered := make(chan answer, 1)
	go func() {
		r, err := grab.Handle(ctx, application.GrabVoucherCmd{VoucherID: f.id, UserID: 7, Quantity: 1})
		answered <- answer{r, err}
	}()
	// The reservation is made; the grab is not answered until its order is committed.
	for f.stock.ReserveCalls() == 0 {
		select {
		case a := <-answered:
			t.Fatalf("grab answered before its order was committed: %+v, %v", a.r, a.err)
		default:
		}
		time.Sleep(time.Millisecond)
	}
	const order = domain.OrderID("o1") // memory.OrderIDs' first

	if err := committed.Publish(ctx, ports.Change{Voucher: f.id, Order: "another"}); err != nil {
		t.Fatal(err)
	}
	select {
	case a := <-answered:
		t.Fatalf("grab answered on another order's commit: %+v, %v", a.r, a.err)
	case <-time.After(50 * time.Millisecond):
	}
	if err := committed.Publish(ctx, ports.Change{Voucher: f.id, Order: order}); err != nil {
		t.Fatal(err)
	}
	if a := <-answered; a.err != nil || a.r.OrderID != order {
		t.Fatalf("grab after its commit: %+v, %v; want order %s", a.r, a.err, order)
	}
	if got := len(f.changes.Published()); got != 2 {
		t.Fatalf("%d changes announced, want both passed on", got)
	}

	// Not committed before the grab's deadline: unavailable, the reservation kept.
	short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	_, err := grab.Handle(short, application.GrabVoucherCmd{VoucherID: f.id, UserID: 8, Quantity: 1})
	if !errors.Is(err, domain.ErrUnavailable) {
		t.Fatalf("grab not committed in time: %v, want unavailable", err)
	}
	if left, err := f.stock.Remaining(ctx, f.id); err != nil || left[f.id] != 3 {
		t.Fatalf("remaining after two reservations: %v, %v; want 3 (the unanswered one kept)", left, err)
	}
}
