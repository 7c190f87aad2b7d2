package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/alecthomas/kong"

	"github.com/seckill/seckill/adapters/pgstore"
)

type demoCmd struct {
	Common    `embed:""`
	LoadFlags `embed:""`

	cfg Config // serve's configuration for the demo, made by Validate
}

// Validate checks the flags and the serve settings the demo uses before Run (kong
// calls it; a failure exits 2).
func (c *demoCmd) Validate() error {
	if err := c.LoadFlags.check(); err != nil {
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
// report and shuts the service down. It fails when a promise was broken.
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
	if err := migrateUp(ctx, cfg.DatabaseURL); err != nil {
		return err
	}
	a, cleanup, err := buildApp(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer cleanup()
	ln, err := net.Listen("tcp", cfg.HTTPAddr)
	if err != nil {
		return fmt.Errorf("demo listener: %w", err)
	}
	base := "http://" + ln.Addr().String()

	serveCtx, stopServe := context.WithCancel(ctx)
	defer stopServe()
	served := make(chan struct{})
	var serveErr error
	go func() {
		defer close(served)
		serveErr = serve(serveCtx, a, ln, cfg, log)
	}()
	shutdown := func() error {
		stopServe()
		select {
		case <-served:
			return serveErr
		case <-time.After(cfg.ShutdownTimeout + 5*time.Second):
			return errors.New("the demo service did not stop in time")
		}
	}

	if err := waitReady(ctx, base, served, &serveErr); err != nil {
		_ = shutdown()
		return err
	}
	fmt.Fprintf(os.Stderr, "seckill demo: service on %s (key prefix %s): %d users grab %d units, %d in flight\n",
		base, cfg.KeyPrefix, c.Users, c.Stock, c.Concurrency)
	saleErr := runSale(ctx, sale{
		base: base, tokens: mintWith(cfg.JWTSecret), flags: c.LoadFlags,
		stdout: os.Stdout, progress: terminal(os.Stderr),
	})
	if err := shutdown(); err != nil && saleErr == nil {
		return fmt.Errorf("shut down the demo service: %w", err)
	}
	return saleErr
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
	db, err := pgstore.Open(openCtx, dsn)
	if err != nil {
		return fmt.Errorf("connect to database %s: %w", redactURL(dsn), err)
	}
	defer db.Close()
	if _, err := pgstore.MigrateUp(ctx, db); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	return nil
}

// waitReady polls GET /readyz until it answers 200, serve fails, or time runs out.
func waitReady(ctx context.Context, base string, served <-chan struct{}, serveErr *error) error {
	client := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(demoReadyTimeout)
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/readyz", nil)
		if err != nil {
			return err
		}
		if res, err := client.Do(req); err == nil {
			_ = res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the demo service was not ready within %v", demoReadyTimeout)
		}
		select {
		case <-served:
			if *serveErr == nil {
				return errors.New("the demo service stopped before it was ready")
			}
			return fmt.Errorf("the demo service: %w", *serveErr)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}
