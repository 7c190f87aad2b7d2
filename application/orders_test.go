package application_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/seckill/seckill/adapters/memory"
	"github.com/seckill/seckill/application"
	"github.com/seckill/seckill/domain"
)

func TestGetOrder(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newSale(t, 10, 1)
	get := application.NewGetOrder(s.orders, memory.Reservations{Stock: s.stock})
	r := mustGrab(t, s.grabFixture, 5, 1)

	// Reserved but not yet persisted: it reads queued, from the reservation.
	o, err := get.Handle(ctx, application.Caller{User: 5}, r.OrderID)
	if err != nil || o.Status != domain.StatusQueued || o.UserID != 5 || o.VoucherID != s.id || !o.CreatedAt.Equal(t0) {
		t.Fatalf("queued order = %+v, %v", o, err)
	}
	if _, err := s.fulfill.Handle(ctx, s.read(t)); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		caller application.Caller
		id     domain.OrderID
		want   error
	}{
		{"owner", application.Caller{User: 5}, r.OrderID, nil},
		{"admin", application.Caller{User: 1, Admin: true}, r.OrderID, nil},
		{"another user", application.Caller{User: 6}, r.OrderID, domain.ErrNotFound},
		{"no such order", application.Caller{User: 5}, "nope", domain.ErrNotFound},
	} {
		o, err := get.Handle(ctx, tc.caller, tc.id)
		if !errors.Is(err, tc.want) {
			t.Fatalf("%s: err = %v, want %v", tc.name, err, tc.want)
		}
		if tc.want == nil && o.Status != domain.StatusAwaitingPayment {
			t.Fatalf("%s: order = %+v", tc.name, o)
		}
	}
}

func TestListOrders(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newSale(t, 10, 1)
	r := mustGrab(t, s.grabFixture, 5, 1)
	mustGrab(t, s.grabFixture, 6, 1)
	list := application.NewListOrders(s.orders, memory.Reservations{Stock: s.stock})
	// Queued: listed from the reservation.
	page, err := list.Handle(ctx, application.Caller{User: 5}, application.ListOrdersQuery{})
	got := page.Orders
	if err != nil || len(got) != 1 || got[0].ID != r.OrderID || got[0].Status != domain.StatusQueued {
		t.Fatalf("orders = %+v, %v", got, err)
	}
	if _, err := s.fulfill.Handle(ctx, s.read(t)); err != nil {
		t.Fatal(err)
	}
	// Persisted: listed once, from the database.
	page, err = list.Handle(ctx, application.Caller{User: 5}, application.ListOrdersQuery{})
	got = page.Orders
	if err != nil || len(got) != 1 || got[0].ID != r.OrderID || got[0].Status != domain.StatusAwaitingPayment {
		t.Fatalf("orders = %+v, %v", got, err)
	}
	if page, err := list.Handle(ctx, application.Caller{User: 5}, application.ListOrdersQuery{Voucher: 999}); err != nil || len(page.Orders) != 0 {
		t.Fatalf("filtered by another voucher: %+v, %v", page, err)
	}
}

func TestVoucherStatsAddUp(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newSale(t, 10, 2)
	stats := application.NewGetVoucherStats(s.vouchers, s.orders, s.stock, s.clock, nil)
	mustGrab(t, s.grabFixture, 1, 2)
	mustGrab(t, s.grabFixture, 2, 1)
	if _, err := s.fulfill.Handle(ctx, s.read(t)); err != nil {
		t.Fatal(err)
	}
	mustGrab(t, s.grabFixture, 3, 2) // still queued
	s.clock.Set(s.clock.Now().Add(3 * time.Second))

	got, err := stats.Handle(ctx, s.id)
	if err != nil {
		t.Fatal(err)
	}
	want := application.VoucherStats{Stock: 10, Remaining: 5, Queued: 2, AwaitingPayment: 3, Pending: 1, OldestQueued: 3 * time.Second}
	if got != want {
		t.Fatalf("stats = %+v, want %+v", got, want)
	}
	if got.Stock != got.Remaining+got.Queued+got.AwaitingPayment+got.Paid {
		t.Fatalf("stats do not add up: %+v", got)
	}
	if _, err := stats.Handle(ctx, 999); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("unknown voucher: %v", err)
	}
}
