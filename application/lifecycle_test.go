package application_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/seckill/seckill/adapters/memory"
	"github.com/seckill/seckill/application"
	"github.com/seckill/seckill/domain"
)

// lifecycle is a sale with persisted orders and the lifecycle use cases over it.
type lifecycle struct {
	sale
	payments *memory.Payments
	get      *application.GetOrder
	pay      *application.PayOrder
	cancel   *application.CancelOrder
	expire   *application.ExpireOrders
	release  *application.ReleaseClosed
}

const (
	paymentTimeout = 15 * time.Minute
	paymentWindow  = domain.PaymentWindow(paymentTimeout)
)

func newLifecycle(t *testing.T, stock int) lifecycle {
	s := newSale(t, stock, 1)
	comp := application.NewCompensate(s.stock, s.orders)
	get := application.NewGetOrder(s.orders, memory.Reservations{Stock: s.stock})
	p := &memory.Payments{}
	return lifecycle{sale: s, payments: p, get: get,
		pay:     application.NewPayOrder(get, s.orders, p, s.clock, paymentWindow, s.changes),
		cancel:  application.NewCancelOrder(get, s.orders, comp, s.changes),
		expire:  application.NewExpireOrders(s.orders, comp, s.clock, paymentWindow, s.changes),
		release: application.NewReleaseClosed(s.orders, comp)}
}

// persisted grabs one unit for user and fulfills it.
func (l lifecycle) persisted(t *testing.T, user domain.UserID) domain.OrderID {
	t.Helper()
	r := mustGrab(t, l.grabFixture, user, 1)
	if _, err := l.fulfill.Handle(context.Background(), l.read(t)); err != nil {
		t.Fatal(err)
	}
	return r.OrderID
}

func TestPayOrder(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	l := newLifecycle(t, 10)
	id := l.persisted(t, 5)
	if _, err := l.pay.Handle(ctx, application.OrderChangeCmd{User: 6, Order: id}); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("another user pays: %v, want ErrNotFound", err)
	}
	o, err := l.pay.Handle(ctx, application.OrderChangeCmd{User: 5, Order: id})
	if err != nil || o.Status != domain.StatusPaid {
		t.Fatalf("pay: %+v, %v", o, err)
	}
	if _, err := l.pay.Handle(ctx, application.OrderChangeCmd{User: 5, Order: id}); !errors.Is(err, domain.ErrInvalidState) {
		t.Fatalf("pay twice: %v, want ErrInvalidState", err)
	}
	if _, err := l.cancel.Handle(ctx, application.OrderChangeCmd{User: 5, Order: id}); !errors.Is(err, domain.ErrInvalidState) {
		t.Fatalf("cancel a paid order: %v, want ErrInvalidState", err)
	}
	// A queued order cannot be paid yet.
	queued := mustGrab(t, l.grabFixture, 6, 1)
	if _, err := l.pay.Handle(ctx, application.OrderChangeCmd{User: 6, Order: queued.OrderID}); !errors.Is(err, domain.ErrInvalidState) {
		t.Fatalf("pay a queued order: %v, want ErrInvalidState", err)
	}
	if len(l.payments.Authorized) != 1 {
		t.Fatalf("authorized %v, want only the first payment", l.payments.Authorized)
	}
	// A gateway that refuses leaves the order awaiting payment.
	other := l.persisted(t, 7)
	l.payments.Err = errors.New("card declined")
	if _, err := l.pay.Handle(ctx, application.OrderChangeCmd{User: 7, Order: other}); err == nil {
		t.Fatal("pay with a declined card succeeded")
	}
	if o := l.order(t, other); o.Status != domain.StatusAwaitingPayment {
		t.Fatalf("order after a declined payment: %+v", o)
	}
}

func TestCancelOrderReturnsTheUnitsAndTheUserMayGrabAgain(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	l := newLifecycle(t, 1)
	id := l.persisted(t, 5)
	if got := l.remaining(t); got != 0 {
		t.Fatalf("remaining = %d", got)
	}
	if _, err := l.cancel.Handle(ctx, application.OrderChangeCmd{User: 6, Order: id}); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("another user cancels: %v", err)
	}
	o, err := l.cancel.Handle(ctx, application.OrderChangeCmd{User: 5, Order: id})
	if err != nil || o.Status != domain.StatusCancelled {
		t.Fatalf("cancel: %+v, %v", o, err)
	}
	if got := l.remaining(t); got != 1 {
		t.Fatalf("remaining = %d after cancel, want 1", got)
	}
	if v, _ := l.vouchers.Get(ctx, l.id); v.Sold != 0 {
		t.Fatalf("sold = %d after cancel", v.Sold)
	}
	if _, err := l.cancel.Handle(ctx, application.OrderChangeCmd{User: 5, Order: id}); !errors.Is(err, domain.ErrInvalidState) {
		t.Fatalf("cancel twice: %v", err)
	}
	if n, _ := l.release.Handle(ctx); n != 0 {
		t.Fatalf("%d releases left to retry, want 0", n)
	}
	again := l.persisted(t, 5)
	if again == id {
		t.Fatal("the new grab reused the order id")
	}
}

func TestCancelWhileRedisIsDownReleasesLater(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	l := newLifecycle(t, 1)
	id := l.persisted(t, 5)
	l.stock.Err = domain.ErrUnavailable
	if _, err := l.cancel.Handle(ctx, application.OrderChangeCmd{User: 5, Order: id}); err != nil {
		t.Fatalf("cancel while Redis is down: %v", err)
	}
	if _, err := l.release.Handle(ctx); !errors.Is(err, domain.ErrUnavailable) {
		t.Fatalf("release while Redis is down: %v", err)
	}
	l.stock.Err = nil
	n, err := l.release.Handle(ctx)
	if err != nil || n != 1 {
		t.Fatalf("release after Redis is back: %d, %v", n, err)
	}
	if got := l.remaining(t); got != 1 {
		t.Fatalf("remaining = %d, want 1", got)
	}
	// Released twice, returned once.
	if _, err := application.NewCompensate(l.stock, l.orders).Handle(ctx, l.order(t, id)); err != nil {
		t.Fatal(err)
	}
	if got := l.remaining(t); got != 1 {
		t.Fatalf("remaining = %d after a second release, want 1", got)
	}
}

func TestExpireOrders(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	l := newLifecycle(t, 10)
	early := l.persisted(t, 5)
	l.clock.Set(t0.Add(10 * time.Minute))
	late := l.persisted(t, 6)

	l.clock.Set(t0.Add(paymentTimeout))
	if n, err := l.expire.Handle(ctx); err != nil || n != 0 {
		t.Fatalf("at the timeout exactly: %d, %v", n, err)
	}
	l.clock.Set(t0.Add(paymentTimeout + time.Second))
	if n, err := l.expire.Handle(ctx); err != nil || n != 1 {
		t.Fatalf("after the timeout: %d, %v", n, err)
	}
	if o := l.order(t, early); o.Status != domain.StatusExpired {
		t.Fatalf("early order: %+v", o)
	}
	if o := l.order(t, late); o.Status != domain.StatusAwaitingPayment {
		t.Fatalf("late order: %+v", o)
	}
	if got := l.remaining(t); got != 9 {
		t.Fatalf("remaining = %d, want 9", got)
	}
	if _, err := l.pay.Handle(ctx, application.OrderChangeCmd{User: 5, Order: early}); !errors.Is(err, domain.ErrInvalidState) {
		t.Fatalf("pay an expired order: %v", err)
	}
}

// An order's deadline is the one it was reserved with: after a restart with a
// shorter payment window (the stock took it under the longer one, the use cases now
// run with the shorter), it is neither refused payment nor expired before its
// deadline, and is expired after it; an order reserved after the restart has the
// shorter window. DESIGN.md v1.3 "Time".
func TestAnAnnouncedDeadlineIsKeptThroughAShorterWindow(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const before, after = 15 * time.Minute, 5 * time.Minute
	l := newLifecycle(t, 10)
	l.stock.Window = domain.PaymentWindow(before)
	unpaid, paid := l.persisted(t, 5), l.persisted(t, 6)
	announced, _ := paymentWindow.ExpiresAt(l.order(t, unpaid))
	if want := t0.Add(before); !announced.Equal(want) {
		t.Fatalf("announced %v, want %v", announced, want)
	}

	// The restart: the stock and the use cases run with the shorter window.
	l.stock.Window = domain.PaymentWindow(after)
	short := domain.PaymentWindow(after)
	comp := application.NewCompensate(l.stock, l.orders)
	pay := application.NewPayOrder(l.get, l.orders, l.payments, l.clock, short, l.changes)
	expire := application.NewExpireOrders(l.orders, comp, l.clock, short, l.changes)
	fresh := l.persisted(t, 7)
	if got, _ := short.ExpiresAt(l.order(t, fresh)); !got.Equal(t0.Add(after)) {
		t.Fatalf("an order reserved after the restart expires at %v, want %v", got, t0.Add(after))
	}

	l.clock.Set(t0.Add(after + time.Minute))
	if n, err := expire.Handle(ctx); err != nil || n != 1 {
		t.Fatalf("past the shorter window: expired %d, %v; want the fresh order alone", n, err)
	}
	for _, id := range []domain.OrderID{unpaid, paid} {
		o := l.order(t, id)
		if at, _ := short.ExpiresAt(o); o.Status != domain.StatusAwaitingPayment || !at.Equal(announced) {
			t.Fatalf("order %s: %s, expires at %v; want awaiting payment until %v", id, o.Status, at, announced)
		}
	}
	if o, err := pay.Handle(ctx, application.OrderChangeCmd{User: 6, Order: paid}); err != nil || o.Status != domain.StatusPaid {
		t.Fatalf("pay before the announced deadline: %+v, %v; want paid", o, err)
	}
	l.clock.Set(announced)
	if n, err := expire.Handle(ctx); err != nil || n != 0 {
		t.Fatalf("at the announced deadline: expired %d, %v; want none", n, err)
	}
	l.clock.Set(announced.Add(time.Millisecond))
	if n, err := expire.Handle(ctx); err != nil || n != 1 {
		t.Fatalf("after the announced deadline: expired %d, %v; want 1", n, err)
	}
	if o := l.order(t, unpaid); o.Status != domain.StatusExpired {
		t.Fatalf("order %s after its deadline: %s, want expired", unpaid, o.Status)
	}
}

// A payment that arrives after the order's expires_at is refused, to the
// millisecond, though the sweeper has not expired the order yet; one that arrives at
// expires_at is taken.
func TestPayAfterExpiresAtIsRefused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	l := newLifecycle(t, 10)
	late, onTime := l.persisted(t, 5), l.persisted(t, 6)
	expiry, ok := paymentWindow.ExpiresAt(l.order(t, late))
	if !ok || !expiry.Equal(t0.Add(paymentTimeout)) {
		t.Fatalf("expires at %v, %v; want %v", expiry, ok, t0.Add(paymentTimeout))
	}
	l.clock.Set(expiry.Add(time.Millisecond))
	if _, err := l.pay.Handle(ctx, application.OrderChangeCmd{User: 5, Order: late}); !errors.Is(err, domain.ErrInvalidState) {
		t.Fatalf("pay a millisecond after expires_at: %v, want ErrInvalidState", err)
	}
	if o := l.order(t, late); o.Status != domain.StatusAwaitingPayment {
		t.Fatalf("the refused order is %s, want still awaiting payment (for the sweeper)", o.Status)
	}
	if len(l.payments.Authorized) != 0 {
		t.Fatalf("authorized %v for a payment refused", l.payments.Authorized)
	}
	l.clock.Set(expiry)
	if o, err := l.pay.Handle(ctx, application.OrderChangeCmd{User: 6, Order: onTime}); err != nil || o.Status != domain.StatusPaid {
		t.Fatalf("pay at expires_at: %+v, %v; want paid", o, err)
	}
}

// TestPayVersusExpire runs both at once many times: exactly one wins each time. Each
// payment arrives at its order's expires_at (it is taken), and the sweeper runs a
// second later (it expires every order not paid yet).
func TestPayVersusExpire(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	l := newLifecycle(t, 200)
	ids := make([]domain.OrderID, 100)
	for i := range ids {
		ids[i] = l.persisted(t, domain.UserID(100+i))
	}
	l.clock.Set(t0.Add(paymentTimeout + time.Second))
	pay := application.NewPayOrder(l.get, l.orders, l.payments, memory.NewClock(t0.Add(paymentTimeout)), paymentWindow, memory.NewChanges())
	var wg sync.WaitGroup
	paid := make([]bool, len(ids))
	for i, id := range ids {
		wg.Add(2)
		go func() {
			defer wg.Done()
			_, err := pay.Handle(ctx, application.OrderChangeCmd{User: domain.UserID(100 + i), Order: id})
			paid[i] = err == nil
		}()
		go func() {
			defer wg.Done()
			if _, err := l.expire.Handle(ctx); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	for i, id := range ids {
		o := l.order(t, id)
		if paid[i] != (o.Status == domain.StatusPaid) || (o.Status != domain.StatusPaid && o.Status != domain.StatusExpired) {
			t.Fatalf("order %s: pay succeeded %v, status %s", id, paid[i], o.Status)
		}
	}
	units, _ := l.orders.UnitsByStatus(ctx, l.id, nil)
	if got := l.remaining(t) + units[domain.StatusPaid]; got != 200 {
		t.Fatalf("remaining + paid = %d, want 200", got)
	}
	// Only a payment that lost the race after authorizing is voided.
	if got, most := len(l.payments.Voided), 100-units[domain.StatusPaid]; got > most {
		t.Fatalf("voided %d payments, at most %d orders expired", got, most)
	}
}
