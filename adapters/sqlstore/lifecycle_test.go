package sqlstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"github.com/seckill/seckill/adapters/sqlstore"
	"github.com/seckill/seckill/domain"
	"github.com/seckill/seckill/ports"
)

// persisted persists rs and fails unless every one became a live order.
func (f orderFixture) persisted(t *testing.T, rs ...domain.Reservation) {
	t.Helper()
	for i, res := range f.persist(t, rs...) {
		if want := result(rs[i], ports.Persisted, ""); res != want {
			t.Fatalf("Persist result %d = %+v, want persisted", i, res)
		}
	}
}

// liveUnits is what sold should be: the units of v's live orders, summed by SQL.
func (f orderFixture) liveUnits(t *testing.T, v domain.VoucherID) int {
	t.Helper()
	var units int
	err := f.db.NewRaw(
		"SELECT coalesce(sum(quantity), 0) FROM orders WHERE voucher_id = ? AND status IN ('awaiting_payment', 'paid')",
		int64(v),
	).Scan(context.Background(), &units)
	if err != nil {
		t.Fatalf("sum live units of voucher %d: %v", v, err)
	}
	return units
}

// wantConsistent fails unless v's sold counter equals the units of its live orders.
func (f orderFixture) wantConsistent(t *testing.T, v domain.VoucherID) {
	t.Helper()
	if sold, live := f.sold(t, v), f.liveUnits(t, v); sold != live {
		t.Fatalf("voucher %d: sold = %d, live units = %d", v, sold, live)
	}
}

// releasedAt returns the order's released_at; ok is false when it is NULL.
func releasedAt(t *testing.T, db *bun.DB, id domain.OrderID) (at time.Time, ok bool) {
	t.Helper()
	var v *time.Time
	if err := db.NewRaw("SELECT released_at FROM orders WHERE id = ?", string(id)).Scan(context.Background(), &v); err != nil {
		t.Fatalf("read released_at of %s: %v", id, err)
	}
	if v == nil {
		return time.Time{}, false
	}
	return *v, true
}

// MarkReleased keeps an order's first released_at: marking it again changes nothing.
func TestMarkReleasedKeepsTheFirstTime(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newOrderFixture(t)
	v := f.voucher(t, 3)
	r1, r2 := reserve(1, v, 1, 1), reserve(2, v, 1, 1) // r2 fails: user 1 holds r1
	f.persist(t, r1, r2)
	for _, r := range []domain.Reservation{r1, r2} {
		if at, ok := releasedAt(t, f.db, r.OrderID); ok {
			t.Fatalf("order %s released at %v right after Persist, want NULL", r.OrderID, at)
		}
	}
	mark := func(ids ...domain.OrderID) {
		t.Helper()
		if err := f.orders.MarkReleased(ctx, ids...); err != nil {
			t.Fatalf("MarkReleased(%v): %v", ids, err)
		}
	}
	mark(r1.OrderID, r2.OrderID)
	if at, ok := releasedAt(t, f.db, r1.OrderID); ok {
		t.Fatalf("live order %s marked released at %v", r1.OrderID, at)
	}
	first, ok := releasedAt(t, f.db, r2.OrderID)
	if !ok {
		t.Fatalf("order %s not marked released", r2.OrderID)
	}
	mark(r2.OrderID)
	if again, _ := releasedAt(t, f.db, r2.OrderID); !again.Equal(first) {
		t.Fatalf("marking again moved released_at from %v to %v", first, again)
	}
}

func TestMarkReleasedNothing(t *testing.T) {
	t.Parallel()
	// A closed database proves nothing is touched.
	db := openMigrated(t)
	if err := db.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	if err := sqlstore.NewOrders(db).MarkReleased(context.Background()); err != nil {
		t.Fatalf("MarkReleased(): %v", err)
	}
}
