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

	"go.uber.org/zap"
	"golang.org/x/sync/errgroup"

	"github.com/seckill/seckill/adapters/httpapi"
	"github.com/seckill/seckill/adapters/sqlstore"
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
	return serve(ctx, a, ln, metricsLn, c.Config, log, started)
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
// a non-nil metricsLn serves GET /metrics on its own. If one part fails, the others are
// stopped too and the failure is returned. started (when not nil) is called once
// everything has started and the first warm-up is over: what it prints then comes after
// the start-up's log lines and stays in view.
func serve(ctx context.Context, a *app, ln, metricsLn net.Listener, cfg Config, log *zap.Logger, started func()) error {
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
	// The background jobs of this process's roles (serveJobs), each stopped as ctx
	// ends; the fatal ones stop serve as the listeners do.
	runJobs(gctx, g, serveJobs(a, cfg, log, started), cfg, log)
	err := g.Wait()
	if cfg.embeddedRedis() && cfg.runsWorker() {
		err = errors.Join(err, drainInProcess(a, log))
	}
	log.Info("stopped")
	return err
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
