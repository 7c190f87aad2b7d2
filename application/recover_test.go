package application_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/seckill/seckill/adapters/memory"
	"github.com/seckill/seckill/application"
	"github.com/seckill/seckill/domain"
	"github.com/seckill/seckill/ports"
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
	if err := vouchers.Create(context.Background(), &v, domain.Author{}, nil); err != nil {
		t.Fatal(err)
	}
	stock, clock, orders := memory.NewStock(), memory.NewClock(t0), memory.NewOrders(vouchers)
	stock.Clock = clock
	return lostFixture{vouchers: vouchers, orders: orders, stock: stock, clock: clock, v: v,
		grab: application.NewGrabVoucher(stock, clock, &memory.OrderIDs{}, newRecover(vouchers, stock, orders, clock),
			application.NewBuyerGate(vouchers, clock, application.GateOptions{}), application.GrabOptions{})}
}

// newRecover is RecoverVoucher over the fakes.
func newRecover(vouchers *memory.Vouchers, stock *memory.Stock, orders *memory.Orders, clock ports.Clock) *application.RecoverVoucher {
	return application.NewRecoverVoucher(vouchers, stock, stock, orders, clock)
}

func (f lostFixture) grabAs(user domain.UserID) error {
	_, err := f.grab.Handle(context.Background(), application.GrabVoucherCmd{VoucherID: f.v.ID, UserID: user, Quantity: 1})
	return err
}

// TestGrabRebuildsALostSaleState: the first grab of a live voucher whose sale state is
// gone rebuilds it from the database and is judged as usual — never not_found.
func TestGrabRebuildsALostSaleState(t *testing.T) {
	t.Parallel()
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
	t.Parallel()
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
	t.Parallel()
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
	t.Parallel()
	f := newLostFixture(t, window)
	_, err := f.grab.Handle(context.Background(), application.GrabVoucherCmd{VoucherID: f.v.ID + 1, UserID: 7, Quantity: 1})
	if !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("grab of an unknown voucher: %v, want ErrNotFound", err)
	}
}

// TestGrabWhileTheRebuildFailsIsUnavailable: a rebuild that cannot reach the stock
// answers unavailable (a retry tells the truth), never not_found.
func TestGrabWhileTheRebuildFailsIsUnavailable(t *testing.T) {
	t.Parallel()
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
	t.Parallel()
	ctx := context.Background()
	f := newLostFixture(t, window)
	other := window
	if err := f.vouchers.Create(ctx, &other, domain.Author{}, nil); err != nil {
		t.Fatal(err)
	}
	held := domain.Reservation{OrderID: "held", VoucherID: f.v.ID, UserID: 7, Quantity: 1, At: t0}
	if _, err := f.orders.Persist(ctx, []domain.Reservation{held}); err != nil {
		t.Fatal(err)
	}
	warm := application.NewWarmVouchers(f.vouchers, f.stock, newRecover(f.vouchers, f.stock, f.orders, f.clock), f.clock)
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

// recoverFixture is a sale with orders persisted and a RecoverVoucher over it.
type recoverFixture struct {
	lifecycle
	recover *application.RecoverVoucher
}

func newRecoverFixture(t *testing.T, stock int, ledger ports.OrderAudit) recoverFixture {
	t.Helper()
	l := newLifecycle(t, stock)
	if ledger == nil {
		ledger = l.orders
	}
	return recoverFixture{lifecycle: l, recover: application.NewRecoverVoucher(l.vouchers, l.stock, l.stock, ledger, l.clock)}
}

// wantHeld fails unless user's grab is answered with order.
func (f recoverFixture) wantHeld(t *testing.T, user domain.UserID, order domain.OrderID) {
	t.Helper()
	_, err := f.grab.Handle(context.Background(), application.GrabVoucherCmd{VoucherID: f.id, UserID: user, Quantity: 1})
	var ap *domain.AlreadyPurchasedError
	if !errors.As(err, &ap) || ap.OrderID != order {
		t.Fatalf("grab by user %d after the recovery: %v, want already_purchased naming %s", user, err, order)
	}
}

// TestRecoverAfterARestartFromAnOlderSnapshot (reason restarted): the stock comes back
// as it was before a user cancelled and grabbed again, and before another bought. The
// recovery makes it the database's: the user's entry names the live order, not the
// cancelled one the snapshot remembers; the buyer the snapshot missed is recorded;
// the remaining units are what no live order holds; and the cancelled order's release,
// retried later, cannot free the live order's unit.
func TestRecoverAfterARestartFromAnOlderSnapshot(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newRecoverFixture(t, 10, nil)
	first := f.persisted(t, 1)
	for user := domain.UserID(2); user <= 5; user++ {
		f.persisted(t, user)
	}
	restart := f.stock.Save()
	cancelled, err := f.cancel.Handle(ctx, application.OrderChangeCmd{User: 1, Order: first})
	if err != nil {
		t.Fatal(err)
	}
	again := f.persisted(t, 1)
	newcomer := f.persisted(t, 6)
	restart()

	if err := f.recover.Handle(ctx, application.RecoverCmd{Voucher: f.id, Reason: application.RecoverRestarted}); err != nil {
		t.Fatalf("recover: %v", err)
	}
	f.wantHeld(t, 1, again)
	f.wantHeld(t, 6, newcomer)
	if got, want := f.remaining(t), 10-6; got != want {
		t.Fatalf("remaining after the recovery = %d, want %d", got, want)
	}
	if released, err := f.stock.Release(ctx, cancelled); err != nil || released {
		t.Fatalf("release of the cancelled order after the recovery = %v, %v; want nothing released", released, err)
	}
	if got, want := f.remaining(t), 10-6; got != want {
		t.Fatalf("remaining after the cancelled order's release = %d, want %d", got, want)
	}
}

// closesAfterReading is an order audit whose Ledger, once it has read the voucher,
// lets close run: an order closing while a recovery is under way.
type closesAfterReading struct {
	*memory.Orders
	close func()
}

func (c *closesAfterReading) Ledger(ctx context.Context, id domain.VoucherID) (ports.Ledger, error) {
	l, err := c.Orders.Ledger(ctx, id)
	if c.close != nil {
		c.close()
		c.close = nil
	}
	return l, err
}

// TestRecoverDoesNotResurrectAnOrderThatClosesMeanwhile: an order read live by the
// recovery is cancelled, and released, before the recovery writes it. It is not
// recorded again: its user may grab again and its unit is on sale.
func TestRecoverDoesNotResurrectAnOrderThatClosesMeanwhile(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ledger := &closesAfterReading{}
	f := newRecoverFixture(t, 3, ledger)
	ledger.Orders = f.orders
	order := f.persisted(t, 1)
	f.persisted(t, 2)
	ledger.close = func() {
		if _, err := f.cancel.Handle(ctx, application.OrderChangeCmd{User: 1, Order: order}); err != nil {
			t.Errorf("cancel: %v", err)
		}
	}
	if err := f.recover.Handle(ctx, application.RecoverCmd{Voucher: f.id, Reason: application.RecoverRestarted}); err != nil {
		t.Fatalf("recover: %v", err)
	}
	if got, want := f.remaining(t), 2; got != want {
		t.Fatalf("remaining = %d, want %d (the cancelled order's unit is back on sale)", got, want)
	}
	if _, err := f.grab.Handle(ctx, application.GrabVoucherCmd{VoucherID: f.id, UserID: 1, Quantity: 1}); err != nil {
		t.Fatalf("grab by the user whose order was cancelled during the recovery: %v, want reserved", err)
	}
}

// TestRecoverFinishesARecoveryThatDiedMidway (reason missing, from the warm-up): a
// recovery that marked the voucher restoring and never finished leaves its grabs
// answering unavailable; the next warm-up finds it so and recovers it.
func TestRecoverFinishesARecoveryThatDiedMidway(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newRecoverFixture(t, 3, nil)
	order := f.persisted(t, 1)
	if err := f.stock.Restoring(ctx, f.id); err != nil {
		t.Fatal(err)
	}
	if _, err := f.grab.Handle(ctx, application.GrabVoucherCmd{VoucherID: f.id, UserID: 2, Quantity: 1}); !errors.Is(err, domain.ErrUnavailable) {
		t.Fatalf("grab while restoring: %v, want ErrUnavailable", err)
	}
	warm := application.NewWarmVouchers(f.vouchers, f.stock, f.recover, f.clock)
	if _, err := warm.Handle(ctx); err != nil {
		t.Fatalf("warm-up: %v", err)
	}
	f.wantHeld(t, 1, order)
	if _, err := f.grab.Handle(ctx, application.GrabVoucherCmd{VoucherID: f.id, UserID: 2, Quantity: 1}); err != nil {
		t.Fatalf("grab after the warm-up finished the recovery: %v", err)
	}
}

// TestRecoverAnswersForUnknownAndEndedVouchers: nothing to recover, nothing loaded.
func TestRecoverAnswersForUnknownAndEndedVouchers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newRecoverFixture(t, 3, nil)
	if err := f.recover.Handle(ctx, application.RecoverCmd{Voucher: f.id + 1, Reason: application.RecoverMissing}); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("recover an unknown voucher: %v, want ErrNotFound", err)
	}
	f.stock.Drop(f.id)
	f.clock.Set(window.EndsAt)
	if err := f.recover.Handle(ctx, application.RecoverCmd{Voucher: f.id, Reason: application.RecoverRestarted}); !errors.Is(err, domain.ErrEnded) {
		t.Fatalf("recover an ended sale: %v, want ErrEnded", err)
	}
	if left, _ := f.stock.Remaining(ctx, f.id); len(left) != 0 {
		t.Fatalf("an ended sale was loaded: %v", left)
	}
}

// TestRecoverReportsEachRun: the observer hears each run's reason and outcome.
func TestRecoverReportsEachRun(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newRecoverFixture(t, 3, nil)
	var heard []string
	f.recover.Observe(func(r application.RecoverReason, err error) { heard = append(heard, fmt.Sprint(r, " ", err)) })
	if err := f.recover.Handle(ctx, application.RecoverCmd{Voucher: f.id, Reason: application.RecoverRestarted}); err != nil {
		t.Fatal(err)
	}
	f.stock.Err = domain.ErrUnavailable
	if err := f.recover.Handle(ctx, application.RecoverCmd{Voucher: f.id, Reason: application.RecoverMissing}); !errors.Is(err, domain.ErrUnavailable) {
		t.Fatalf("recover while the stock is down: %v, want ErrUnavailable", err)
	}
	if len(heard) != 2 || heard[0] != "restarted <nil>" || !strings.HasPrefix(heard[1], "missing ") || strings.HasSuffix(heard[1], "<nil>") {
		t.Fatalf("observed %q, want a restarted success and a missing failure", heard)
	}
}

// TestRecoverHealsAnEndedSaleWhoseStateIsThere: a sale that ended is not loaded again,
// but a state still there (its keys outlive the sale, and its stats read them) is made
// the database's after a restart from an older snapshot.
func TestRecoverHealsAnEndedSaleWhoseStateIsThere(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newRecoverFixture(t, 10, nil)
	for user := domain.UserID(1); user <= 3; user++ {
		f.persisted(t, user)
	}
	restart := f.stock.Save()
	f.persisted(t, 4)
	restart()
	f.clock.Set(window.EndsAt.Add(time.Minute))
	if err := f.recover.Handle(ctx, application.RecoverCmd{Voucher: f.id, Reason: application.RecoverRestarted}); err != nil {
		t.Fatalf("recover an ended sale whose state is there: %v", err)
	}
	if got, want := f.remaining(t), 10-4; got != want {
		t.Fatalf("remaining after the recovery = %d, want %d", got, want)
	}
	snap, err := f.stock.Snapshot(ctx, f.id)
	if err != nil || len(snap.Reservations) != 4 {
		t.Fatalf("reservations after the recovery = %v, %v; want the 4 live orders'", snap.Reservations, err)
	}
}
