package sqlstore_test

import (
	"context"
	"maps"
	"testing"
	"time"

	"github.com/seckill/seckill/domain"
)

func TestImportStoresGeneratedSalesConsistently(t *testing.T) {
	f := newOrderFixture(t)
	ctx := context.Background()
	a, b := newVoucher("a", t0, t0.Add(time.Hour)), newVoucher("b", t0, t0.Add(time.Hour))
	a.Sold = 3
	vs, err := f.vouchers.Import(ctx, []domain.Voucher{a, b})
	if err != nil {
		t.Fatal(err)
	}
	if len(vs) != 2 || vs[0].ID == 0 || vs[1].ID == vs[0].ID || vs[0].Sold != 3 || vs[1].Title != "b" {
		t.Fatalf("Import vouchers = %+v", vs)
	}
	order := func(n int, status domain.OrderStatus, qty int) domain.Order {
		r := reserve(n, vs[0].ID, int64(n), qty)
		return domain.Order{ID: r.OrderID, VoucherID: r.VoucherID, UserID: r.UserID, Quantity: qty, Status: status, CreatedAt: r.At}
	}
	err = f.orders.Import(ctx, []domain.Order{
		order(1, domain.StatusPaid, 2), order(2, domain.StatusAwaitingPayment, 1), order(3, domain.StatusCancelled, 1),
	})
	if err != nil {
		t.Fatal(err)
	}
	f.wantConsistent(t, vs[0].ID)
	got, err := f.orders.UnitsByStatus(ctx, vs[0].ID, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := map[domain.OrderStatus]int{domain.StatusPaid: 2, domain.StatusAwaitingPayment: 1, domain.StatusCancelled: 1}
	if !maps.Equal(got, want) {
		t.Fatalf("UnitsByStatus = %v, want %v", got, want)
	}
	// The cancelled order's units are back on sale already: nothing to release.
	if closed, err := f.orders.Unreleased(ctx, 10); err != nil || len(closed) != 0 {
		t.Fatalf("Unreleased = %v, %v; want none", closed, err)
	}
}
