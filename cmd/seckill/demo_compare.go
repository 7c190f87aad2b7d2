package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/seckill/seckill/cmd/internal/load"
)

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
