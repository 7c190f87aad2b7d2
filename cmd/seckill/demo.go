package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/alecthomas/kong"
	"github.com/uptrace/bun"
	"go.uber.org/zap"

	"github.com/seckill/seckill/adapters/sqlstore"
	"github.com/seckill/seckill/cmd/seckill/internal/load"
)

type demoCmd struct {
	Common    `embed:""`
	LoadFlags `embed:""`
	Compare   bool `name:"compare" help:"Fire the same sale at each stock strategy in turn (lua, watch, postgres), each on a fresh voucher and key prefix, and print them side by side."`

	cfg      Config        // serve's configuration for the demo, made by Validate
	strategy StockStrategy // the stock strategy of a single run
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
	strategy, err := configuredStrategy(c.Common)
	if err != nil {
		return err
	}
	cfg, err := demoConfig(c.Common)
	if err != nil {
		return err
	}
	c.cfg, c.strategy = cfg, strategy
	return nil
}

// demoReadyTimeout bounds how long the demo waits for its own service to be ready.
const demoReadyTimeout = 15 * time.Second

// Run migrates the database, starts the service on an ephemeral loopback port with a
// fresh secret and key prefix, fires the flash sale at it over HTTP, prints the
// report and shuts the service down. It fails when a promise was broken. With
// --compare it does so once per stock strategy (see compare).
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

	if c.cfg.DatabaseURL == "" {
		// Nothing configured: a SQLite file of the demo's own, gone when it ends.
		dir, err := os.MkdirTemp("", "seckill-demo-")
		if err != nil {
			return fmt.Errorf("make a directory for the demo's database: %w", err)
		}
		defer os.RemoveAll(dir)
		c.cfg.DatabaseURL = sqlstore.SQLiteScheme + filepath.Join(dir, "demo.db")
	}
	if err := migrateUp(ctx, c.cfg.DatabaseURL); err != nil {
		return err
	}
	if c.Compare {
		return c.compare(ctx, log)
	}
	cfg := c.cfg
	svc, err := startDemo(ctx, cfg, c.strategy, log)
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "seckill demo: service on %s (key prefix %s, stock strategy %s): %d users grab %d units, %d in flight\n",
		svc.base, cfg.KeyPrefix, c.strategy, c.Users, c.Stock, c.Concurrency)
	saleErr := runSale(ctx, sale{
		base: svc.base, tokens: mintWith(cfg.JWTSecret), flags: c.LoadFlags,
		stdout: os.Stdout, progress: terminal(os.Stderr),
	})
	if err := svc.stop(); err != nil && saleErr == nil {
		return fmt.Errorf("shut down the demo service: %w", err)
	}
	return saleErr
}

// demoApp is serve's object graph and the database it uses.
type demoApp struct {
	App *app
	DB  *bun.DB
}

// demoService is the service a demo runs on a loopback port.
type demoService struct {
	base string
	// app is the service's object graph.
	app *app
	// statements counts the statements the service sent to its database so far.
	statements *statementCounter
	// stop shuts the service down and closes its connections.
	stop func() error
}

// startDemo builds serve's graph from cfg with the given stock strategy, serves it on
// cfg.HTTPAddr and returns once it is ready.
func startDemo(ctx context.Context, cfg Config, strategy StockStrategy, log *zap.Logger) (*demoService, error) {
	d, cleanup, err := buildDemo(ctx, cfg, strategy, log)
	if err != nil {
		return nil, err
	}
	// Added before anything runs: bun does not guard its list of hooks against
	// queries in flight.
	statements := &statementCounter{}
	d.DB.AddQueryHook(statements) //nolint:staticcheck // WithQueryHook returns a copy, which the service built on d.DB would never use
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
		serveErr = serve(serveCtx, d.App, ln, nil, cfg, log)
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
	if err := waitReady(ctx, base, served, &serveErr); err != nil {
		_ = stop()
		return nil, err
	}
	return &demoService{base: base, app: d.App, statements: statements, stop: stop}, nil
}

// statementCounter is a bun query hook that counts the statements sent to the
// database, BEGIN and COMMIT included.
type statementCounter struct {
	n atomic.Int64
}

var _ bun.QueryHook = (*statementCounter)(nil)

// BeforeQuery does nothing.
func (c *statementCounter) BeforeQuery(ctx context.Context, _ *bun.QueryEvent) context.Context {
	return ctx
}

// AfterQuery counts one statement.
func (c *statementCounter) AfterQuery(context.Context, *bun.QueryEvent) {
	c.n.Add(1)
}

// count returns the statements counted so far.
func (c *statementCounter) count() int64 { return c.n.Load() }

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

// comparison is one strategy's row of `demo --compare`: the sale's report, with the
// mean latency and the database statements the requests cost.
type comparison struct {
	Strategy StockStrategy `json:"strategy"`
	load.Report
	// AvgMs is the mean latency of the answered requests.
	AvgMs float64 `json:"avg_ms"`
	// Statements counts every statement the service sent to its database while the
	// requests ran — the grab path's, and the fulfillment worker's and background
	// jobs' meanwhile — and StatementsPerGrab divides it by the requests.
	Statements        int64   `json:"db_statements"`
	StatementsPerGrab float64 `json:"db_statements_per_grab"`
}

// compare fires the same sale — the same users in the same order, the same stock,
// repeats and concurrency — at a service running each stock strategy in turn, each
// with a fresh voucher and key prefix on the same Redis and database, prints the rows
// side by side (a table, or with --json one JSON array) and returns an error wrapping
// errBroken when any strategy broke a promise.
func (c *demoCmd) compare(ctx context.Context, log *zap.Logger) error {
	rows := make([]comparison, 0, len(stockStrategies))
	for i, strategy := range stockStrategies {
		cfg := c.cfg
		if i > 0 {
			// A fresh key prefix (and secret): each strategy sells on keys of its own.
			var err error
			if cfg, err = demoConfig(c.Common); err != nil {
				return err
			}
			// The same database as the first (a temporary file when none is
			// configured), never the default ./seckill.db.
			cfg.DatabaseURL = c.cfg.DatabaseURL
		}
		row, err := c.compareOne(ctx, cfg, strategy, log)
		if err != nil {
			return fmt.Errorf("%s: %w", strategy, err)
		}
		rows = append(rows, row)
	}

	var err error
	if c.JSON {
		err = json.NewEncoder(os.Stdout).Encode(rows)
	} else {
		err = writeComparison(os.Stdout, c.LoadFlags, c.cfg.SoldOutTTL, rows)
	}
	if err != nil {
		return err
	}
	var problems []string
	for _, r := range rows {
		for _, p := range r.Problems() {
			problems = append(problems, fmt.Sprintf("%s: %s", r.Strategy, p))
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("%w: %s", errBroken, strings.Join(problems, "; "))
	}
	return nil
}

// compareOne starts the service with strategy, sells a fresh voucher to the load,
// waits for its orders to be persisted and stops the service.
func (c *demoCmd) compareOne(ctx context.Context, cfg Config, strategy StockStrategy, log *zap.Logger) (comparison, error) {
	svc, err := startDemo(ctx, cfg, strategy, log)
	if err != nil {
		return comparison{}, err
	}
	fmt.Fprintf(os.Stderr, "seckill demo --compare: %s (%d of %d) on %s (key prefix %s): %d users grab %d units, %d in flight\n",
		strategy, slices.Index(stockStrategies, strategy)+1, len(stockStrategies), svc.base, cfg.KeyPrefix, c.Users, c.Stock, c.Concurrency)
	row, saleErr := c.sellCompared(ctx, svc, cfg, strategy)
	if err := svc.stop(); err != nil && saleErr == nil {
		return comparison{}, fmt.Errorf("shut down the demo service: %w", err)
	}
	return row, saleErr
}

// sellCompared creates a voucher of --stock units on svc, fires the load at it while
// counting svc's database statements, and waits for the reserved orders to be
// persisted.
func (c *demoCmd) sellCompared(ctx context.Context, svc *demoService, cfg Config, strategy StockStrategy) (comparison, error) {
	tokens := mintWith(cfg.JWTSecret)
	admin, err := tokens(1, true)
	if err != nil {
		return comparison{}, fmt.Errorf("admin token: %w", err)
	}
	now := time.Now().UTC()
	v, err := load.CreateVoucher(ctx, svc.base, admin, load.NewVoucher{
		Title: fmt.Sprintf("seckill demo --compare %s %s", strategy, now.Format(time.RFC3339)), Stock: c.Stock,
		BeginsAt: now.Add(-time.Minute), EndsAt: now.Add(saleWindow), PerUserLimit: 1,
	})
	if err != nil {
		return comparison{}, err
	}
	// Minting the tokens touches no database: the statements counted across the run
	// are the service's while it answers the grabs.
	first := svc.statements.count()
	result, err := load.Run(ctx, load.Options{
		Base: svc.base, Voucher: v.ID, Tokens: tokens, Users: c.Users, Dup: c.Dup,
		Concurrency: c.Concurrency, Seed: c.Seed, Progress: terminal(os.Stderr),
	})
	statements := svc.statements.count() - first
	if err != nil {
		return comparison{}, err
	}
	fmt.Fprintf(os.Stderr, "  %s: %d requests answered in %v; waiting for %d orders to be persisted\n",
		strategy, result.Requests, result.Elapsed.Round(time.Millisecond), result.Reserved)
	persisted, waitErr := load.WaitPersisted(ctx, svc.base, v.ID, admin, result.Reserved, c.Timeout)
	if waitErr != nil && !errors.Is(waitErr, load.ErrNotPersisted) {
		return comparison{}, waitErr
	}
	rep := load.NewReport(load.Sale{Voucher: v.ID, Stock: v.Stock, Users: c.Users, Concurrency: c.Concurrency},
		result, persisted.Orders, persisted.Took)
	row := comparison{
		Strategy: strategy, Report: rep,
		AvgMs:      math.Round(float64(result.Mean)/float64(time.Microsecond)) / 1000,
		Statements: statements,
	}
	if rep.Requests > 0 {
		row.StatementsPerGrab = math.Round(float64(statements)/float64(rep.Requests)*1000) / 1000
	}
	return row, nil
}

// writeComparison writes the rows of `demo --compare` as a table for people.
func writeComparison(w io.Writer, f LoadFlags, soldOutTTL time.Duration, rows []comparison) error {
	repeats := 0
	if len(rows) > 0 {
		repeats = max(rows[0].Requests-f.Users, 0)
	}
	fmt.Fprintf(w, "stock strategies compared: %d users (%d twice), %d units, %d in flight, sold-out short cut %v\n",
		f.Users, repeats, f.Stock, f.Concurrency, soldOutTTL)
	fmt.Fprintf(w, "  %-9s %8s %8s %10s %9s %7s %8s %8s %9s %13s %6s\n",
		"strategy", "reserved", "oversold", "duplicates", "persisted", "other", "avg ms", "p99 ms", "req/s", "db stmts/grab", "")
	for _, r := range rows {
		verdict := "ok"
		if r.Broken() {
			verdict = "BROKEN"
		}
		fmt.Fprintf(w, "  %-9s %8d %8d %10d %9d %7d %8.2f %8.2f %9.0f %13.3f %6s\n",
			r.Strategy, r.Reserved, r.Oversold, r.Duplicates, r.OrdersPersisted, r.Other,
			r.AvgMs, r.P99Ms, r.RPS, r.StatementsPerGrab, verdict)
	}
	for _, r := range rows {
		for _, ex := range r.OtherExamples {
			fmt.Fprintf(w, "  %s, other answers, e.g.: %s\n", r.Strategy, ex)
		}
	}
	fmt.Fprintln(w, "  db stmts/grab: every statement on the service's database while the requests ran (grab path,")
	fmt.Fprintln(w, "  fulfillment worker, background jobs), BEGIN and COMMIT included, per request")
	var err error
	if broken := slices.IndexFunc(rows, func(r comparison) bool { return r.Broken() }); broken >= 0 {
		_, err = fmt.Fprintln(w, "PROMISE BROKEN: see the rows marked BROKEN")
	} else {
		_, err = fmt.Fprintln(w, "all promises kept by every strategy: no oversell, no duplicate, no lost order")
	}
	return err
}
