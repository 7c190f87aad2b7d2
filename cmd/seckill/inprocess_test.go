package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/alecthomas/kong"
	"go.uber.org/zap"

	"github.com/seckill/seckill/adapters/sqlstore"
	"github.com/seckill/seckill/cmd/internal/load"
)

// inProcess is serve's graph served on a loopback port in the test's own process (the
// benchmarks measure it beside their client).
type inProcess struct {
	base string
	// app is the service's object graph.
	app *app
	// stop shuts the service down and closes its connections.
	stop func() error
}

// inProcessReadyTimeout bounds how long startInProcess waits for the service.
const inProcessReadyTimeout = 15 * time.Second

// startInProcess builds serve's graph from cfg, serves it on cfg.HTTPAddr and returns
// once it is ready.
func startInProcess(ctx context.Context, cfg Config, log *zap.Logger) (*inProcess, error) {
	a, cleanup, err := buildApp(ctx, cfg, log)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", cfg.HTTPAddr)
	if err != nil {
		cleanup()
		return nil, fmt.Errorf("listener: %w", err)
	}
	base := "http://" + ln.Addr().String()

	serveCtx, stopServe := context.WithCancel(ctx)
	served := make(chan struct{})
	var serveErr error
	go func() {
		defer close(served)
		serveErr = serve(serveCtx, a, ln, nil, cfg, log, nil)
	}()
	stop := func() error {
		defer cleanup()
		stopServe()
		select {
		case <-served:
			return serveErr
		case <-time.After(cfg.ShutdownTimeout + 5*time.Second):
			return errors.New("the service did not stop in time")
		}
	}
	if err := load.WaitReady(ctx, base, inProcessReadyTimeout, served); err != nil {
		_ = stop()
		if errors.Is(err, load.ErrStopped) && serveErr != nil {
			err = serveErr
		}
		return nil, fmt.Errorf("the in-process service: %w", err)
	}
	return &inProcess{base: base, app: a, stop: stop}, nil
}

// inProcessConfig is serve's configuration for a service in the test's process: c's
// Redis, database and logging, a key prefix of its own, a fresh random JWT secret, an
// ephemeral loopback listener, both roles, no periodic reconciliation, and for
// everything else serve's defaults.
func inProcessConfig(c Common) (Config, error) {
	cfg, err := serveSettings()
	if err != nil {
		return Config{}, fmt.Errorf("serve settings: %w", err)
	}
	var b [24]byte
	if _, err := rand.Read(b[:]); err != nil {
		return Config{}, fmt.Errorf("jwt secret: %w", err)
	}
	c.KeyPrefix = fmt.Sprintf("%s-bench-%s", c.KeyPrefix, hex.EncodeToString(b[:4]))
	cfg.Common = c
	cfg.HTTPAddr = "127.0.0.1:0"
	cfg.JWTSecret = hex.EncodeToString(b[4:])
	cfg.Roles = "api,worker"
	cfg.Consumer = ""
	cfg.ReconcileInterval = 0
	if err := cfg.Validate(); err != nil {
		return Config{}, err
	}
	return cfg, nil
}

// serveSettings reads serve's settings as `seckill serve` would with no flags: their
// defaults, or what their SECKILL_* variables say. Nothing is validated here.
func serveSettings() (Config, error) {
	var cfg Config
	parser, err := kong.New(&cfg)
	if err != nil {
		return Config{}, err
	}
	kctx, err := kong.Trace(parser, nil)
	if err != nil {
		return Config{}, err
	}
	if err := kctx.ApplyDefaults(); err != nil {
		return Config{}, err
	}
	return cfg, nil
}

// migrateUp applies the pending migrations to the database at dsn.
func migrateUp(ctx context.Context, dsn string) error {
	db, err := sqlstore.Open(ctx, dsn)
	if err != nil {
		return fmt.Errorf("connect to database %s: %w", redactURL(dsn), err)
	}
	defer db.Close()
	if _, err := sqlstore.MigrateUp(ctx, db); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	return nil
}
