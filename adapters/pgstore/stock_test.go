package pgstore_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"
	"testing"
	"time"

	"github.com/seckill/seckill/adapters/pgstore"
	"github.com/seckill/seckill/domain"
	"github.com/seckill/seckill/ports"
)

// stockFixture is a migrated database with the repositories and the database stock
// strategy over it.
type stockFixture struct {
	orderFixture
	stock *pgstore.Stock
}

func newStockFixture(t *testing.T) stockFixture {
	t.Helper()
	f := newOrderFixture(t)
	return stockFixture{orderFixture: f, stock: pgstore.NewStock(f.db)}
}

// onSale creates a voucher of stock units, limit units per user, on sale from t0 for
// an hour.
func (f stockFixture) onSale(t *testing.T, stock, limit int) domain.Voucher {
	t.Helper()
	v := newVoucher(fmt.Sprintf("stock %d", stock), t0, t0.Add(time.Hour))
	v.Stock, v.PerUserLimit = stock, limit
	return create(t, f.vouchers, v)
}

// grabAt is user's grab of qty units of v at, under order id n.
func grabAt(n int, v domain.VoucherID, user int64, qty int, at time.Time) domain.Reservation {
	r := reserve(n, v, user, qty)
	r.At = at
	return r
}

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

func TestStockReserveOutcomes(t *testing.T) {
	ctx := context.Background()
	f := newStockFixture(t)
	mid := t0.Add(30 * time.Minute)
	tests := []struct {
		name   string
		at     time.Time
		qty    int
		paused bool
		want   error
	}{
		{"reserved", mid, 1, false, nil},
		{"reserved at the opening instant", t0, 1, false, nil},
		{"reserved at the last millisecond", t0.Add(time.Hour - time.Millisecond), 2, false, nil},
		{"not started", t0.Add(-time.Millisecond), 1, false, domain.ErrNotStarted},
		{"ended at the closing instant", t0.Add(time.Hour), 1, false, domain.ErrEnded},
		{"ended", t0.Add(48 * time.Hour), 1, false, domain.ErrEnded},
		{"paused", mid, 1, true, domain.ErrPaused},
		{"over the per-user limit", mid, 3, false, domain.ErrInvalid},
		{"zero quantity", mid, 0, false, domain.ErrInvalid},
		{"negative quantity", mid, -1, false, domain.ErrInvalid},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v := f.onSale(t, 10, 2)
			if tc.paused {
				if _, err := f.vouchers.SetPaused(ctx, v.ID, true); err != nil {
					t.Fatal(err)
				}
			}
			r := grabAt(i+1, v.ID, 1, tc.qty, tc.at)

			err := f.stock.Reserve(ctx, r)
			if !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
				t.Fatalf("Reserve = %v, want %v", err, tc.want)
			}
			left, orders := 10, 0
			if tc.want == nil {
				left, orders = 10-tc.qty, tc.qty
			}
			if got, want := f.remaining(t, v.ID), left; got != want {
				t.Fatalf("remaining = %d, want %d", got, want)
			}
			units, err := f.orders.UnitsByStatus(ctx, v.ID)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := units[domain.StatusAwaitingPayment], orders; got != want {
				t.Fatalf("units awaiting payment = %d, want %d", got, want)
			}
			f.wantConsistent(t, v.ID)
		})
	}
}

func TestStockReserveStoresTheOrderAtOnce(t *testing.T) {
	ctx := context.Background()
	f := newStockFixture(t)
	v := f.onSale(t, 10, 3)
	r := grabAt(1, v.ID, 42, 3, t0.Add(time.Minute+123456*time.Nanosecond))
	if err := f.stock.Reserve(ctx, r); err != nil {
		t.Fatal(err)
	}
	got := f.get(t, r.OrderID)
	want := domain.Order{ID: r.OrderID, VoucherID: v.ID, UserID: 42, Quantity: 3,
		Status: domain.StatusAwaitingPayment, CreatedAt: r.At.UTC().Truncate(time.Microsecond)}
	if got != want {
		t.Fatalf("order = %+v, want %+v", got, want)
	}
	if got, want := f.sold(t, v.ID), 3; got != want {
		t.Fatalf("sold = %d, want %d", got, want)
	}
}

func TestStockReserveAlreadyPurchasedSoldOutAndAgainAfterCancel(t *testing.T) {
	ctx := context.Background()
	f := newStockFixture(t)
	v := f.onSale(t, 2, 1)
	at := t0.Add(time.Minute)
	first := grabAt(1, v.ID, 1, 1, at)
	if err := f.stock.Reserve(ctx, first); err != nil {
		t.Fatal(err)
	}

	var held *domain.AlreadyPurchasedError
	if err := f.stock.Reserve(ctx, grabAt(2, v.ID, 1, 1, at)); !errors.As(err, &held) || !errors.Is(err, domain.ErrAlreadyPurchased) {
		t.Fatalf("Reserve = %v, want an *domain.AlreadyPurchasedError", err)
	}
	if got, want := held.OrderID, first.OrderID; got != want {
		t.Fatalf("already purchased names order %q, want %q", got, want)
	}

	if err := f.stock.Reserve(ctx, grabAt(3, v.ID, 2, 1, at)); err != nil {
		t.Fatal(err)
	}
	// Sold out: a holder still learns its order, anyone else hears sold out.
	if err := f.stock.Reserve(ctx, grabAt(4, v.ID, 1, 1, at)); !errors.As(err, &held) || held.OrderID != first.OrderID {
		t.Fatalf("Reserve by a holder after sell-out = %v, want already purchased %s", err, first.OrderID)
	}
	if err := f.stock.Reserve(ctx, grabAt(5, v.ID, 3, 1, at)); !errors.Is(err, domain.ErrSoldOut) {
		t.Fatalf("Reserve = %v, want %v", err, domain.ErrSoldOut)
	}
	if got, want := f.remaining(t, v.ID), 0; got != want {
		t.Fatalf("remaining = %d, want %d", got, want)
	}
	if err := f.stock.Reserve(ctx, grabAt(6, 999, 3, 1, at)); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("Reserve of an unknown voucher = %v, want %v", err, domain.ErrNotFound)
	}

	// Cancelling the first order puts its unit back in the same transaction; the
	// release then has nothing to give, and says so once.
	live := f.get(t, first.OrderID)
	if released, err := f.stock.Release(ctx, live); err != nil || released {
		t.Fatalf("Release of a live order = %v, %v; want false", released, err)
	}
	cancelled, err := f.orders.Transition(ctx, first.OrderID, 1, domain.StatusCancelled)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := f.remaining(t, v.ID), 1; got != want {
		t.Fatalf("remaining after the cancellation = %d, want %d", got, want)
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
	if got, want := f.remaining(t, v.ID), 1; got != want {
		t.Fatalf("remaining after the releases = %d, want %d (a release gives nothing twice)", got, want)
	}
	if _, err := f.stock.Release(ctx, domain.Order{ID: cancelled.ID, Quantity: 0}); !errors.Is(err, domain.ErrInvalid) {
		t.Fatalf("Release of quantity 0 = %v, want %v", err, domain.ErrInvalid)
	}

	// The user whose order was cancelled may grab again.
	again := grabAt(7, v.ID, 1, 1, at)
	if err := f.stock.Reserve(ctx, again); err != nil {
		t.Fatalf("Reserve after the cancellation = %v", err)
	}
	if got, want := f.remaining(t, v.ID), 0; got != want {
		t.Fatalf("remaining = %d, want %d", got, want)
	}
	f.wantConsistent(t, v.ID)
}

func TestStockReserveConcurrentGrabsSellExactlyTheStock(t *testing.T) {
	ctx := context.Background()
	f := newStockFixture(t)
	const stock, users, twice = 50, 950, 50
	v := f.onSale(t, stock, 1)
	at := t0.Add(time.Minute)

	type answer struct {
		r   domain.Reservation
		err error
	}
	answers := make([]answer, users+twice)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range answers {
		// Requests users..users+twice-1 are second grabs by users 1..twice.
		r := grabAt(i+1, v.ID, int64(i%users+1), 1, at)
		wg.Go(func() {
			<-start
			answers[i] = answer{r, f.stock.Reserve(ctx, r)}
		})
	}
	close(start)
	wg.Wait()

	holds := map[domain.UserID]domain.OrderID{}
	for _, a := range answers {
		if a.err == nil {
			if _, dup := holds[a.r.UserID]; dup {
				t.Fatalf("user %d reserved twice", a.r.UserID)
			}
			holds[a.r.UserID] = a.r.OrderID
		}
	}
	if got, want := len(holds), stock; got != want {
		t.Fatalf("%d users reserved, want %d", got, want)
	}
	for _, a := range answers {
		var held *domain.AlreadyPurchasedError
		switch {
		case a.err == nil, errors.Is(a.err, domain.ErrSoldOut):
		case errors.As(a.err, &held):
			if got, want := held.OrderID, holds[a.r.UserID]; got != want {
				t.Fatalf("user %d told it holds %q, want %q", a.r.UserID, got, want)
			}
		default:
			t.Fatalf("user %d: unexpected answer %v", a.r.UserID, a.err)
		}
	}
	if got, want := f.remaining(t, v.ID), 0; got != want {
		t.Fatalf("remaining = %d, want %d", got, want)
	}
	if got, want := f.count(t), stock; got != want {
		t.Fatalf("%d orders stored, want %d", got, want)
	}
	for user, id := range holds {
		if o := f.get(t, id); o.UserID != user || o.Status != domain.StatusAwaitingPayment {
			t.Fatalf("order %s = %+v, want user %d awaiting payment", id, o, user)
		}
	}
	f.wantConsistent(t, v.ID)
}

func TestStockWarmRemainingPause(t *testing.T) {
	ctx := context.Background()
	f := newStockFixture(t)
	a, b := f.onSale(t, 10, 1), f.onSale(t, 5, 1)
	if loaded, err := f.stock.Warm(ctx, a); err != nil || loaded {
		t.Fatalf("Warm = %v, %v; want false: the row is the sale state", loaded, err)
	}
	if err := f.stock.Reserve(ctx, grabAt(1, a.ID, 1, 1, t0)); err != nil {
		t.Fatal(err)
	}
	left, err := f.stock.Remaining(ctx, a.ID, b.ID, 999)
	if err != nil {
		t.Fatal(err)
	}
	if want := map[domain.VoucherID]int{a.ID: 9, b.ID: 5}; !maps.Equal(left, want) {
		t.Fatalf("Remaining = %v, want %v", left, want)
	}
	if left, err := f.stock.Remaining(ctx); err != nil || len(left) != 0 {
		t.Fatalf("Remaining() = %v, %v; want an empty map", left, err)
	}

	// The flag is the row's: SetPaused leaves it to the repository that stored it.
	if _, err := f.vouchers.SetPaused(ctx, a.ID, true); err != nil {
		t.Fatal(err)
	}
	if ok, err := f.stock.SetPaused(ctx, a.ID, false); err != nil || !ok {
		t.Fatalf("SetPaused = %v, %v; want true", ok, err)
	}
	if err := f.stock.Reserve(ctx, grabAt(2, a.ID, 2, 1, t0)); !errors.Is(err, domain.ErrPaused) {
		t.Fatalf("Reserve while the row says paused = %v, want %v", err, domain.ErrPaused)
	}
	if ok, err := f.stock.SetPaused(ctx, 999, true); err != nil || ok {
		t.Fatalf("SetPaused of an unknown voucher = %v, %v; want false", ok, err)
	}
}

func TestStockAuditReadsTheDatabase(t *testing.T) {
	ctx := context.Background()
	f := newStockFixture(t)
	v := f.onSale(t, 10, 2)
	for i, qty := range []int{1, 2, 1} {
		if err := f.stock.Reserve(ctx, grabAt(i+1, v.ID, int64(i+1), qty, t0)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := f.orders.Transition(ctx, orderID(3), 0, domain.StatusExpired); err != nil {
		t.Fatal(err)
	}

	snap, err := f.stock.Snapshot(ctx, v.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := fmt.Sprint(snap.Present, snap.Stock, snap.Remaining, len(snap.Unacked)), "true 10 7 0"; got != want {
		t.Fatalf("present, stock, remaining, unacked = %s, want %s", got, want)
	}
	var ids []domain.OrderID
	for _, r := range snap.Reservations {
		ids = append(ids, r.OrderID)
	}
	if got, want := fmt.Sprint(ids), fmt.Sprint([]domain.OrderID{orderID(1), orderID(2)}); got != want {
		t.Fatalf("reservations = %s, want the live orders %s", got, want)
	}
	if snap, err := f.stock.Snapshot(ctx, 999); err != nil || snap.Present {
		t.Fatalf("Snapshot of an unknown voucher = %+v, %v; want not present", snap, err)
	}

	// Drift in the counter is recounted from the live orders.
	if _, err := f.db.NewRaw("UPDATE vouchers SET sold = 9 WHERE id = ?", int64(v.ID)).Exec(ctx); err != nil {
		t.Fatal(err)
	}
	left, err := f.stock.Recount(ctx, v.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := left, 7; got != want {
		t.Fatalf("Recount = %d, want %d", got, want)
	}
	if _, err := f.stock.Recount(ctx, 999); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("Recount of an unknown voucher = %v, want %v", err, domain.ErrNotFound)
	}
	if ok, err := f.stock.Restore(ctx, domain.Reservation{}); err != nil || ok {
		t.Fatalf("Restore = %v, %v; want false", ok, err)
	}
	if err := f.stock.Requeue(ctx, domain.Reservation{}); err != nil {
		t.Fatalf("Requeue = %v", err)
	}
	f.wantConsistent(t, v.ID)
}

var _ ports.Stock = (*pgstore.Stock)(nil)
