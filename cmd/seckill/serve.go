package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"go.uber.org/zap"
	"golang.org/x/sync/errgroup"
)

type serveCmd struct {
	Config `embed:""`
}

// Run starts what the roles ask for — the API, the fulfilment worker, or both — with
// the periodic warm-up, and on SIGTERM or SIGINT drains them before returning: the API
// finishes the requests in flight, the worker its batch. Kong has already called
// Config.Validate.
func (c *serveCmd) Run(ctx context.Context) error {
	log, err := newLogger(c.LogLevel, c.LogFormat)
	if err != nil {
		return err
	}
	defer func() { _ = log.Sync() }()

	a, cleanup, err := buildApp(ctx, c.Config, log)
	if err != nil {
		return err
	}
	defer cleanup()

	var ln net.Listener
	if c.runsAPI() {
		if ln, err = net.Listen("tcp", c.HTTPAddr); err != nil {
			return fmt.Errorf("SECKILL_HTTP_ADDR: %w", err)
		}
	}
	return serve(ctx, a, ln, c.Config, log)
}

// serve runs until ctx is cancelled, then shuts down gracefully. A nil ln runs no API.
// If one part fails, the others are stopped too and the failure is returned.
func serve(ctx context.Context, a *app, ln net.Listener, cfg Config, log *zap.Logger) error {
	warm(ctx, a, log)
	g, gctx := errgroup.WithContext(ctx)
	if ln != nil {
		srv := &http.Server{Handler: a.HTTP, ReadHeaderTimeout: 5 * time.Second, IdleTimeout: 2 * time.Minute}
		g.Go(func() error { return runHTTP(gctx, srv, ln, cfg.ShutdownTimeout, log) })
	}
	if cfg.runsWorker() {
		log.Info("fulfilment worker started", zap.String("consumer", a.Queue.Consumer()))
		g.Go(func() error { return a.Worker.Run(gctx) })
		g.Go(func() error { every(gctx, cfg.TrimInterval, func() { trim(gctx, a, log) }); return nil })
	}
	g.Go(func() error { every(gctx, cfg.WarmInterval, func() { warm(gctx, a, log) }); return nil })
	err := g.Wait()
	log.Info("stopped")
	return err
}

// runHTTP serves until ctx ends, then stops accepting and drains the requests in
// flight for at most timeout.
func runHTTP(ctx context.Context, srv *http.Server, ln net.Listener, timeout time.Duration, log *zap.Logger) error {
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	log.Info("seckill serving", zap.String("addr", ln.Addr().String()))
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
