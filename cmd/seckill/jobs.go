package main

import (
	"context"
	"slices"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"
	"golang.org/x/sync/errgroup"
)

// role names the part of serve a job belongs to (SECKILL_ROLES); roleAny's jobs run
// in every serve.
type role string

// The roles of SECKILL_ROLES, and roleAny.
const (
	roleAPI    role = "api"
	roleWorker role = "worker"
	roleAny    role = ""
)

// runs reports whether this serve runs the jobs of r.
func (c *Config) runs(r role) bool {
	return r == roleAny || slices.Contains(c.roles(), string(r))
}

// job is one of serve's background jobs. A periodic one (every > 0) calls run at each
// interval, and at once first when atStart is set; a failure is logged and the next
// tick tries again. Any other runs run once, for as long as it runs: its failure stops
// serve, with the listeners and the other jobs, when fatal is set, and is otherwise
// logged with what stands in for the job (fallback). Every job stops as serve's
// context ends; a failure then is not one.
type job struct {
	// name is what the log calls the job, and what it logs a failure as.
	name     string
	role     role
	every    time.Duration
	atStart  bool
	run      func(ctx context.Context) error
	fatal    bool
	fallback string
}

// runJobs starts, in g, each job of jobs whose role cfg runs.
func runJobs(ctx context.Context, g *errgroup.Group, jobs []job, cfg Config, log *zap.Logger) {
	for _, j := range jobs {
		if !cfg.runs(j.role) {
			continue
		}
		log.Debug("job started", zap.String("job", j.name), zap.Duration("every", j.every))
		g.Go(func() error { return j.loop(ctx, log) })
	}
}

// loop runs the job until ctx ends (see job).
func (j job) loop(ctx context.Context, log *zap.Logger) error {
	if j.every <= 0 {
		err := j.run(ctx)
		if j.fatal {
			return err
		}
		j.failed(ctx, err, log)
		return nil
	}
	if j.atStart {
		j.failed(ctx, j.run(ctx), log)
	}
	every(ctx, j.every, func() { j.failed(ctx, j.run(ctx), log) })
	return nil
}

// failed logs err, a failure of the job, unless it is nil or serve is stopping.
func (j job) failed(ctx context.Context, err error, log *zap.Logger) {
	if err == nil || ctx.Err() != nil {
		return
	}
	msg := j.name
	if j.fallback != "" {
		msg += " unavailable; " + j.fallback
	}
	log.Warn(msg, zap.String("job", j.name), zap.Error(err))
}

// every calls fn at each interval until ctx ends.
func every(ctx context.Context, interval time.Duration, fn func()) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			fn()
		}
	}
}

// serveJobs is the table of serve's background jobs, for every role; runJobs starts
// those of the roles configured. started (when not nil) is called once the first
// warm-up is over.
func serveJobs(a *app, cfg Config, log *zap.Logger, started func()) []job {
	firstWarm := true
	jobs := []job{
		// The warm-up runs beside the listener, not before it: the vouchers whose sale
		// state it loads open at once, or answer 503 while their reservations are
		// restored (WarmVouchers.Handle), and a voucher not loaded yet is rebuilt by its
		// first grab.
		{name: "warm vouchers", every: cfg.WarmInterval, atStart: true, run: func(ctx context.Context) error {
			err := warm(ctx, a, log)
			if firstWarm && started != nil {
				started()
			}
			firstWarm = false
			return err
		}},
		{name: "heal after redis restarts", run: func(ctx context.Context) error { healAfterRestarts(ctx, a, log); return nil }},
		{name: "purge", every: time.Hour, run: func(ctx context.Context) error { return purge(ctx, a) }},

		{name: "deny list", role: roleAPI, every: denyReload, atStart: true, run: a.Denied.Reload},
		{name: "deny list changes", role: roleAPI, fallback: "the list is read every " + denyReload.String() + " instead",
			run: func(ctx context.Context) error {
				return a.DenyChanges.SubscribeDenials(ctx, func() { reloadDenials(ctx, a, log) })
			}},
		// Units released anywhere clear this instance's sold-out flags at once. Without
		// the signal the flags still lapse after SECKILL_SOLD_OUT_TTL.
		{name: "restock signal", role: roleAPI, fallback: "sold-out flags lapse by their TTL instead",
			run: func(ctx context.Context) error { return a.Stock.SubscribeRestocks(ctx, a.Grab.Restocked) }},

		{name: "fulfillment worker", role: roleWorker, fatal: true, run: func(ctx context.Context) error {
			log.Info("fulfillment worker started", zap.String("consumer", a.Queue.Consumer()))
			return a.Worker.Run(ctx)
		}},
		{name: "trim streams", role: roleWorker, every: cfg.TrimInterval, run: func(ctx context.Context) error { return trim(ctx, a, log) }},
		{name: "record the payment deadlines of orders stored without one", role: roleWorker,
			run: func(ctx context.Context) error { return recordDeadlines(ctx, a, cfg, log) }},
		// Expiry is checked every second so an unpaid order is back on sale within the
		// payment timeout plus a second or two.
		{name: "expire unpaid orders", role: roleWorker, every: time.Second, run: func(ctx context.Context) error { return expire(ctx, a, log) }},
		{name: "release closed orders", role: roleWorker, every: 5 * time.Second, run: func(ctx context.Context) error { return releaseClosed(ctx, a, log) }},
		{name: "fold unit counters", role: roleWorker, every: time.Second, run: func(ctx context.Context) error { return foldUnits(ctx, a) }},
		{name: "waiting rooms", role: roleWorker, every: admitEvery, run: a.Rooms.Handle},
		{name: "run draws", role: roleWorker, every: drawEvery, run: func(ctx context.Context) error { return runDraws(ctx, a, log) }},
	}
	if cfg.ReconcileInterval > 0 {
		jobs = append(jobs, job{name: "reconcile", role: roleWorker, every: cfg.ReconcileInterval,
			run: func(ctx context.Context) error { return audit(ctx, a, cfg.ReconcileInterval, log) }})
	}
	if a.Webhooks != nil {
		jobs = append(jobs, job{name: "webhook dispatcher", role: roleWorker, fatal: true, run: func(ctx context.Context) error {
			log.Info("webhook dispatcher started", zap.String("url", redactURL(cfg.WebhookURL)))
			return a.Webhooks.Run(ctx)
		}})
	}
	// The in-process Redis's time is this host's clock: nothing to measure (saleClock).
	if !cfg.embeddedRedis() {
		off := false
		jobs = append(jobs, job{name: "measure the sale clock", every: clockSyncEvery, atStart: true,
			run: func(ctx context.Context) error { syncClock(ctx, a, &off, log); return nil }})
	}
	// On a cluster a failover can promote a replica the client already holds a
	// connection to: every master is read again each second (redisstore.Restarts). A
	// master that does not answer is the breaker's concern, not this job's.
	if cc, ok := a.Redis.(*redis.ClusterClient); ok {
		jobs = append(jobs, job{name: "watch the cluster's masters", every: time.Second,
			run: func(ctx context.Context) error { _ = a.Restarts.Recheck(ctx, cc); return nil }})
	}
	return jobs
}
