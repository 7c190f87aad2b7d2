package main

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/seckill/seckill/cmd/internal/load"
	"github.com/seckill/seckill/domain"
)

type loadtestCmd struct {
	URL        string `name:"url" required:"" help:"Base URL of the running seckill, e.g. http://127.0.0.1:8080."`
	JWTSecret  string `name:"jwt-secret" env:"SECKILL_JWT_SECRET" help:"The service's HS256 secret; the users' and the admin's tokens are minted locally."`
	Voucher    string `name:"voucher" help:"Sell this existing voucher instead of creating one (--stock is then ignored: the units left are on sale)."`
	load.Flags `embed:""`
}

// minSecretLen is the shortest secret seckill serve accepts: a shorter one cannot be
// the service's.
const minSecretLen = 16

// Validate checks the flags before Run (kong calls it; a failure exits 2).
func (c *loadtestCmd) Validate() error {
	if c.URL == "" {
		return errors.New("--url: is required: the base URL of a running seckill, e.g. http://127.0.0.1:8080")
	}
	u, err := url.Parse(c.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("--url: %q is not an http:// or https:// base URL", c.URL)
	}
	if len(c.JWTSecret) < minSecretLen {
		return fmt.Errorf("SECKILL_JWT_SECRET (--jwt-secret): the service's secret is required (at least %d bytes)", minSecretLen)
	}
	if c.Voucher != "" {
		if _, err := domain.ParseVoucherID(c.Voucher); err != nil {
			return fmt.Errorf("--voucher: %q is not a positive integer", c.Voucher)
		}
	}
	return c.Flags.Check()
}

// healthTimeout bounds the first contact with the service.
const healthTimeout = 2 * time.Second

// Run checks that the service answers, then sells a voucher to the load, prints the
// report and returns its verdict.
func (c *loadtestCmd) Run(ctx context.Context) error {
	base := strings.TrimRight(c.URL, "/")
	if err := load.Healthy(ctx, base, healthTimeout); err != nil {
		return err
	}
	_, rep, err := load.Sell(ctx, load.Target{
		Base: base, Voucher: c.Voucher, Title: "seckill load test " + time.Now().UTC().Format(time.RFC3339),
		Tokens: load.Minter(c.JWTSecret), Progress: load.Terminal(os.Stderr),
	}, c.Flags)
	if err != nil {
		return err
	}
	return rep.Print(os.Stdout, c.JSON)
}
