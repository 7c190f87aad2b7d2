package application_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/seckill/seckill/application"
	"github.com/seckill/seckill/domain"
	"github.com/seckill/seckill/ports"
)

// The worker's tests run in a synctest bubble: its back-offs, reads and claims wait on
// the bubble's clock, which moves only when every goroutine of the test is blocked, so
// the tests take no time and every duration they check is exact.

// record collects what the worker's observer hears, from any goroutine.
type record[T any] struct {
	mu    sync.Mutex
	heard []T
}

func (r *record[T]) add(v T) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.heard = append(r.heard, v)
}

func (r *record[T]) all() []T {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.heard)
}

// attempts records when the worker tried to persist a batch.
type attempts struct{ record[time.Time] }

func (a *attempts) persisting(ctx context.Context, _ []ports.Delivery) (context.Context, func(error)) {
	a.add(time.Now())
	return ctx, func(error) {}
}

// health records the worker's health events.
type health struct{ record[bool] }

func (h *health) observe(up bool, _ error) { h.add(up) }

func wantHealth(t *testing.T, h *health, want ...bool) {
	t.Helper()
	if got := h.all(); !slices.Equal(got, want) {
		t.Fatalf("health events %v, want %v", got, want)
	}
}

// run starts w and returns the function that stops it and waits until it returned.
func run(t *testing.T, w *application.Worker) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	return func() {
		t.Helper()
		cancel()
		if err := <-done; err != nil {
			t.Fatalf("Run: %v", err)
		}
	}
}

// grabbed returns a sale of 100 units, one to a user, that users 1 to n grabbed.
func grabbed(t *testing.T, n int) sale {
	t.Helper()
	s := newSale(t, 100, 1)
	for u := range domain.UserID(n) {
		mustGrab(t, s.grabFixture, u+1, 1)
	}
	return s
}

func TestWorkerDrainsTheQueueAndStopsCleanly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := grabbed(t, 30)
		h := &health{}
		w := application.NewWorker(s.fulfill, s.queue, application.WorkerOptions{
			Batch: 7, Block: time.Millisecond, ClaimIdle: time.Second, ClaimEvery: time.Second,
			MinBackoff: time.Millisecond, MaxBackoff: 4 * time.Millisecond,
		}, application.WorkerObserver{Health: h.observe})

		// The database is down at first: the worker reports it once, keeps everything
		// pending, and catches up by itself when it returns.
		s.orders.SetErr(domain.ErrUnavailable)
		stop := run(t, w)
		time.Sleep(time.Second)
		synctest.Wait()
		wantHealth(t, h, false)
		if got := s.queue.Pending(s.id); got != 30 {
			t.Fatalf("pending = %d during the outage, want 30", got)
		}
		s.orders.SetErr(nil)
		time.Sleep(4 * time.Millisecond) // the longest back-off: the batch is retried
		synctest.Wait()
		if got := s.queue.Pending(s.id); got != 0 {
			t.Fatalf("pending = %d once the database is back, want 0", got)
		}
		stop()
		units, _ := s.orders.UnitsByStatus(context.Background(), s.id, nil)
		if units[domain.StatusAwaitingPayment] != 30 {
			t.Fatalf("units = %v", units)
		}
		wantHealth(t, h, false, true)
	})
}

// While the database is down the worker retries the batch in hand after a back-off
// that doubles from MinBackoff up to MaxBackoff, each jittered over [b/2, b); once an
// attempt succeeds the back-off starts over.
func TestWorkerBacksOffExactly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const minBackoff, maxBackoff = 100 * time.Millisecond, 800 * time.Millisecond
		s := grabbed(t, 3)
		a, h := &attempts{}, &health{}
		w := application.NewWorker(s.fulfill, s.queue, application.WorkerOptions{
			Batch: 10, Block: time.Second, ClaimIdle: time.Hour, ClaimEvery: time.Hour,
			MinBackoff: minBackoff, MaxBackoff: maxBackoff,
		}, application.WorkerObserver{Health: h.observe, Persisting: a.persisting})
		s.orders.SetErr(domain.ErrUnavailable)
		start := time.Now()
		stop := run(t, w)
		time.Sleep(10 * time.Second)
		synctest.Wait()

		// wantBackoffs checks the gaps between attempts, the first at first.
		wantBackoffs := func(at []time.Time, first time.Time) {
			t.Helper()
			if len(at) == 0 || !at[0].Equal(first) {
				t.Fatalf("attempts at %v, want the first at %v", at, first)
			}
			b := minBackoff
			for i := 1; i < len(at); i++ {
				if gap := at[i].Sub(at[i-1]); gap < b/2 || gap >= b {
					t.Fatalf("attempt %d came %v after the one before, want within [%v, %v)", i, gap, b/2, b)
				}
				b = min(2*b, maxBackoff)
			}
		}
		outage := a.all()
		wantBackoffs(outage, start)
		// 100 + 200 + 400 ms at most before the cap, then at most 800 ms apart: at least
		// 1 + 3 + (10 s - 0.7 s) / 0.8 s attempts.
		if len(outage) < 15 {
			t.Fatalf("%d attempts in 10s of outage, want at least 15", len(outage))
		}
		wantHealth(t, h, false)

		// Back: the next attempt succeeds, and nothing more is tried.
		s.orders.SetErr(nil)
		time.Sleep(maxBackoff)
		synctest.Wait()
		if got, want := len(a.all()), len(outage)+1; got != want {
			t.Fatalf("%d attempts once the database is back, want %d", got, want)
		}
		if got := s.queue.Pending(s.id); got != 0 {
			t.Fatalf("pending = %d, want 0", got)
		}
		wantHealth(t, h, false, true)

		// A second outage backs off from MinBackoff again.
		s.orders.SetErr(domain.ErrUnavailable)
		mustGrab(t, s.grabFixture, 4, 1)
		second := time.Now()
		time.Sleep(time.Second)
		synctest.Wait()
		wantBackoffs(a.all()[len(outage)+1:], second)
		stop()
	})
}

// Entries left pending by a consumer that died are claimed once they have been idle
// for ClaimIdle, at the first claim after that (the worker looks every ClaimEvery),
// and not before.
func TestWorkerClaimsAbandonedEntriesOnceIdle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const claimIdle, claimEvery = 30 * time.Second, 10 * time.Second
		s := grabbed(t, 5)
		// Delivered to a consumer that died holding them.
		if ds, _ := s.queue.Read(context.Background(), 10, 0); len(ds) != 5 {
			t.Fatalf("read %d", len(ds))
		}
		w := application.NewWorker(s.fulfill, s.queue, application.WorkerOptions{
			Batch: 10, Block: time.Second, ClaimIdle: claimIdle, ClaimEvery: claimEvery,
			MinBackoff: time.Millisecond, MaxBackoff: time.Second,
		}, application.WorkerObserver{})
		stop := run(t, w)
		persisted := func() int {
			units, _ := s.orders.UnitsByStatus(context.Background(), s.id, nil)
			return units[domain.StatusAwaitingPayment]
		}

		time.Sleep(claimIdle - time.Nanosecond)
		synctest.Wait()
		if got := persisted(); got != 0 {
			t.Fatalf("%d persisted before the entries were idle for %v, want 0", got, claimIdle)
		}
		time.Sleep(time.Nanosecond) // idle for claimIdle, at a claim (every 10 s from 0)
		synctest.Wait()
		if got := persisted(); got != 5 {
			t.Fatalf("%d persisted once the entries were idle for %v, want 5", got, claimIdle)
		}
		if got := s.queue.Pending(s.id); got != 0 {
			t.Fatalf("pending = %d, want 0", got)
		}
		stop()
	})
}

func TestWorkerDrainPersistsEverythingLeft(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := grabbed(t, 25)
		// Five were delivered to a consumer that died holding them.
		if ds, _ := s.queue.Read(context.Background(), 5, 0); len(ds) != 5 {
			t.Fatalf("read %d", len(ds))
		}
		w := application.NewWorker(s.fulfill, s.queue, application.WorkerOptions{
			Batch: 7, Block: time.Millisecond, ClaimIdle: time.Hour, ClaimEvery: time.Hour,
			MinBackoff: time.Millisecond, MaxBackoff: 4 * time.Millisecond,
		}, application.WorkerObserver{})
		if err := w.Drain(context.Background()); err != nil {
			t.Fatal(err)
		}
		if got := s.queue.Pending(s.id); got != 0 {
			t.Fatalf("pending = %d after the drain", got)
		}
		if units, _ := s.orders.UnitsByStatus(context.Background(), s.id, nil); units[domain.StatusAwaitingPayment] != 25 {
			t.Fatalf("units = %v", units)
		}
		// With the database down the drain gives up when its context ends, exactly then.
		mustGrab(t, s.grabFixture, 99, 1)
		s.orders.SetErr(domain.ErrUnavailable)
		start := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		if err := w.Drain(ctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("drain with the database down: %v", err)
		}
		if took := time.Since(start); took != 50*time.Millisecond {
			t.Fatalf("the drain gave up after %v, want 50ms", took)
		}
	})
}

// TestWorkerStoppedDuringAnOutageDoesNotReportRecovery: shutdown while the database
// is down interrupts the back-off; the batch stays pending and the worker says
// nothing more — in particular not that fulfillment recovered.
func TestWorkerStoppedDuringAnOutageDoesNotReportRecovery(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := grabbed(t, 3)
		h := &health{}
		// A back-off far longer than the test: only the shutdown can end it.
		w := application.NewWorker(s.fulfill, s.queue, application.WorkerOptions{
			Batch: 10, Block: time.Millisecond, ClaimIdle: time.Hour, ClaimEvery: time.Hour,
			MinBackoff: time.Hour, MaxBackoff: time.Hour,
		}, application.WorkerObserver{Health: h.observe})
		s.orders.SetErr(domain.ErrUnavailable)
		stop := run(t, w)
		synctest.Wait()
		wantHealth(t, h, false)
		stop()
		wantHealth(t, h, false)
		if got := s.queue.Pending(s.id); got != 3 {
			t.Fatalf("pending = %d, want the 3 left for another worker", got)
		}
	})
}
