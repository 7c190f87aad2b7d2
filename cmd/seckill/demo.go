package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/alecthomas/kong"
	"go.uber.org/zap"

	"github.com/seckill/seckill/adapters/sqlstore"
	"github.com/seckill/seckill/cmd/internal/load"
)

type demoCmd struct {
	Common     `embed:""`
	load.Flags `embed:""`

	cfg Config // serve's configuration for the demo, made by Validate
}

// Validate checks the flags and the serve settings the demo uses before Run (kong
// calls it; a failure exits 2).
func (c *demoCmd) Validate() error {
	if err := c.Flags.Check(); err != nil {
		return err
	}
	if err := c.Common.validate(); err != nil {
		return err
	}
	cfg, err := demoConfig(c.Common)
	if err != nil {
		return err
	}
	c.cfg = cfg
	return nil
}

// demoReadyTimeout bounds how long the demo waits for its own service to be ready.
const demoReadyTimeout = 15 * time.Second

// Run migrates the database, starts the service on an ephemeral loopback port with a
// fresh secret and key prefix, fires the flash sale at it over HTTP, prints the
// report and shuts the service down. It fails when a promise was broken, nothing was
// served, or the orders persisted could not be counted.
func (c *demoCmd) Run(ctx context.Context) error {
	level := c.LogLevel
	if level == "info" { // the default: the demo's own report is what matters
		level = "warn"
	}
	log, err := newLogger(level, c.LogFormat)
	if err != nil {
		return err
	}
	defer func() { _ = log.Sync() }()

	cfg := c.cfg
	if cfg.DatabaseURL == "" {
		// Nothing configured: a SQLite file of the demo's own, gone when it ends.
		dir, err := os.MkdirTemp("", "seckill-demo-")
		if err != nil {
			return fmt.Errorf("make a directory for the demo's database: %w", err)
		}
		defer os.RemoveAll(dir)
		cfg.DatabaseURL = sqlstore.SQLiteScheme + filepath.Join(dir, "demo.db")
	}
	if err := migrateUp(ctx, cfg.DatabaseURL); err != nil {
		return err
	}
	svc, err := startDemo(ctx, cfg, log)
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "seckill demo: service on %s (key prefix %s, stock strategy %s): %d users grab %d units, %d in flight\n",
		svc.base, cfg.KeyPrefix, cfg.StockStrategy, c.Users, c.Stock, c.Concurrency)
	_, rep, saleErr := load.Sell(ctx, load.Target{
		Base: svc.base, Title: "seckill load test " + time.Now().UTC().Format(time.RFC3339),
		Tokens: load.Minter(cfg.JWTSecret), Progress: load.Terminal(os.Stderr),
	}, c.Flags)
	if saleErr == nil {
		saleErr = rep.Print(os.Stdout, c.JSON)
	}
	if err := svc.stop(); err != nil && saleErr == nil {
		return fmt.Errorf("shut down the demo service: %w", err)
	}
	return saleErr
}

// demoService is the service a demo runs on a loopback port.
type demoService struct {
	base string
	// app is the service's object graph.
	app *app
	// stop shuts the service down and closes its connections.
	stop func() error
}

// startDemo builds serve's graph from cfg, serves it on cfg.HTTPAddr and returns once
// it is ready.
func startDemo(ctx context.Context, cfg Config, log *zap.Logger) (*demoService, error) {
	a, cleanup, err := buildApp(ctx, cfg, log)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", cfg.HTTPAddr)
	if err != nil {
		cleanup()
		return nil, fmt.Errorf("demo listener: %w", err)
	}
	base := "http://" + ln.Addr().String()

	serveCtx, stopServe := context.WithCancel(ctx)
	served := make(chan struct{})
	var serveErr error
	go func() {
		defer close(served)
		serveErr = serve(serveCtx, a, ln, nil, cfg, log)
	}()
	stop := func() error {
		defer cleanup()
		stopServe()
		select {
		case <-served:
			return serveErr
		case <-time.After(cfg.ShutdownTimeout + 5*time.Second):
			return errors.New("the demo service did not stop in time")
		}
	}
	if err := load.WaitReady(ctx, base, demoReadyTimeout, served); err != nil {
		_ = stop()
		if errors.Is(err, load.ErrStopped) && serveErr != nil {
			err = serveErr
		}
		return nil, fmt.Errorf("the demo service: %w", err)
	}
	return &demoService{base: base, app: a, stop: stop}, nil
}

// demoConfig is serve's configuration for a demo: c's Redis, PostgreSQL and logging,
// a key prefix of its own (so demos never share keys with each other or a running
// service), a fresh random JWT secret, an ephemeral loopback listener, both roles,
// no periodic reconciliation (the demo is over in seconds), and for everything else
// serve's defaults, or the values their SECKILL_* variables set.
func demoConfig(c Common) (Config, error) {
	cfg, err := serveSettings()
	if err != nil {
		return Config{}, fmt.Errorf("serve settings: %w", err)
	}
	var b [24]byte
	if _, err := rand.Read(b[:]); err != nil {
		return Config{}, fmt.Errorf("jwt secret: %w", err)
	}
	c.KeyPrefix = fmt.Sprintf("%s-demo-%s", c.KeyPrefix, hex.EncodeToString(b[:4]))
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
	openCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	db, err := sqlstore.Open(openCtx, dsn)
	if err != nil {
		return fmt.Errorf("connect to database %s: %w", redactURL(dsn), err)
	}
	defer db.Close()
	if _, err := sqlstore.MigrateUp(ctx, db); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	return nil
}
