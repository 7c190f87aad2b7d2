package sqlstore_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"
	"testing"
	"time"

	"github.com/seckill/seckill/domain"
)

// scannedUnits sums v's orders by status the slow way, as the counters must agree.
func (f orderFixture) scannedUnits(t *testing.T, v domain.VoucherID) map[domain.OrderStatus]int {
	t.Helper()
	var rows []struct {
		Status string `bun:"status"`
		Units  int    `bun:"units"`
	}
	err := f.db.NewRaw("SELECT status, sum(quantity) AS units FROM orders WHERE voucher_id = ? GROUP BY status",
		int64(v)).Scan(context.Background(), &rows)
	if err != nil {
		t.Fatalf("scan units of voucher %d: %v", v, err)
	}
	out := make(map[domain.OrderStatus]int)
	for _, r := range rows {
		out[domain.OrderStatus(r.Status)] = r.Units
	}
	return out
}

// wantCounted fails unless UnitsByStatus of each voucher equals its orders summed.
func (f orderFixture) wantCounted(t *testing.T, vs ...domain.VoucherID) {
	t.Helper()
	for _, v := range vs {
		got, err := f.orders.UnitsByStatus(context.Background(), v, nil)
		if err != nil {
			t.Fatalf("UnitsByStatus: %v", err)
		}
		if want := f.scannedUnits(t, v); !maps.Equal(got, want) {
			t.Fatalf("voucher %d: UnitsByStatus = %v, orders hold %v", v, got, want)
		}
	}
}

func TestUnitCountersFollowEveryChange(t *testing.T) {
	f := newOrderFixture(t)
	ctx := context.Background()
	v, w := f.voucher(t, 5), f.voucher(t, 100)
	fold := func(limit int) {
		t.Helper()
		if _, err := f.orders.FoldUnits(ctx, limit); err != nil {
			t.Fatalf("FoldUnits: %v", err)
		}
	}
	f.persist(t, reserve(1, v, 1, 2), reserve(2, v, 2, 1), reserve(3, v, 1, 1), reserve(4, v, 3, 3), reserve(5, w, 1, 9))
	f.wantCounted(t, v, w)
	fold(1) // part of the changes only
	f.wantCounted(t, v, w)
	if _, err := f.orders.Transition(ctx, orderID(2), 2, domain.StatusPaid, nil); err != nil {
		t.Fatalf("pay: %v", err)
	}
	if _, err := f.orders.Transition(ctx, orderID(1), 1, domain.StatusCancelled, nil); err != nil {
		t.Fatalf("cancel: %v", err)
	}
	f.wantCounted(t, v, w)
	if _, err := f.orders.ExpireDue(ctx, time.Now().Add(time.Hour), 0, 10); err != nil {
		t.Fatalf("expire: %v", err)
	}
	if err := f.orders.MarkReleased(ctx, orderID(1), orderID(5)); err != nil {
		t.Fatalf("mark released: %v", err)
	}
	f.wantCounted(t, v, w)
	fold(1000)
	f.wantCounted(t, v, w)
	if n, err := f.orders.FoldUnits(ctx, 1000); err != nil || n != 0 {
		t.Fatalf("FoldUnits after folding all = %d, %v; want 0, nil", n, err)
	}
	if _, err := f.db.NewRaw("DELETE FROM orders WHERE id = ?", string(orderID(4))).Exec(ctx); err != nil {
		t.Fatalf("delete an order: %v", err)
	}
	f.wantCounted(t, v, w)
}

// TestUnitCountersUnderConcurrentWriters persists, pays and expires from several
// goroutines while others fold, and then the counters must equal the orders.
func TestUnitCountersUnderConcurrentWriters(t *testing.T) {
	f := newOrderFixture(t)
	ctx := context.Background()
	vs := []domain.VoucherID{f.voucher(t, 1000), f.voucher(t, 1000), f.voucher(t, 1000)}
	const writers, batches, size = 4, 10, 10
	var wg sync.WaitGroup
	errs := make(chan error, writers*batches*3)
	for g := range writers {
		wg.Go(func() {
			for b := range batches {
				var rs []domain.Reservation
				for i := range size {
					n := (g*batches+b)*size + i + 1
					rs = append(rs, reserve(n, vs[n%len(vs)], int64(n), 1+n%3))
				}
				if _, err := f.orders.Persist(ctx, rs); err != nil {
					errs <- fmt.Errorf("persist: %w", err)
				}
				// Another goroutine may have expired it first.
				_, err := f.orders.Transition(ctx, rs[0].OrderID, rs[0].UserID, domain.StatusPaid, nil)
				if err != nil && !errors.Is(err, domain.ErrInvalidState) {
					errs <- fmt.Errorf("pay: %w", err)
				}
				if _, err := f.orders.ExpireDue(ctx, time.Now().Add(time.Hour), 0, 3); err != nil {
					errs <- fmt.Errorf("expire: %w", err)
				}
				if _, err := f.orders.FoldUnits(ctx, 7); err != nil {
					errs <- fmt.Errorf("fold: %w", err)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	f.wantCounted(t, vs...)
}
