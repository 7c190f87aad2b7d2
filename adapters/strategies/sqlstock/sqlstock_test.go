package sqlstock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/seckill/seckill/adapters/stocktest"
	"github.com/seckill/seckill/adapters/strategies/sqlstock"
	"github.com/seckill/seckill/domain"
	"github.com/seckill/seckill/ports"
)

// remaining returns the units left of voucher v.
func (f stockFixture) remaining(t *testing.T, v domain.VoucherID) int {
	t.Helper()
	left, err := f.stock.Remaining(context.Background(), v)
	if err != nil {
		t.Fatalf("Remaining: %v", err)
	}
	n, ok := left[v]
	if !ok {
		t.Fatalf("voucher %d has no remaining units", v)
	}
	return n
}

// TestStockContract runs the ports.Stock contract suite against the database
// strategy, declaring how it differs: its sale state is the vouchers rows (Vouchers),
// and its reservations are the orders themselves (Orders).
func TestStockContract(t *testing.T) {
	stocktest.Run(t, func(t *testing.T) stocktest.Subject {
		f := newStockFixture(t)
		return stocktest.Subject{
			Stock:    f.stock,
			Recorded: f.recorded,
			Vouchers: f.vouchers,
			Orders:   f.orders,
		}
	})
}

// recorded returns the orders of voucher v as the reservations they were made from,
// for the contract suite: under this strategy a reserved grab is an order at once.
// It also fails unless the sold counter equals the units of the live orders, so every
// step of the suite checks the row against the orders.
func (f stockFixture) recorded(t *testing.T, v domain.VoucherID) []domain.Reservation {
	t.Helper()
	l, err := f.orders.Ledger(context.Background(), v)
	if errors.Is(err, domain.ErrNotFound) {
		return nil
	}
	if err != nil {
		t.Fatalf("Ledger(%d): %v", v, err)
	}
	var out []domain.Reservation
	live := 0
	for _, o := range l.Orders {
		if o.Status.HoldsStock() {
			live += o.Quantity
		}
		out = append(out, domain.Reservation{OrderID: o.ID, VoucherID: o.VoucherID, UserID: o.UserID, Quantity: o.Quantity, At: o.CreatedAt})
	}
	if got, want := l.Voucher.Sold, live; got != want {
		t.Fatalf("voucher %d: sold = %d, live orders hold %d", v, got, want)
	}
	return out
}

// The order is stored at once, with its deadline: its time plus the Stock's payment
// window.
func TestStockReserveStoresTheOrderAtOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newStockFixture(t)
	v := f.onSale(t, 10, 3)
	r := grabAt(1, v.ID, 42, 3, t0.Add(time.Minute+123456*time.Nanosecond))
	if err := f.stock.Reserve(ctx, r); err != nil {
		t.Fatal(err)
	}
	got := f.get(t, r.OrderID)
	at := r.At.UTC().Truncate(time.Microsecond)
	want := domain.Order{ID: r.OrderID, VoucherID: v.ID, UserID: 42, Quantity: 3,
		Status: domain.StatusAwaitingPayment, CreatedAt: at, ExpiresAt: at.Add(stockWindow)}
	if got != want {
		t.Fatalf("order = %+v, want %+v", got, want)
	}
	if got, want := f.sold(t, v.ID), 3; got != want {
		t.Fatalf("sold = %d, want %d", got, want)
	}
}

// TestStockReleaseReportsUntilMarked finishes what the contract suite declares of this
// strategy's Release (stocktest.Subject.Orders) but cannot see: it reports false for a
// live order, true for a closed one until Releases.MarkReleased records its release,
// then false, and never moves sold.
func TestStockReleaseReportsUntilMarked(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newStockFixture(t)
	v := f.onSale(t, 2, 1)
	first := grabAt(1, v.ID, 1, 1, t0.Add(time.Minute))
	if err := f.stock.Reserve(ctx, first); err != nil {
		t.Fatal(err)
	}

	if released, err := f.stock.Release(ctx, f.get(t, first.OrderID)); err != nil || released {
		t.Fatalf("Release of a live order = %v, %v; want false", released, err)
	}
	if got, want := f.remaining(t, v.ID), 1; got != want {
		t.Fatalf("remaining after releasing a live order = %d, want %d", got, want)
	}
	cancelled, err := f.orders.Transition(ctx, first.OrderID, 1, domain.StatusCancelled, nil)
	if err != nil {
		t.Fatal(err)
	}
	if released, err := f.stock.Release(ctx, cancelled); err != nil || !released {
		t.Fatalf("Release of the cancelled order = %v, %v; want true", released, err)
	}
	if err := f.orders.MarkReleased(ctx, cancelled.ID); err != nil {
		t.Fatal(err)
	}
	if released, err := f.stock.Release(ctx, cancelled); err != nil || released {
		t.Fatalf("Release once marked released = %v, %v; want false", released, err)
	}
	if got, want := f.remaining(t, v.ID), 2; got != want {
		t.Fatalf("remaining after the releases = %d, want %d (the cancellation gave the unit back)", got, want)
	}
	f.recorded(t, v.ID) // sold agrees with the live orders
}

// TestStockSetPausedLeavesTheRowsFlag: the paused flag is the row's, written by the
// vouchers repository (PauseSale does that first); SetPaused only reports whether the
// voucher exists, so a stale flag from a warm-up cannot undo a pause.
func TestStockSetPausedLeavesTheRowsFlag(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newStockFixture(t)
	v := f.onSale(t, 10, 1)
	_, err := f.vouchers.Update(ctx, v.ID, ports.VoucherUpdate{Action: domain.AuditVoucherPause,
		Change: func(v domain.Voucher) (domain.Voucher, error) { v.Paused = true; return v, nil }})
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := f.stock.SetPaused(ctx, v.ID, false); err != nil || !ok {
		t.Fatalf("SetPaused = %v, %v; want true", ok, err)
	}
	if err := f.stock.Reserve(ctx, grabAt(1, v.ID, 2, 1, t0)); !errors.Is(err, domain.ErrPaused) {
		t.Fatalf("Reserve while the row says paused = %v, want %v", err, domain.ErrPaused)
	}
}

var _ ports.Stock = (*sqlstock.Stock)(nil)
