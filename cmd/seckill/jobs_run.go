package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/seckill/seckill/adapters/sqlstore"
)

// What serve's jobs (serveJobs) run. Each returns its failure for the job to log.

// denyReload is how often each instance reads the deny list again, whether or not a
// change was announced: the bound on how long a lost announcement (Redis down, a
// subscription reconnecting) leaves the instance behind. serve also reads it at once
// whenever a change is announced (on Redis Pub/Sub, so every instance hears it within
// a round trip).
const denyReload = 2 * time.Second

// reloadDenials reads the deny list again, on an announced change. A failed read
// keeps the copy there is and is logged; the next one may succeed.
func reloadDenials(ctx context.Context, a *app, log *zap.Logger) {
	if err := a.Denied.Reload(ctx); err != nil && ctx.Err() == nil {
		log.Warn("deny list", zap.Error(err))
	}
}

// purge forgets what is kept only for a while: idempotency keys after a day, webhook
// deliveries that are over (delivered, given up) a week after their event.
func purge(ctx context.Context, a *app) error {
	var errs []error
	if _, err := a.Idempotency.Purge(ctx, a.Clock.Now().Add(-sqlstore.IdempotencyTTL)); err != nil {
		errs = append(errs, fmt.Errorf("idempotency keys: %w", err))
	}
	// The outbox's rows are stamped by the host's clock.
	if _, err := a.Outbox.Purge(ctx, time.Now().Add(-sqlstore.WebhookRetention)); err != nil {
		errs = append(errs, fmt.Errorf("webhook deliveries: %w", err))
	}
	return errors.Join(errs...)
}

// warm loads active vouchers missing from Redis. A failure is retried at the next
// tick: the API keeps serving the vouchers that are loaded.
func warm(ctx context.Context, a *app, log *zap.Logger) error {
	n, err := a.Warm.Handle(ctx)
	if n > 0 {
		log.Info("warmed vouchers", zap.Int("loaded", n))
	}
	return err
}

// trim drops acknowledged stream entries so memory stays bounded in long sales.
func trim(ctx context.Context, a *app, log *zap.Logger) error {
	n, err := a.Queue.Trim(ctx)
	if n > 0 {
		log.Debug("trimmed streams", zap.Int64("entries", n))
	}
	return err
}

// expire closes the orders left unpaid past the payment timeout.
func expire(ctx context.Context, a *app, log *zap.Logger) error {
	n, err := a.Expire.Handle(ctx)
	a.Metrics.expired.Add(float64(n))
	if n > 0 {
		log.Info("expired unpaid orders", zap.Int("orders", n))
	}
	return err
}

// releaseClosed retries the releases that failed when their orders closed.
func releaseClosed(ctx context.Context, a *app, log *zap.Logger) error {
	n, err := a.Release.Handle(ctx)
	if n > 0 {
		log.Info("released closed orders", zap.Int("orders", n))
	}
	return err
}

// foldBatch is how many unit changes one fold moves at most.
const foldBatch = 10000

// foldUnits folds the database's changes of units per status into its counters
// (sqlstore.Orders.FoldUnits), so a voucher's stats read a handful of rows.
func foldUnits(ctx context.Context, a *app) error {
	for {
		n, err := a.Orders.FoldUnits(ctx, foldBatch)
		if err != nil || n < foldBatch {
			return err
		}
	}
}

// admitEvery is how often each worker runs a step of the waiting rooms
// (application.AdmitQueues): the shuffle at a sale's start, and admission as passes
// are used or expire.
const admitEvery = 150 * time.Millisecond

// drawEvery is how often an instance looks for draws to run: a draw starts within it
// of its begins_at.
const drawEvery = 250 * time.Millisecond

// runDraws carries out the draws whose sale has begun, when this instance holds their
// lease (application.RunDraws). The next round carries on where a draw stopped.
func runDraws(ctx context.Context, a *app, log *zap.Logger) error {
	n, err := a.Draws.Handle(ctx)
	if n > 0 {
		log.Info("draws carried out", zap.Int("draws", n))
	}
	return err
}
