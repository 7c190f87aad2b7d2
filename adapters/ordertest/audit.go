package ordertest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/seckill/seckill/domain"
)

// auditTests hold ports.OrderAudit to its contract.
var auditTests = []test{
	{"Ledger", testLedger},
	{"LedgerIsOneSnapshot", testLedgerIsOneSnapshot},
	{"RecountSold", testRecountSold},
	{"RecountSoldConcurrently", testRecountSoldConcurrently},
}

func testLedger(t *testing.T, f *fixture) {
	v, w := f.voucher(t, 5), f.voucher(t, 5)
	rs := []domain.Reservation{
		reserve(1, v, 1, 2),
		reserve(2, w, 1, 1), // another voucher's
		reserve(3, v, 3, 1),
		reserve(4, v, 1, 1), // fails: user 1 holds order 1
		reserve(5, v, 5, 1),
	}
	f.persist(t, rs...)
	if _, err := f.Store.Transition(f.ctx, rs[2].OrderID, 0, domain.StatusPaid, nil); err != nil {
		t.Fatalf("pay: %v", err)
	}
	if _, err := f.Store.Transition(f.ctx, rs[4].OrderID, 0, domain.StatusCancelled, nil); err != nil {
		t.Fatalf("cancel: %v", err)
	}

	got := f.ledger(t, v)
	voucher, err := f.Vouchers.Get(f.ctx, v)
	if err != nil {
		t.Fatalf("Get voucher: %v", err)
	}
	if got.Voucher != voucher {
		t.Fatalf("ledger voucher =\n%+v, want\n%+v", got.Voucher, voucher)
	}
	if got, want := got.Voucher.Sold, 2+1; got != want {
		t.Fatalf("ledger sold = %d, want %d", got, want)
	}
	wantOrders(t, "ledger orders, oldest first", got.Orders,
		asOrder(rs[0], domain.StatusAwaitingPayment),
		asOrder(rs[2], domain.StatusPaid),
		asOrder(rs[3], domain.StatusFailed),
		asOrder(rs[4], domain.StatusCancelled),
	)

	wantEmpty(t, "orders of a voucher without any", f.ledger(t, f.voucher(t, 1)).Orders)
	if _, err := f.Store.Ledger(f.ctx, w+1000); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("Ledger of an unknown voucher: %v, want domain.ErrNotFound", err)
	}
}

// checkLedgers reads v's ledger until done, and stops at the first that shows sold
// unequal to the live units (or an error). It returns how many it read.
func checkLedgers(ctx context.Context, f *fixture, v domain.VoucherID, done *atomic.Bool) (int, error) {
	reads := 0
	for !done.Load() {
		l, err := f.Store.Ledger(ctx, v)
		if err != nil {
			return reads, fmt.Errorf("ledger: %w", err)
		}
		if live := liveOf(l); l.Voucher.Sold != live {
			return reads, fmt.Errorf("ledger shows sold %d beside %d live units in %d orders", l.Voucher.Sold, live, len(l.Orders))
		}
		reads++
	}
	return reads, nil
}

// Every change keeps sold equal to the live units, so a ledger read as of one moment
// always shows them equal, however busy the voucher; two reads at different moments
// would not.
func testLedgerIsOneSnapshot(t *testing.T, f *fixture) {
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
			if _, err := f.Store.Persist(f.ctx, batch); err != nil {
				writeErr = err
				return
			}
			for _, r := range batch[:2] {
				if _, err := f.Store.Transition(f.ctx, r.OrderID, 0, domain.StatusCancelled, nil); err != nil {
					writeErr = err
					return
				}
			}
		}
	})
	reads, readErr := checkLedgers(f.ctx, f, v, &done)
	wg.Wait()
	if writeErr != nil {
		t.Fatalf("writer: %v", writeErr)
	}
	if readErr != nil {
		t.Fatal(readErr)
	}
	t.Logf("%d consistent ledgers read", reads)
	if got, want := len(f.ledger(t, v).Orders), rounds*size; got != want {
		t.Fatalf("final ledger has %d orders, want %d", got, want)
	}
}

func testRecountSold(t *testing.T, f *fixture) {
	v := f.voucher(t, 10)
	f.persist(t,
		reserve(1, v, 1, 2),
		reserve(2, v, 2, 3),
		reserve(3, v, 3, 1),
		reserve(4, v, 1, 1), // fails: user 1 holds order 1
	)
	if _, err := f.Store.Transition(f.ctx, orderID(2), 0, domain.StatusPaid, nil); err != nil {
		t.Fatalf("pay: %v", err)
	}
	if _, err := f.Store.Transition(f.ctx, orderID(3), 0, domain.StatusCancelled, nil); err != nil {
		t.Fatalf("cancel: %v", err)
	}
	const live = 2 + 3

	// Corrupt the counter both ways, within the stock.
	for _, wrong := range []int{0, 10, live - 1} {
		f.SetSold(t, v, wrong)
		got, err := f.Store.RecountSold(f.ctx, v)
		if err != nil {
			t.Fatalf("RecountSold: %v", err)
		}
		if got != live {
			t.Fatalf("RecountSold from %d = %d, want %d", wrong, got, live)
		}
		f.wantSold(t, v, live)
	}

	empty := f.voucher(t, 3)
	if got, err := f.Store.RecountSold(f.ctx, empty); err != nil || got != 0 {
		t.Fatalf("RecountSold of a voucher without orders = %d, %v; want 0", got, err)
	}
	if _, err := f.Store.RecountSold(f.ctx, v+1000); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("RecountSold of an unknown voucher: %v, want domain.ErrNotFound", err)
	}
}

// Recounting while workers persist and users cancel loses none of their updates.
func testRecountSoldConcurrently(t *testing.T, f *fixture) {
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
				if _, err := f.Store.Persist(f.ctx, batch); err != nil {
					writeErrs[w] = err
					return
				}
				if _, err := f.Store.Transition(f.ctx, batch[0].OrderID, 0, domain.StatusCancelled, nil); err != nil {
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
			if _, err := f.Store.RecountSold(f.ctx, v); err != nil {
				recountErr = err
				return
			}
			recounts++
		}
	})
	reads, readErr := checkLedgers(f.ctx, f, v, &writersDone)
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
	f.wantSold(t, v, want)
	if got, want := f.count(t), writers*rounds*size; got != want {
		t.Fatalf("%d orders stored, want %d", got, want)
	}
}
