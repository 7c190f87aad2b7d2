package application

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/seckill/seckill/domain"
	"github.com/seckill/seckill/ports"
)

// WorkerOptions tune a fulfillment worker.
type WorkerOptions struct {
	// Batch is the most deliveries read and persisted at once.
	Batch int
	// Block is how long one read waits for new entries.
	Block time.Duration
	// ClaimIdle is how long an entry may sit pending in any consumer before this
	// worker claims it.
	ClaimIdle time.Duration
	// ClaimEvery is how often the worker looks for such entries.
	ClaimEvery time.Duration
	// MinBackoff and MaxBackoff bound the pause after a dependency failed; it doubles
	// from the first to the second, with jitter.
	MinBackoff, MaxBackoff time.Duration
}

// WorkerObserver hears what a worker has to say. Health is called once per change of
// state (down with the failure, then up with nil), never once per message; Problem
// once per dead letter or delivery left pending; Fulfilled with the report of every
// FulfillOrder call, so its counts summed over the calls are what the worker did (a
// batch retried after an outage reports what it persisted first as Redelivered). Any
// may be nil. Persisting is called before each attempt to persist a batch and returns
// the context to persist it in (a tracing span's, say) and a function called with the
// attempt's outcome.
type WorkerObserver struct {
	Health     func(healthy bool, err error)
	Problem    func(err error)
	Fulfilled  func(FulfillReport)
	Persisting func(ctx context.Context, ds []ports.Delivery) (context.Context, func(error))
}

// Worker runs FulfillOrder over the queue until its context ends.
type Worker struct {
	fulfill *FulfillOrder
	queue   ports.Queue
	opts    WorkerOptions
	observe WorkerObserver
	healthy bool
}

// NewWorker returns a worker.
func NewWorker(fulfill *FulfillOrder, queue ports.Queue, opts WorkerOptions, observe WorkerObserver) *Worker {
	if observe.Health == nil {
		observe.Health = func(bool, error) {}
	}
	if observe.Problem == nil {
		observe.Problem = func(error) {}
	}
	if observe.Fulfilled == nil {
		observe.Fulfilled = func(FulfillReport) {}
	}
	if observe.Persisting == nil {
		observe.Persisting = func(ctx context.Context, _ []ports.Delivery) (context.Context, func(error)) {
			return ctx, func(error) {}
		}
	}
	return &Worker{fulfill: fulfill, queue: queue, opts: opts, observe: observe, healthy: true}
}

// Run reads, persists and acknowledges batches until ctx is cancelled. On
// cancellation it stops reading, finishes the batch in hand (persisting and
// acknowledging it, unless a dependency is down, in which case the batch stays pending
// for another worker) and returns nil.
func (w *Worker) Run(ctx context.Context) error {
	// A batch in hand is finished even after shutdown begins.
	work := context.WithoutCancel(ctx)
	backoff := w.newBackoff()
	nextClaim := time.Now()
	for ctx.Err() == nil {
		var ds []ports.Delivery
		var err error
		if !time.Now().Before(nextClaim) {
			ds, err = w.queue.Claim(ctx, w.opts.ClaimIdle, w.opts.Batch)
			nextClaim = time.Now().Add(w.opts.ClaimEvery)
		}
		if err == nil && len(ds) == 0 {
			ds, err = w.queue.Read(ctx, w.opts.Batch, w.opts.Block)
		}
		if err == nil && len(ds) > 0 {
			err = w.finish(ctx, work, ds, backoff)
		}
		if err != nil {
			if ctx.Err() != nil {
				return nil //nolint:nilerr // a call cut short by the shutdown is no failure of Run
			}
			w.setHealth(err)
			if !backoff.wait(ctx) {
				return nil
			}
			continue
		}
		w.setHealth(nil)
		backoff.reset()
	}
	return nil
}

// Drain persists everything still in the queue — entries never delivered and entries
// left pending by any consumer, this one included — and returns once the queue is
// empty, or with ctx's error when it ends first. serve calls it at shutdown when the
// queue lives in memory and would otherwise be lost with the process.
func (w *Worker) Drain(ctx context.Context) error {
	if err := w.queue.Refresh(ctx); err != nil {
		return fmt.Errorf("drain the queue: %w", err)
	}
	backoff := w.newBackoff()
	for {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("drain the queue: %w", err)
		}
		ds, err := w.queue.Claim(ctx, 0, w.opts.Batch)
		if err == nil && len(ds) == 0 {
			ds, err = w.queue.Read(ctx, w.opts.Batch, time.Millisecond)
		}
		if err == nil && len(ds) == 0 {
			return nil
		}
		if err == nil {
			err = w.finish(ctx, ctx, ds, backoff)
		}
		if err != nil && (ctx.Err() != nil || !backoff.wait(ctx)) {
			return fmt.Errorf("drain the queue: %w", ctx.Err())
		}
	}
}

// finish persists one batch, retrying while a dependency is down. It gives up only
// when shutdown begins during an outage: the batch then stays pending, and it returns
// ctx's error — not nil, which would read as the outage being over.
func (w *Worker) finish(ctx, work context.Context, ds []ports.Delivery, backoff *backoff) error {
	for {
		// Every step of Handle is idempotent, so the whole batch is simply retried.
		pctx, done := w.observe.Persisting(work, ds)
		rep, err := w.fulfill.Handle(pctx, ds)
		done(err)
		w.observe.Fulfilled(rep)
		for _, p := range rep.Problems {
			w.observe.Problem(p)
		}
		if err == nil || !errors.Is(err, domain.ErrUnavailable) {
			return err
		}
		w.setHealth(err)
		if !backoff.wait(ctx) {
			return fmt.Errorf("batch left pending: %w", ctx.Err())
		}
	}
}

func (w *Worker) setHealth(err error) {
	healthy := err == nil
	if healthy == w.healthy {
		return
	}
	w.healthy = healthy
	w.observe.Health(healthy, err)
}

// backoff is the pause after a dependency failed: each wait is jittered, and the next
// one is twice as long, up to a bound.
type backoff struct {
	next, least, most time.Duration
}

// newBackoff returns a back-off from MinBackoff to MaxBackoff.
func (w *Worker) newBackoff() *backoff {
	return &backoff{next: w.opts.MinBackoff, least: w.opts.MinBackoff, most: w.opts.MaxBackoff}
}

// wait pauses for the current back-off, jittered, or until ctx ends, and doubles the
// next one; it reports whether the full pause elapsed.
func (b *backoff) wait(ctx context.Context) bool {
	if !sleep(ctx, jitter(b.next)) {
		return false
	}
	b.next = min(2*b.next, b.most)
	return true
}

// reset starts the back-off over from its least pause, after a success.
func (b *backoff) reset() { b.next = b.least }

// jitter spreads d over [d/2, d) so that workers recovering together do not retry in
// lockstep.
func jitter(d time.Duration) time.Duration {
	if d <= 1 {
		return d
	}
	half := d / 2
	return half + rand.N(half)
}

// sleep waits d or until ctx ends; it reports whether the full wait elapsed.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
