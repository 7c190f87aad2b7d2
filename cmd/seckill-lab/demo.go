package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/seckill/seckill/cmd/internal/load"
)

type demoCmd struct {
	Seckill    string `name:"seckill" help:"The seckill binary whose serve sells (default: the seckill beside this command, else the one on PATH)."`
	load.Flags `embed:""`
}

// Validate checks the flags and finds the seckill binary before Run (kong calls it; a
// failure exits 2).
func (c *demoCmd) Validate() error {
	if err := c.Flags.Check(); err != nil {
		return err
	}
	bin, err := seckillBinary(c.Seckill)
	if err != nil {
		return fmt.Errorf("--seckill: %w", err)
	}
	c.Seckill = bin
	return nil
}

// defaultStrategy is the stock strategy serve runs when SECKILL_STOCK_STRATEGY is unset.
const defaultStrategy = "lua"

// Run starts a `seckill serve` of its own on a loopback port — on the Redis and
// database of the SECKILL_* settings, or with nothing configured an in-process Redis
// and a temporary SQLite file; a fresh secret and key prefix; the stock strategy of
// SECKILL_STOCK_STRATEGY — fires the flash sale at it over HTTP, prints the report and
// stops the service. It fails when a promise was broken, nothing was served, or the
// orders persisted could not be counted.
func (c *demoCmd) Run(ctx context.Context) error {
	dbURL, remove, err := labDatabase(ctx, c.Seckill, "demo")
	if err != nil {
		return err
	}
	defer remove()
	strategy := os.Getenv("SECKILL_STOCK_STRATEGY")
	if strategy == "" {
		strategy = defaultStrategy
	}
	svc, err := serveStrategy(ctx, c.Seckill, strategy, dbURL)
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "seckill-lab demo: seckill serve on %s (key prefix %s, stock strategy %s): %d users grab %d units, %d in flight\n",
		svc.base, svc.prefix, strategy, c.Users, c.Stock, c.Concurrency)
	_, rep, saleErr := load.Sell(ctx, load.Target{
		Base: svc.base, Title: "seckill demo " + time.Now().UTC().Format(time.RFC3339),
		Tokens: load.Minter(svc.secret), Progress: load.Terminal(os.Stderr),
	}, c.Flags)
	if saleErr == nil {
		saleErr = rep.Print(os.Stdout, c.JSON)
	}
	if err := svc.stop(); err != nil && saleErr == nil {
		return err
	}
	return saleErr
}
