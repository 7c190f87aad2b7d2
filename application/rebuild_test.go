package application_test

import (
	"context"
	"errors"
	"runtime"
	"testing"
	"time"

	"github.com/seckill/seckill/adapters/memory"
	"github.com/seckill/seckill/application"
	"github.com/seckill/seckill/domain"
)

// lostFixture is a voucher the database has and the stock lost (a Redis that came back
// empty), with the grab path able to rebuild it.
type lostFixture struct {
	vouchers *memory.Vouchers
	orders   *memory.Orders
	stock    *memory.Stock
	clock    *memory.Clock
	grab     *application.GrabVoucher
	v        domain.Voucher
}

func newLostFixture(t *testing.T, v domain.Voucher) lostFixture {
	t.Helper()
	vouchers := memory.NewVouchers()
	if err := vouchers.Create(context.Background(), &v, nil); err != nil {
		t.Fatal(err)
	}
	stock, clock, orders := memory.NewStock(), memory.NewClock(t0), memory.NewOrders(vouchers)
	warm := application.NewWarmVouchers(vouchers, stock, stock, orders, clock)
	return lostFixture{vouchers: vouchers, orders: orders, stock: stock, clock: clock, v: v,
		grab: application.NewGrabVoucher(stock, clock, &memory.OrderIDs{}, warm, application.GrabOptions{})}
}

func (f lostFixture) grabAs(user domain.UserID) error {
	_, err := f.grab.Handle(context.Background(), application.GrabVoucherCmd{VoucherID: f.v.ID, UserID: user, Quantity: 1})
	return err
}

// TestGrabRebuildsALostSaleState: the first grab of a live voucher whose sale state is
// gone rebuilds it from the database and is judged as usual — never not_found.
func TestGrabRebuildsALostSaleState(t *testing.T) {
	f := newLostFixture(t, window)
	if err := f.grabAs(7); err != nil {
		t.Fatalf("grab of a live voucher without sale state: %v, want reserved", err)
	}
	left, _ := f.stock.Remaining(context.Background(), f.v.ID)
	if got, want := left[f.v.ID], window.Stock-1; got != want {
		t.Fatalf("remaining after the rebuild and the grab = %d, want %d", got, want)
	}
}

// TestGrabOfALostSaleRestoresItsBuyers: the rebuild records the live orders' buyers
// in the background before any grab is judged: meanwhile grabs answer unavailable,
// then a user who holds an order is answered with it.
func TestGrabOfALostSaleRestoresItsBuyers(t *testing.T) {
	f := newLostFixture(t, window)
	held := domain.Reservation{OrderID: "held", VoucherID: f.v.ID, UserID: 7, Quantity: 1, At: t0}
	if _, err := f.orders.Persist(context.Background(), []domain.Reservation{held}); err != nil {
		t.Fatal(err)
	}
	var err error
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
		if err = f.grabAs(7); !errors.Is(err, domain.ErrUnavailable) {
			break
		}
		runtime.Gosched()
	}
	var ap *domain.AlreadyPurchasedError
	if !errors.As(err, &ap) || ap.OrderID != "held" {
		t.Fatalf("grab by the holder of a live order after the loss: %v, want already_purchased naming it", err)
	}
	left, _ := f.stock.Remaining(context.Background(), f.v.ID)
	if got, want := left[f.v.ID], window.Stock-1; got != want {
		t.Fatalf("remaining = %d, want %d (the live order's unit is not on sale)", got, want)
	}
}

// TestGrabOfAnEndedSaleWithoutStateIsEnded: once its keys expired, an ended sale is
// answered ended, not not_found, and the database is asked once for many grabs.
func TestGrabOfAnEndedSaleWithoutStateIsEnded(t *testing.T) {
	f := newLostFixture(t, window)
	f.clock.Set(window.EndsAt.Add(48 * time.Hour))
	for range 3 {
		if err := f.grabAs(7); !errors.Is(err, domain.ErrEnded) {
			t.Fatalf("grab of an ended sale without state: %v, want ErrEnded", err)
		}
	}
	if left, _ := f.stock.Remaining(context.Background(), f.v.ID); len(left) != 0 {
		t.Fatalf("an ended sale was loaded again: %v", left)
	}
}

// TestGrabOfAnUnknownVoucherIsNotFound: a voucher the database does not have either.
func TestGrabOfAnUnknownVoucherIsNotFound(t *testing.T) {
	f := newLostFixture(t, window)
	_, err := f.grab.Handle(context.Background(), application.GrabVoucherCmd{VoucherID: f.v.ID + 1, UserID: 7, Quantity: 1})
	if !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("grab of an unknown voucher: %v, want ErrNotFound", err)
	}
}

// TestGrabWhileTheRebuildFailsIsUnavailable: a rebuild that cannot reach the stock
// answers unavailable (a retry tells the truth), never not_found.
func TestGrabWhileTheRebuildFailsIsUnavailable(t *testing.T) {
	f := newLostFixture(t, window)
	f.stock.Err = domain.ErrUnavailable
	err := f.grabAs(7)
	f.stock.Err = nil
	if !errors.Is(err, domain.ErrUnavailable) {
		t.Fatalf("grab while the stock is down: %v, want ErrUnavailable", err)
	}
	if err := f.grabAs(7); err != nil {
		t.Fatalf("grab once the stock is back: %v, want reserved", err)
	}
}

// TestWarmVouchersLoadsAllThenRestores: after a loss, one Handle opens the voucher
// without live orders and restores the buyers of the one with them.
func TestWarmVouchersLoadsAllThenRestores(t *testing.T) {
	ctx := context.Background()
	f := newLostFixture(t, window)
	other := window
	if err := f.vouchers.Create(ctx, &other, nil); err != nil {
		t.Fatal(err)
	}
	held := domain.Reservation{OrderID: "held", VoucherID: f.v.ID, UserID: 7, Quantity: 1, At: t0}
	if _, err := f.orders.Persist(ctx, []domain.Reservation{held}); err != nil {
		t.Fatal(err)
	}
	warm := application.NewWarmVouchers(f.vouchers, f.stock, f.stock, f.orders, f.clock)
	if n, err := warm.Handle(ctx); err != nil || n != 2 {
		t.Fatalf("Handle = %d, %v; want 2 loaded", n, err)
	}
	var ap *domain.AlreadyPurchasedError
	if err := f.grabAs(7); !errors.As(err, &ap) || ap.OrderID != "held" {
		t.Fatalf("grab by the holder after the warm-up: %v, want already_purchased naming it", err)
	}
	if _, err := f.grab.Handle(ctx, application.GrabVoucherCmd{VoucherID: other.ID, UserID: 7, Quantity: 1}); err != nil {
		t.Fatalf("grab of the voucher without live orders: %v", err)
	}
	if n, err := warm.Handle(ctx); err != nil || n != 0 {
		t.Fatalf("Handle again = %d, %v; want nothing loaded", n, err)
	}
}
