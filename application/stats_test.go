package application_test

import (
	"context"
	"testing"

	"github.com/seckill/seckill/application"
	"github.com/seckill/seckill/domain"
)

// TestVoucherStatsAddUpBetweenCommitAndRedis: the stats add up at the two moments where
// the database has moved and Redis not yet — an order persisted but its entry not yet
// acknowledged, an order cancelled but its units not yet released — which a queued
// figure counted from the queue's entries gets wrong (twice the units, then none).
func TestVoucherStatsAddUpBetweenCommitAndRedis(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newSale(t, 10, 3)
	stats := application.NewGetVoucherStats(s.vouchers, s.orders, s.stock, s.clock, nil)
	r := mustGrab(t, s.grabFixture, 1, 3)
	check := func(when string, want application.VoucherStats) {
		t.Helper()
		got, err := stats.Handle(ctx, s.id)
		if err != nil {
			t.Fatal(err)
		}
		got.OldestQueued, want.Stock = 0, 10
		if got != want {
			t.Fatalf("%s: stats = %+v, want %+v", when, got, want)
		}
		if got.Stock != got.Remaining+got.Queued+got.AwaitingPayment+got.Paid {
			t.Fatalf("%s: stats do not add up: %+v", when, got)
		}
	}
	check("reserved", application.VoucherStats{Remaining: 7, Queued: 3, Pending: 1})
	// Persisted, not yet acknowledged: awaiting payment, no longer queued.
	if _, err := s.orders.Persist(ctx, []domain.Reservation{r}); err != nil {
		t.Fatal(err)
	}
	check("persisted, not acknowledged", application.VoucherStats{Remaining: 7, AwaitingPayment: 3, Pending: 1})
	if _, err := s.fulfill.Handle(ctx, s.read(t)); err != nil {
		t.Fatal(err)
	}
	check("acknowledged", application.VoucherStats{Remaining: 7, AwaitingPayment: 3})
	// Cancelled in the database, its units not yet released: on their way back.
	if _, err := s.orders.Transition(ctx, r.OrderID, 1, domain.StatusCancelled, nil); err != nil {
		t.Fatal(err)
	}
	check("cancelled, not released", application.VoucherStats{Remaining: 7, Queued: 3, Cancelled: 3})
	if _, err := s.stock.Release(ctx, s.order(t, r.OrderID)); err != nil {
		t.Fatal(err)
	}
	check("released", application.VoucherStats{Remaining: 10, Cancelled: 3})
}
