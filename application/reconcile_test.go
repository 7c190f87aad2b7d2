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

// recountFails is an order audit whose RecountSold fails while fail is set, and whose
// Ledger reads all along.
type recountFails struct {
	*memory.Orders
	fail bool
}

func (r *recountFails) RecountSold(ctx context.Context, id domain.VoucherID) (int, error) {
	if r.fail {
		return 0, domain.ErrUnavailable
	}
	return r.Orders.RecountSold(ctx, id)
}

func newReconcile(l lifecycle) *application.Reconcile {
	return application.NewReconcile(l.vouchers, l.stock, l.orders, application.NewCompensate(l.stock, l.orders), newRecover(l.vouchers, l.stock, l.orders, l.clock), l.vouchers.Log, l.clock, application.ReconcileOptions{Grace: time.Minute, KeyGrace: time.Hour})
}

func reconcileOnce(t *testing.T, rc *application.Reconcile, id domain.VoucherID, repair bool) application.VoucherReconciliation {
	t.Helper()
	out, err := rc.Handle(context.Background(), application.ReconcileCmd{Voucher: id, Repair: repair})
	if err != nil || len(out) != 1 {
		t.Fatalf("reconcile: %+v, %v", out, err)
	}
	return out[0]
}

func kinds(r application.VoucherReconciliation) []application.DriftKind {
	var out []application.DriftKind
	for _, d := range r.Drifts {
		out = append(out, d.Kind)
	}
	return out
}

// TestReconcileFindsAndRepairsEachDrift injects each kind of drift into a sale that
// was consistent, checks that reconcile names it, repairs it, and that the sale is
// consistent again afterwards.
func TestReconcileFindsAndRepairsEachDrift(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tests := []struct {
		name   string
		inject func(t *testing.T, l lifecycle, ids []domain.OrderID)
		want   []application.DriftKind
	}{
		{"reservation deleted", func(_ *testing.T, l lifecycle, ids []domain.OrderID) {
			l.stock.Forget(l.id, l.order(t, ids[0]).UserID)
		}, []application.DriftKind{application.DriftStockMismatch, application.DriftOrderWithoutReservation}},
		{"sale state lost", func(_ *testing.T, l lifecycle, _ []domain.OrderID) {
			l.stock.Drop(l.id)
		}, []application.DriftKind{application.DriftSaleStateMissing}},
		{"closed order still reserved", func(_ *testing.T, l lifecycle, ids []domain.OrderID) {
			l.orders.SetStatus(ids[1], domain.StatusCancelled) // closed without release or counter
		}, []application.DriftKind{application.DriftSoldMismatch, application.DriftClosedStillReserved}},
		{"sold counter off", func(_ *testing.T, l lifecycle, _ []domain.OrderID) {
			v, _ := l.vouchers.Get(context.Background(), l.id)
			v.Sold = 1
			l.vouchers.Put(v)
		}, []application.DriftKind{application.DriftSoldMismatch}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := newLifecycle(t, 10)
			rc := newReconcile(l)
			ids := []domain.OrderID{l.persisted(t, 1), l.persisted(t, 2), l.persisted(t, 3)}
			if r := reconcileOnce(t, rc, l.id, false); !r.Consistent() || len(r.Drifts) != 0 {
				t.Fatalf("before the drift: %+v", r)
			}
			tt.inject(t, l, ids)
			found := reconcileOnce(t, rc, l.id, false)
			if got := kinds(found); !sameKinds(got, tt.want) || found.Consistent() {
				t.Fatalf("found %v (consistent %v), want %v", got, found.Consistent(), tt.want)
			}
			repaired := reconcileOnce(t, rc, l.id, true)
			if !repaired.Consistent() {
				t.Fatalf("repair left drift: %+v", repaired)
			}
			if after := reconcileOnce(t, rc, l.id, false); len(after.Drifts) != 0 {
				t.Fatalf("after the repair: %+v", after)
			}
			stats, err := application.NewGetVoucherStats(l.vouchers, l.orders, l.stock, l.clock, nil).Handle(ctx, l.id)
			if err != nil {
				t.Fatal(err)
			}
			if stats.Stock != stats.Remaining+stats.Queued+stats.AwaitingPayment+stats.Paid {
				t.Fatalf("stats do not add up: %+v", stats)
			}
		})
	}
}

func TestReconcileRequeuesALostQueueEntry(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	l := newLifecycle(t, 10)
	rc := newReconcile(l)
	r := mustGrab(t, l.grabFixture, 1, 1)
	// The entry is lost before any worker read it (acknowledged away, say).
	ds := l.read(t)
	if err := l.queue.Ack(ctx, ds...); err != nil {
		t.Fatal(err)
	}
	if got := reconcileOnce(t, rc, l.id, false); len(got.Drifts) != 0 {
		t.Fatalf("a young reservation is judged: %+v", got)
	}
	l.clock.Set(t0.Add(2 * time.Minute))
	found := reconcileOnce(t, rc, l.id, true)
	if got := kinds(found); !sameKinds(got, []application.DriftKind{application.DriftReservationWithoutOrder}) || !found.Consistent() {
		t.Fatalf("found %+v", found)
	}
	if _, err := l.fulfill.Handle(ctx, l.read(t)); err != nil {
		t.Fatal(err)
	}
	if o := l.order(t, r.OrderID); o.Status != domain.StatusAwaitingPayment {
		t.Fatalf("requeued order = %+v", o)
	}
	if after := reconcileOnce(t, rc, l.id, false); len(after.Drifts) != 0 {
		t.Fatalf("after the repair: %+v", after)
	}
}

// TestReconcileFindsEntriesNoWorkerReads: a voucher left the queues the workers read
// with an entry still in its queue (its sale judged ended by a clock that was ahead):
// reconcile names it, and its repair has the entry read and persisted.
func TestReconcileFindsEntriesNoWorkerReads(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	l := newLifecycle(t, 10)
	rc := newReconcile(l)
	r := mustGrab(t, l.grabFixture, 1, 1)
	l.stock.StopReading(l.id)
	found := reconcileOnce(t, rc, l.id, false)
	if got := kinds(found); !sameKinds(got, []application.DriftKind{application.DriftEntriesUnread}) || found.Consistent() {
		t.Fatalf("found %+v, want the unread entry", found)
	}
	if repaired := reconcileOnce(t, rc, l.id, true); !repaired.Consistent() {
		t.Fatalf("repair left drift: %+v", repaired)
	}
	if _, err := l.fulfill.Handle(ctx, l.read(t)); err != nil {
		t.Fatal(err)
	}
	if o := l.order(t, r.OrderID); o.Status != domain.StatusAwaitingPayment {
		t.Fatalf("order of the unread entry = %+v, want it persisted", o)
	}
	if after := reconcileOnce(t, rc, l.id, false); len(after.Drifts) != 0 {
		t.Fatalf("after the repair: %+v", after)
	}
}

func sameKinds(a, b []application.DriftKind) bool {
	if len(a) != len(b) {
		return false
	}
	seen := map[application.DriftKind]int{}
	for _, k := range a {
		seen[k]++
	}
	for _, k := range b {
		seen[k]--
	}
	for _, n := range seen {
		if n != 0 {
			return false
		}
	}
	return true
}

// TestReconcileDoesNotRebuildWithoutASoldCount: when the database cannot recount the
// units its live orders hold, a voucher whose sale state vanished is not rebuilt —
// rebuilding with the full stock would sell units live orders hold — and the drift
// stays, with the error, until a repair can count.
func TestReconcileDoesNotRebuildWithoutASoldCount(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	l := newLifecycle(t, 3)
	audit := &recountFails{Orders: l.orders}
	rc := application.NewReconcile(l.vouchers, l.stock, audit, application.NewCompensate(l.stock, l.orders), application.NewRecoverVoucher(l.vouchers, l.stock, l.stock, audit, l.clock), l.vouchers.Log, l.clock, application.ReconcileOptions{Grace: time.Minute, KeyGrace: time.Hour})
	for user := range domain.UserID(3) {
		l.persisted(t, user+1)
	}
	l.stock.Drop(l.id)
	audit.fail = true

	r := reconcileOnce(t, rc, l.id, true)
	if r.Consistent() || len(r.Drifts) != 1 || r.Drifts[0].Kind != application.DriftSaleStateMissing ||
		r.Drifts[0].Repaired || r.Drifts[0].RepairError == "" {
		t.Fatalf("repair without a sold count: %+v, want the missing sale state left unrepaired with its error", r)
	}
	if left, _ := l.stock.Remaining(ctx, l.id); left[l.id] != 0 {
		t.Fatalf("sale state rebuilt with %d units on sale while 3 live orders hold all 3", left[l.id])
	}
	if _, err := l.grab.Handle(ctx, application.GrabVoucherCmd{VoucherID: l.id, UserID: 4, Quantity: 1}); err == nil {
		t.Fatal("a 4th grab was accepted with 3 units, all held by live orders")
	}

	audit.fail = false
	if r := reconcileOnce(t, rc, l.id, true); !r.Consistent() {
		t.Fatalf("repair once the database counts again: %+v", r)
	}
	left, _ := l.stock.Remaining(ctx, l.id)
	if n, ok := left[l.id]; !ok || n != 0 {
		t.Fatalf("rebuilt remaining = %d (present %v), want 0", n, ok)
	}
	if _, err := l.grab.Handle(ctx, application.GrabVoucherCmd{VoucherID: l.id, UserID: 4, Quantity: 1}); !errors.Is(err, domain.ErrSoldOut) {
		t.Fatalf("4th grab after the rebuild: %v, want ErrSoldOut", err)
	}
}

// TestReconcileCallsNothingInFlightDrift changes the sale while its snapshot is read,
// as a live sale does between the pages of the Redis adapter: what the snapshot missed
// or still shows is not drift once Redis is looked at again, and nothing is repaired.
func TestReconcileCallsNothingInFlightDrift(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tests := []struct {
		name   string
		during func(t *testing.T, l lifecycle, ids []domain.OrderID)
	}{
		{"grabbed and persisted after the scan passed", func(t *testing.T, l lifecycle, _ []domain.OrderID) {
			l.persisted(t, 3)
		}},
		{"cancelled and released after the scan passed", func(t *testing.T, l lifecycle, ids []domain.OrderID) {
			if _, err := l.cancel.Handle(ctx, application.OrderChangeCmd{User: 1, Order: ids[0]}); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := newLifecycle(t, 10)
			rc := newReconcile(l)
			ids := []domain.OrderID{l.persisted(t, 1), l.persisted(t, 2)}
			once := false
			l.stock.DuringSnapshot = func() {
				if !once {
					once = true
					tt.during(t, l, ids)
				}
			}
			if r := reconcileOnce(t, rc, l.id, true); len(r.Drifts) != 0 {
				t.Fatalf("in-flight change reported as drift: %+v", r)
			}
			if !once {
				t.Fatal("the change was not made during the snapshot")
			}
			if after := reconcileOnce(t, rc, l.id, false); len(after.Drifts) != 0 {
				t.Fatalf("afterwards: %+v", after)
			}
		})
	}
}
