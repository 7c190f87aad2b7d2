package sqlstore_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/seckill/seckill/adapters/testenv"
	"github.com/seckill/seckill/domain"
	"github.com/seckill/seckill/ports"
)

func TestLedger(t *testing.T) {
	ctx := context.Background()
	f := newOrderFixture(t)
	v, w := f.voucher(t, 5), f.voucher(t, 5)
	rs := []domain.Reservation{
		reserve(1, v, 1, 2),
		reserve(2, w, 1, 1), // another voucher's
		reserve(3, v, 3, 1),
		reserve(4, v, 1, 1), // fails: user 1 holds order 1
		reserve(5, v, 5, 1),
	}
	f.persist(t, rs...)
	if _, err := f.orders.Transition(ctx, rs[2].OrderID, 0, domain.StatusPaid); err != nil {
		t.Fatalf("pay: %v", err)
	}
	if _, err := f.orders.Transition(ctx, rs[4].OrderID, 0, domain.StatusCancelled); err != nil {
		t.Fatalf("cancel: %v", err)
	}

	got, err := f.orders.Ledger(ctx, v)
	if err != nil {
		t.Fatalf("Ledger: %v", err)
	}
	voucher, err := f.vouchers.Get(ctx, v)
	if err != nil {
		t.Fatalf("Get voucher: %v", err)
	}
	if got.Voucher != voucher {
		t.Fatalf("ledger voucher =\n%+v, want\n%+v", got.Voucher, voucher)
	}
	if got, want := got.Voucher.Sold, 2+1; got != want {
		t.Fatalf("ledger sold = %d, want %d", got, want)
	}
	want := []domain.Order{
		asOrder(rs[0], domain.StatusAwaitingPayment),
		asOrder(rs[2], domain.StatusPaid),
		asOrder(rs[3], domain.StatusFailed),
		asOrder(rs[4], domain.StatusCancelled),
	}
	if !slices.Equal(got.Orders, want) {
		t.Fatalf("ledger orders =\n%+v, want\n%+v", got.Orders, want)
	}

	empty, err := f.orders.Ledger(ctx, f.voucher(t, 1))
	if err != nil {
		t.Fatalf("Ledger of a voucher without orders: %v", err)
	}
	if empty.Orders == nil || len(empty.Orders) != 0 {
		t.Fatalf("orders of a voucher without any = %#v, want an empty, non-nil slice", empty.Orders)
	}
	if _, err := f.orders.Ledger(ctx, w+1000); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("Ledger of an unknown voucher: %v, want domain.ErrNotFound", err)
	}
}

// liveOf sums the units of a ledger's live orders.
func liveOf(l ports.Ledger) int {
	units := 0
	for _, o := range l.Orders {
		if o.Status.HoldsStock() {
			units += o.Quantity
		}
	}
	return units
}

// checkLedgers reads v's ledger until done, and stops at the first that shows sold
// unequal to the live units (or an error). It returns how many it read.
func checkLedgers(ctx context.Context, f orderFixture, v domain.VoucherID, done *atomic.Bool) (int, error) {
	reads := 0
	for !done.Load() {
		l, err := f.orders.Ledger(ctx, v)
		if err != nil {
			return reads, fmt.Errorf("Ledger: %w", err)
		}
		if live := liveOf(l); l.Voucher.Sold != live {
			return reads, fmt.Errorf("ledger shows sold %d beside %d live units in %d orders", l.Voucher.Sold, live, len(l.Orders))
		}
		reads++
	}
	return reads, nil
}

// Every commit keeps sold equal to the live units, so a ledger read from one snapshot
// always shows them equal, however busy the voucher; two reads at different moments
// would not.
func TestLedgerIsOneSnapshot(t *testing.T) {
	ctx := context.Background()
	f := newOrderFixture(t)
	v := f.voucher(t, 100_000)
	const rounds, size = 60, 5

	var done atomic.Bool
	var wg sync.WaitGroup
	var writeErr error
	wg.Go(func() {
		defer done.Store(true)
		n := 0
		for range rounds {
			var batch []domain.Reservation
			for range size {
				n++
				batch = append(batch, reserve(n, v, int64(n), 1+n%3))
			}
			if _, err := f.orders.Persist(ctx, batch); err != nil {
				writeErr = err
				return
			}
			for _, r := range batch[:2] {
				if _, err := f.orders.Transition(ctx, r.OrderID, 0, domain.StatusCancelled); err != nil {
					writeErr = err
					return
				}
			}
		}
	})
	reads, readErr := checkLedgers(ctx, f, v, &done)
	wg.Wait()
	if writeErr != nil {
		t.Fatalf("writer: %v", writeErr)
	}
	if readErr != nil {
		t.Fatal(readErr)
	}
	t.Logf("%d consistent ledgers read", reads)
	l, err := f.orders.Ledger(ctx, v)
	if err != nil {
		t.Fatalf("Ledger: %v", err)
	}
	if got, want := len(l.Orders), rounds*size; got != want {
		t.Fatalf("final ledger has %d orders, want %d", got, want)
	}
}

func TestRecountSold(t *testing.T) {
	ctx := context.Background()
	f := newOrderFixture(t)
	v := f.voucher(t, 10)
	f.persist(t,
		reserve(1, v, 1, 2),
		reserve(2, v, 2, 3),
		reserve(3, v, 3, 1),
		reserve(4, v, 1, 1), // fails: user 1 holds order 1
	)
	if _, err := f.orders.Transition(ctx, orderID(2), 0, domain.StatusPaid); err != nil {
		t.Fatalf("pay: %v", err)
	}
	if _, err := f.orders.Transition(ctx, orderID(3), 0, domain.StatusCancelled); err != nil {
		t.Fatalf("cancel: %v", err)
	}
	const live = 2 + 3

	// Corrupt the counter both ways, within what the CHECK allows.
	for _, wrong := range []int{0, 10, live - 1} {
		if _, err := f.db.NewRaw("UPDATE vouchers SET sold = ? WHERE id = ?", wrong, int64(v)).Exec(ctx); err != nil {
			t.Fatalf("corrupt sold: %v", err)
		}
		got, err := f.orders.RecountSold(ctx, v)
		if err != nil {
			t.Fatalf("RecountSold: %v", err)
		}
		if got != live {
			t.Fatalf("RecountSold from %d = %d, want %d", wrong, got, live)
		}
		if got := f.sold(t, v); got != live {
			t.Fatalf("sold = %d after recounting from %d, want %d", got, wrong, live)
		}
	}

	empty := f.voucher(t, 3)
	if got, err := f.orders.RecountSold(ctx, empty); err != nil || got != 0 {
		t.Fatalf("RecountSold of a voucher without orders = %d, %v; want 0", got, err)
	}
	if _, err := f.orders.RecountSold(ctx, v+1000); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("RecountSold of an unknown voucher: %v, want domain.ErrNotFound", err)
	}
}

// Recounting while workers persist and users cancel loses none of their updates.
func TestRecountSoldConcurrently(t *testing.T) {
	ctx := context.Background()
	f := newOrderFixture(t)
	v := f.voucher(t, 100_000)
	const writers, rounds, size = 3, 40, 5

	var wg sync.WaitGroup
	var next atomic.Int64
	writeErrs := make([]error, writers)
	liveUnits := make([]int, writers) // what each writer left live
	for w := range writers {
		wg.Go(func() {
			for range rounds {
				var batch []domain.Reservation
				for range size {
					n := int(next.Add(1))
					batch = append(batch, reserve(n, v, int64(n), 1+n%3))
				}
				if _, err := f.orders.Persist(ctx, batch); err != nil {
					writeErrs[w] = err
					return
				}
				if _, err := f.orders.Transition(ctx, batch[0].OrderID, 0, domain.StatusCancelled); err != nil {
					writeErrs[w] = err
					return
				}
				for _, r := range batch[1:] {
					liveUnits[w] += r.Quantity
				}
			}
		})
	}
	// A recount that lost an update leaves sold wrong only until the next recount, so
	// the end state alone would show just the last one's; a ledger (one snapshot) read
	// all along catches any of them.
	var writersDone, stop atomic.Bool
	var bg sync.WaitGroup
	bg.Go(func() {
		wg.Wait()
		writersDone.Store(true)
	})
	var recounts int
	var recountErr error
	bg.Go(func() {
		for !writersDone.Load() && !stop.Load() {
			if _, err := f.orders.RecountSold(ctx, v); err != nil {
				recountErr = err
				return
			}
			recounts++
		}
	})
	reads, readErr := checkLedgers(ctx, f, v, &writersDone)
	stop.Store(true)
	bg.Wait()
	if readErr != nil {
		t.Fatalf("after %d ledgers and %d recounts: %v", reads, recounts, readErr)
	}

	for w, err := range writeErrs {
		if err != nil {
			t.Fatalf("writer %d: %v", w, err)
		}
	}
	if recountErr != nil {
		t.Fatalf("RecountSold: %v", recountErr)
	}
	t.Logf("%d recounts ran beside %d batches, %d ledgers read", recounts, writers*rounds, reads)
	want := 0
	for _, units := range liveUnits {
		want += units
	}
	if got := f.liveUnits(t, v); got != want {
		t.Fatalf("orders hold %d live units, want %d", got, want)
	}
	if got := f.sold(t, v); got != want {
		t.Fatalf("sold = %d after concurrent recounts, want the %d live units", got, want)
	}
	if got, want := f.count(t), writers*rounds*size; got != want {
		t.Fatalf("%d orders stored, want %d", got, want)
	}
}

// terminateOthers drops every other connection to the test's database, as a server
// restart would, and waits until they are gone.
func terminateOthers(t *testing.T, f orderFixture) {
	t.Helper()
	ctx := context.Background()
	var name string
	if err := f.db.QueryRowContext(ctx, "SELECT current_database()").Scan(&name); err != nil {
		t.Fatal(err)
	}
	admin, err := pgx.Connect(ctx, testenv.AdminDatabaseURL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	if _, err := admin.Exec(ctx,
		"SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()", name); err != nil {
		t.Fatal(err)
	}
	for range 100 {
		var left int
		if err := admin.QueryRow(ctx, "SELECT count(*) FROM pg_stat_activity WHERE datname = $1", name).Scan(&left); err != nil {
			t.Fatal(err)
		}
		if left == 0 {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatal("connections still open after pg_terminate_backend")
}

// The lifecycle, release and audit methods report a dropped connection as
// domain.ErrUnavailable, like the rest of the repository.
func TestLifecycleLostConnectionsAreUnavailable(t *testing.T) {
	testenv.AdminDatabaseURL(t) // a test of the server: PostgreSQL's pass alone
	ctx := context.Background()
	f := newOrderFixture(t)
	v := f.voucher(t, 10)
	r := reserve(1, v, 1, 1)
	f.persisted(t, r)
	// One connection, used just before the drop: the pool hands out that dead one
	// rather than pinging it (pgx pings only connections idle for over a second).
	f.db.SetMaxOpenConns(1)

	calls := map[string]func() error{
		"Transition": func() error {
			_, err := f.orders.Transition(ctx, r.OrderID, r.UserID, domain.StatusPaid)
			return err
		},
		"ExpireDue": func() error {
			_, err := f.orders.ExpireDue(ctx, t0.Add(time.Hour), 10)
			return err
		},
		"Unreleased": func() error {
			_, err := f.orders.Unreleased(ctx, 10)
			return err
		},
		"MarkReleased": func() error { return f.orders.MarkReleased(ctx, r.OrderID) },
		"Ledger": func() error {
			_, err := f.orders.Ledger(ctx, v)
			return err
		},
		"RecountSold": func() error {
			_, err := f.orders.RecountSold(ctx, v)
			return err
		},
	}
	for name, call := range calls {
		t.Run(name, func(t *testing.T) {
			// After the previous drop the pool may need a try or two to reconnect.
			for i := 0; ; i++ {
				_, err := f.orders.Get(ctx, r.OrderID)
				if err == nil {
					break
				}
				if !errors.Is(err, domain.ErrUnavailable) || i == 10 {
					t.Fatalf("Get before the drop: %v", err)
				}
			}
			terminateOthers(t, f)
			if err := call(); !errors.Is(err, domain.ErrUnavailable) {
				t.Fatalf("%s on a dropped connection: %v, want domain.ErrUnavailable", name, err)
			}
		})
	}
}
