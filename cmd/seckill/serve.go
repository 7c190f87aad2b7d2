package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"
	"golang.org/x/sync/errgroup"

	"github.com/seckill/seckill/adapters/httpapi"
	"github.com/seckill/seckill/adapters/sqlstore"
	"github.com/seckill/seckill/application"
	"github.com/seckill/seckill/domain"
)

type serveCmd struct {
	Config `embed:""`
}

// Run starts what the roles ask for — the API, the fulfillment worker, or both — with
// the periodic warm-up, and on SIGTERM or SIGINT drains them before returning: the API
// finishes the requests in flight, the worker its batch. Kong has already called
// Config.Validate.
func (c *serveCmd) Run(ctx context.Context) error {
	log, err := newLogger(c.LogLevel, c.LogFormat)
	if err != nil {
		return err
	}
	defer func() { _ = log.Sync() }()

	c.HTTPAddr = c.listenAddr()
	if path, isSQLite := c.sqliteFile(); isSQLite && c.embeddedRedis() {
		unlock, err := lockDatabase(path)
		if err != nil {
			return err
		}
		defer unlock()
	}
	b := banner{trial: c.trialParts(), chosen: c.JWTSecret == ""}
	if b.chosen {
		if b.keptIn, err = c.jwtSecret(); err != nil {
			return err
		}
		b.secret = c.JWTSecret
		secret := "a JWT secret made up for this run"
		if b.keptIn != "" {
			secret = "the JWT secret kept in " + b.keptIn
		}
		b.trial = strings.TrimSuffix(secret+", "+b.trial, ", ")
	}
	stopTracing, err := startTracing(ctx, c.Common, log)
	if err != nil {
		return err
	}
	defer stopTracing()
	a, cleanup, err := buildApp(ctx, c.Config, log)
	if err != nil {
		return err
	}
	defer cleanup()
	if _, isSQLite := c.sqliteFile(); c.embeddedRedis() && !isSQLite {
		release, ok, err := sqlstore.HoldInProcessRedisLock(ctx, a.DB)
		if err != nil {
			return err
		}
		if !ok {
			return errors.New("the database is in use by another seckill serve with an in-process Redis of its own; two would sell the same units twice: stop it, or give both SECKILL_REDIS_URL naming one Redis")
		}
		defer release()
	}

	var ln, metricsLn net.Listener
	if c.MetricsAddr != "" {
		if metricsLn, err = net.Listen("tcp", c.MetricsAddr); err != nil {
			return fmt.Errorf("SECKILL_METRICS_ADDR: %w", err)
		}
	}
	var started func()
	if c.runsAPI() {
		if ln, err = net.Listen("tcp", c.HTTPAddr); err != nil {
			return fmt.Errorf("SECKILL_HTTP_ADDR: %w", err)
		}
		b.addr = ln.Addr()
		started = func() {
			if err := b.print(os.Stdout); err != nil {
				log.Warn("print the banner", zap.Error(err))
			}
		}
	}
	return serveThen(ctx, a, ln, metricsLn, c.Config, log, started)
}

// trialParts names what makes this serve one for trying and testing — the in-process
// Redis, a SQLite file — or is empty when nothing does.
func (c *Config) trialParts() string {
	var parts []string
	if c.embeddedRedis() {
		parts = append(parts, "an in-process Redis")
	}
	if path, isSQLite := c.sqliteFile(); isSQLite {
		parts = append(parts, "the SQLite file "+path)
	}
	return strings.Join(parts, ", ")
}

// serve runs until ctx is cancelled, then shuts down gracefully. A nil ln runs no API;
// a non-nil metricsLn serves GET /metrics on its own.
// If one part fails, the others are stopped too and the failure is returned.
func serve(ctx context.Context, a *app, ln, metricsLn net.Listener, cfg Config, log *zap.Logger) error {
	return serveThen(ctx, a, ln, metricsLn, cfg, log, nil)
}

// serveThen is serve, calling started (when not nil) once everything has started and
// the first warm-up is over: what it prints then comes after the start-up's log lines
// and stays in view.
func serveThen(ctx context.Context, a *app, ln, metricsLn net.Listener, cfg Config, log *zap.Logger, started func()) error {
	warnIfLossy(ctx, a.Redis, cfg, log)
	suspectUnhealed(ctx, a, log)
	g, gctx := errgroup.WithContext(ctx)
	if ln != nil {
		// net/http's own 400/431 answers carry the JSON error body too.
		ln = httpapi.JSONErrors(ln)
		// A client gets headerTimeout to send its headers once connected, and its body
		// must arrive within the request's own deadline after that (the grab path reads
		// it under that deadline, before it takes a slot): one that trickles them in
		// cannot hold a connection for longer, nor a slot at all.
		srv := &http.Server{
			Handler:           a.HTTP,
			ReadHeaderTimeout: headerTimeout,
			ReadTimeout:       headerTimeout + cfg.RequestTimeout,
			IdleTimeout:       2 * time.Minute,
		}
		// An event stream never goes idle by itself: the shutdown ends them all, so
		// the drain waits only for the requests in flight.
		srv.RegisterOnShutdown(a.Streams.Close)
		log.Info("seckill serving", zap.String("addr", ln.Addr().String()))
		g.Go(func() error { return runHTTP(gctx, srv, ln, cfg.ShutdownTimeout, log) })
	}
	if metricsLn != nil {
		log.Info("seckill serving metrics", zap.String("addr", metricsLn.Addr().String()))
		g.Go(func() error {
			return runHTTP(gctx, metricsServer(a.HTTPMetrics.Handler()), metricsLn, cfg.ShutdownTimeout, log)
		})
	}
	if cfg.runsWorker() {
		goWorker(gctx, g, a, cfg, log)
	}
	// The warm-up runs beside the listener, not before it: the vouchers whose sale
	// state it loads open at once, or answer 503 while their reservations are restored
	// (WarmVouchers.Handle), and a voucher not loaded yet is rebuilt by its first grab.
	g.Go(func() error {
		warm(gctx, a, log)
		if started != nil {
			started()
		}
		every(gctx, cfg.WarmInterval, func() { warm(gctx, a, log) })
		return nil
	})
	if cfg.runsAPI() {
		g.Go(func() error { followDenials(gctx, a, log); return nil })
		g.Go(func() error {
			if err := a.DenyChanges.SubscribeDenials(gctx, func() { reloadDenials(gctx, a, log) }); err != nil {
				log.Warn("deny list changes unheard; the list is read every "+denyReload.String()+" instead", zap.Error(err))
			}
			return nil
		})
		// Units released anywhere clear this instance's sold-out flags at once.
		// Without the signal the flags still lapse after SECKILL_SOLD_OUT_TTL, so a
		// failure here is logged, not fatal.
		g.Go(func() error {
			if err := a.Stock.SubscribeRestocks(gctx, a.Grab.Restocked); err != nil {
				log.Warn("restock signal unavailable; sold-out flags lapse by their TTL instead", zap.Error(err))
			}
			return nil
		})
	}
	g.Go(func() error { healAfterRestarts(gctx, a, log); return nil })
	g.Go(func() error {
		off := false
		syncClock(gctx, a, &off, log)
		every(gctx, clockSyncEvery, func() { syncClock(gctx, a, &off, log) })
		return nil
	})
	// On a cluster a failover can promote a replica the client already holds a
	// connection to: every master is read again each second (redisstore.Restarts). A
	// master that does not answer is the breaker's concern, not this loop's.
	if cc, ok := a.Redis.(*redis.ClusterClient); ok {
		g.Go(func() error { every(gctx, time.Second, func() { _ = a.Restarts.Recheck(gctx, cc) }); return nil })
	}
	g.Go(func() error { every(gctx, time.Hour, func() { purge(gctx, a, log) }); return nil })
	err := g.Wait()
	if cfg.embeddedRedis() && cfg.runsWorker() {
		err = errors.Join(err, drainInProcess(a, log))
	}
	log.Info("stopped")
	return err
}

// denyReload is how often each instance reads the deny list again, whether or not a
// change was announced: the bound on how long a lost announcement (Redis down, a
// subscription reconnecting) leaves the instance behind.
const denyReload = 2 * time.Second

// followDenials keeps this instance's copy of the deny list current: read at once and
// again every denyReload; serve also reads it at once whenever a change is announced
// (on Redis Pub/Sub, so every instance hears it within a round trip).
func followDenials(ctx context.Context, a *app, log *zap.Logger) {
	reloadDenials(ctx, a, log)
	every(ctx, denyReload, func() { reloadDenials(ctx, a, log) })
}

// reloadDenials reads the deny list again. A failed read keeps the copy there is and
// is logged; the next one may succeed.
func reloadDenials(ctx context.Context, a *app, log *zap.Logger) {
	if err := a.Denied.Reload(ctx); err != nil && ctx.Err() == nil {
		log.Warn("deny list", zap.Error(err))
	}
}

// purge forgets what is kept only for a while: idempotency keys after a day, webhook
// deliveries that are over (delivered, given up) a week after their event.
func purge(ctx context.Context, a *app, log *zap.Logger) {
	if _, err := a.Idempotency.Purge(ctx, a.Clock.Now().Add(-sqlstore.IdempotencyTTL)); err != nil {
		log.Warn("purge idempotency keys", zap.Error(err))
	}
	// The outbox's rows are stamped by the host's clock.
	if _, err := a.Outbox.Purge(ctx, time.Now().Add(-sqlstore.WebhookRetention)); err != nil {
		log.Warn("purge webhook deliveries", zap.Error(err))
	}
}

// drainInProcess persists every reservation the in-process Redis still holds, as it
// dies with the process (the API stopped taking grabs already), however long that
// takes — under a deadline a large backlog would be lost — unless a second SIGINT or
// SIGTERM says to leave them.
func drainInProcess(a *app, log *zap.Logger) error {
	log.Info("persisting the reservations the in-process redis holds before exiting; a second Ctrl-C (SIGINT or SIGTERM) abandons them")
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	if err := a.Worker.Drain(ctx); err != nil {
		log.Error("reservations left unpersisted in the in-process redis", zap.Error(err))
		return err
	}
	log.Info("in-process redis drained: every reservation is persisted")
	return nil
}

// headerTimeout is how long a connection may take to send a request's headers: long
// enough for a client that opens its connections ahead of a sale and sends at the
// opening instant, short enough that a trickling one lets go soon.
const headerTimeout = 10 * time.Second

// runHTTP serves until ctx ends, then stops accepting and drains the requests in
// flight for at most timeout.
func runHTTP(ctx context.Context, srv *http.Server, ln net.Listener, timeout time.Duration, log *zap.Logger) error {
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("http server: %w", err)
	case <-ctx.Done():
	}
	log.Info("shutting down: draining in-flight requests", zap.Duration("timeout", timeout))
	shutdownCtx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("http server: %w", err)
	}
	return nil
}

// healAfterRestarts heals every live voucher's sale state from the database
// (Reconcile.Heal) each time the Redis client sees that the server restarted — perhaps
// from an older snapshot — or failed over to a replica that may have been behind
// (redisstore.Restarts: a new run_id on a new connection). The grab path answers 503
// from the first command after the change until the heal succeeds; a failed heal is
// retried every second.
//
// Each heal that stands is recorded with the servers' run_ids (sqlstore.Heals), so an
// instance that starts later knows whether the servers it finds are the ones last
// healed (suspectUnhealed).
func healAfterRestarts(ctx context.Context, a *app, log *zap.Logger) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-a.Restarts.Changed():
		}
		if a.Restarts.Healing() {
			log.Warn("redis restarted or failed over (its run_id changed): grabs wait while the live vouchers are healed from the database")
		}
		for a.Restarts.Healing() && ctx.Err() == nil {
			if err := healOnce(ctx, a, log); err != nil {
				log.Warn("heal after a redis restart; retrying", zap.Error(err))
				select {
				case <-ctx.Done():
				case <-time.After(time.Second):
				}
			}
		}
	}
}

// healOnce heals every live voucher (Reconcile.Heal) and, when no newer change of
// server overtook it, opens the grab path again and records the servers healed.
func healOnce(ctx context.Context, a *app, log *zap.Logger) error {
	gen := a.Restarts.Generation()
	servers := a.Restarts.Servers()
	if err := a.Reconcile.Heal(ctx); err != nil {
		return err
	}
	if !a.Restarts.Healed(gen) {
		return nil // the servers changed again meanwhile: the caller heals again
	}
	if err := a.Heals.Record(ctx, servers); err != nil {
		log.Warn("record the heal; the next instance to start heals again", zap.Error(err))
	}
	log.Info("live vouchers healed from the database: grabs are taken again")
	return nil
}

// suspectUnhealed has the live vouchers healed before any grab when a Redis server
// this instance finds is not the one last healed (another run_id, or none recorded):
// it may have restarted from an older snapshot while every instance was down with
// it, so no running process saw the change (redisstore.Restarts sees only changes
// after it started watching). A record that cannot be read counts as unhealed. The
// first heal runs here, before the API listens, so an instance does not start by
// answering 503; one that fails leaves the grab path closed, and healAfterRestarts
// retries it.
func suspectUnhealed(ctx context.Context, a *app, log *zap.Logger) {
	servers := a.Restarts.Servers()
	if len(servers) == 0 {
		return // not watched: the in-process Redis starts empty with the process
	}
	healed, err := a.Heals.Healed(ctx)
	if err != nil {
		log.Warn("read which redis servers were healed; healing the live vouchers to be safe", zap.Error(err))
	}
	for server, runID := range servers {
		if healed[server] == runID {
			continue
		}
		a.Restarts.Suspect()
		if err := healOnce(ctx, a, log); err != nil {
			log.Warn("heal redis servers not healed since they started; grabs wait, and the heal is retried", zap.Error(err))
		}
		return
	}
}

// clockSyncEvery is how often the sale's clock is measured against Redis again. The
// host's monotonic clock carries it in between: drift over a few seconds is
// microseconds.
const clockSyncEvery = 2 * time.Second

// clockWarnOffset is how far off Redis's time this host's clock may be before serve
// says so. The service tells time by Redis's, so an instance off by more keeps every
// promise; but other hosts' logs and its own disagree, and a host that far off is a
// host whose NTP has stopped.
const clockWarnOffset = 500 * time.Millisecond

// syncClock measures the sale's clock (Redis's time) again, records how far this
// host's clock is from it (seckill_clock_offset_seconds), and logs when that goes past
// clockWarnOffset or comes back within it (*off says which side it was on).
func syncClock(ctx context.Context, a *app, off *bool, log *zap.Logger) {
	offset, err := a.Clock.Sync(ctx)
	if err != nil {
		log.Debug("measure the sale clock; the last measurement stands", zap.Error(err))
		return
	}
	a.Metrics.clockOffset.Set(offset.Seconds())
	if now := offset.Abs() > clockWarnOffset; now != *off {
		*off = now
		if now {
			log.Warn("this host's clock is off redis's time (the sale's clock) by more than "+clockWarnOffset.String()+
				"; the service tells time by redis's, but keep the host's clock synchronized (NTP)", zap.Duration("offset", offset))
		} else {
			log.Info("this host's clock is back within "+clockWarnOffset.String()+" of redis's time", zap.Duration("offset", offset))
		}
	}
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

// warm loads active vouchers missing from Redis. A failure is logged and retried at
// the next tick: the API keeps serving the vouchers that are loaded.
func warm(ctx context.Context, a *app, log *zap.Logger) {
	n, err := a.Warm.Handle(ctx)
	if err != nil {
		log.Error("warm vouchers", zap.Error(err))
		return
	}
	if n > 0 {
		log.Info("warmed vouchers", zap.Int("loaded", n))
	}
}

// trim drops acknowledged stream entries so memory stays bounded in long sales.
func trim(ctx context.Context, a *app, log *zap.Logger) {
	n, err := a.Queue.Trim(ctx)
	if err != nil {
		log.Warn("trim streams", zap.Error(err))
		return
	}
	if n > 0 {
		log.Debug("trimmed streams", zap.Int64("entries", n))
	}
}

// expire closes the orders left unpaid past the payment timeout.
func expire(ctx context.Context, a *app, log *zap.Logger) {
	n, err := a.Expire.Handle(ctx)
	a.Metrics.expired.Add(float64(n))
	if err != nil {
		log.Warn("expire unpaid orders", zap.Error(err))
	}
	if n > 0 {
		log.Info("expired unpaid orders", zap.Int("orders", n))
	}
}

// releaseClosed retries the releases that failed when their orders closed.
func releaseClosed(ctx context.Context, a *app, log *zap.Logger) {
	n, err := a.Release.Handle(ctx)
	if err != nil {
		log.Warn("release closed orders", zap.Error(err))
	}
	if n > 0 {
		log.Info("released closed orders", zap.Int("orders", n))
	}
}

// periodicReconciler is who the audit log names for the repairs of the periodic
// reconciliation (`seckill reconcile --repair` names "cli:" and the OS user).
var periodicReconciler = domain.Author{Actor: "reconcile"}

// reconcileLease names the lease of the periodic reconciliation (sqlstore.Leases).
const reconcileLease = "reconcile"

// maxReconcileRound bounds one round of the periodic reconciliation; the next round
// carries on where it stopped.
const maxReconcileRound = 30 * time.Second

// audit runs one round of the periodic reconciliation, on one instance at a time: the
// one holding the lease, which it keeps from round to round and which passes to
// another instance once it has not been renewed for an interval and a round. The
// round checks vouchers for at most min(interval, maxReconcileRound), then records
// where it stopped with the lease, so the next round — here or on the instance that
// took the lease over — carries on from there. It repairs what it finds (every repair
// is idempotent and safe during a live sale) and logs each drift with whether it was
// repaired; a voucher it could not check is logged and counted
// (seckill_reconcile_unchecked_total), and checked again at the next pass.
func audit(ctx context.Context, a *app, interval time.Duration, log *zap.Logger) {
	budget := min(interval, maxReconcileRound)
	holder := a.Queue.Consumer()
	state, ok, err := a.Leases.Acquire(ctx, reconcileLease, holder, interval+budget+time.Minute)
	if err != nil {
		log.Warn("reconcile: take the lease", zap.Error(err))
		return
	}
	if !ok {
		log.Debug("reconcile: another instance holds the lease")
		return
	}
	after, _ := domain.ParseVoucherID(state) // empty or unreadable: a new pass
	res, err := a.Reconcile.Round(ctx, application.RoundCmd{After: after, Budget: budget, Repair: true, By: periodicReconciler})
	if err != nil {
		log.Warn("reconcile", zap.Error(err))
		return
	}
	next := ""
	if res.Next != 0 {
		next = res.Next.String()
	}
	if _, err := a.Leases.Save(ctx, reconcileLease, holder, next); err != nil {
		log.Warn("reconcile: keep where the round stopped", zap.Error(err))
	}
	a.Metrics.reconciled(res.Reports)
	for _, u := range res.Unchecked {
		a.Metrics.unchecked.Inc()
		log.Error("reconcile: voucher not checked; checked again at the next pass",
			zap.Stringer("voucher", u.VoucherID), zap.Error(u.Err))
	}
	for _, r := range res.Reports {
		for _, d := range r.Drifts {
			fields := []zap.Field{zap.Stringer("voucher", r.VoucherID), zap.String("kind", string(d.Kind)),
				zap.Int("count", d.Count), zap.Strings("examples", d.Examples)}
			if d.Repaired {
				log.Warn("drift between redis and the database, repaired", fields...)
				continue
			}
			log.Error("drift between redis and the database, not repaired; see seckill reconcile",
				append(fields, zap.String("repair_error", d.RepairError))...)
		}
	}
}

// foldBatch is how many unit changes one fold moves at most.
const foldBatch = 10000

// foldUnits folds the database's changes of units per status into its counters
// (sqlstore.Orders.FoldUnits), so a voucher's stats read a handful of rows.
func foldUnits(ctx context.Context, a *app, log *zap.Logger) {
	for {
		n, err := a.Orders.FoldUnits(ctx, foldBatch)
		if err != nil {
			log.Warn("fold unit counters", zap.Error(err))
			return
		}
		if n < foldBatch {
			return
		}
	}
}

// goWorker starts, in g, the worker role's loops: the fulfillment worker, the trim of
// the streams, expiry, releases, reconciliation, the units' counters, the waiting
// rooms, the draws and the webhook dispatcher.
func goWorker(gctx context.Context, g *errgroup.Group, a *app, cfg Config, log *zap.Logger) {
	log.Info("fulfillment worker started", zap.String("consumer", a.Queue.Consumer()))
	g.Go(func() error { return a.Worker.Run(gctx) })
	g.Go(func() error { every(gctx, cfg.TrimInterval, func() { trim(gctx, a, log) }); return nil })
	// Expiry is checked every second so an unpaid order is back on sale within
	// the payment timeout plus a second or two.
	g.Go(func() error { recordDeadlines(gctx, a, cfg, log); return nil })
	g.Go(func() error { every(gctx, time.Second, func() { expire(gctx, a, log) }); return nil })
	g.Go(func() error { every(gctx, 5*time.Second, func() { releaseClosed(gctx, a, log) }); return nil })
	if cfg.ReconcileInterval > 0 {
		g.Go(func() error {
			every(gctx, cfg.ReconcileInterval, func() { audit(gctx, a, cfg.ReconcileInterval, log) })
			return nil
		})
	}
	g.Go(func() error { every(gctx, time.Second, func() { foldUnits(gctx, a, log) }); return nil })
	g.Go(func() error { every(gctx, admitEvery, func() { admit(gctx, a, log) }); return nil })
	g.Go(func() error { every(gctx, drawEvery, func() { runDraws(gctx, a, log) }); return nil })
	if a.Webhooks != nil {
		log.Info("webhook dispatcher started", zap.String("url", redactURL(cfg.WebhookURL)))
		g.Go(func() error { return a.Webhooks.Run(gctx) })
	}
}

// admitEvery is how often each worker runs a step of the waiting rooms: the shuffle
// at a sale's start, and admission as passes are used or expire.
const admitEvery = 150 * time.Millisecond

// admit runs one step of the waiting rooms (application.AdmitQueues). A failure is
// logged; the next step tries again.
func admit(ctx context.Context, a *app, log *zap.Logger) {
	if err := a.Rooms.Handle(ctx); err != nil && ctx.Err() == nil {
		log.Warn("waiting rooms", zap.Error(err))
	}
}

// drawEvery is how often an instance looks for draws to run: a draw starts within it
// of its begins_at.
const drawEvery = 250 * time.Millisecond

// runDraws carries out the draws whose sale has begun, when this instance holds their
// lease (application.RunDraws). A failure is logged; the next round carries on where
// the draw stopped.
func runDraws(ctx context.Context, a *app, log *zap.Logger) {
	n, err := a.Draws.Handle(ctx)
	if err != nil && ctx.Err() == nil {
		log.Warn("run draws", zap.Error(err))
	}
	if n > 0 {
		log.Info("draws carried out", zap.Int("draws", n))
	}
}
