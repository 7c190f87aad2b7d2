package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/seckill/seckill/adapters/httpapi"
	"github.com/seckill/seckill/cmd/internal/load"
	"github.com/seckill/seckill/domain"
)

// LoadFlags are the flash sale `demo` and `loadtest` fire.
type LoadFlags struct {
	Users       int           `name:"users" default:"5000" help:"Distinct users that grab."`
	Stock       int           `name:"stock" default:"100" help:"Units the voucher puts on sale."`
	Dup         float64       `name:"dup" default:"0.01" help:"Fraction of users (0..1) that grab twice."`
	Concurrency int           `name:"concurrency" default:"500" help:"Requests in flight at once (and keep-alive connections in the pool)."`
	Seed        uint64        `name:"seed" default:"1" help:"Seed of the order of the grabs and of who grabs twice."`
	Timeout     time.Duration `name:"timeout" default:"60s" help:"How long to wait for every reserved order to be persisted."`
	JSON        bool          `name:"json" help:"Print the report as one JSON object (demo --compare: one JSON array of them)."`
}

// Limits of the load flags: beyond them a run is a mistake, not a benchmark.
const (
	maxLoadUsers       = 10_000_000
	maxLoadStock       = 10_000_000
	maxLoadConcurrency = 100_000
)

// check returns the first bad load flag as one line naming it.
func (f *LoadFlags) check() error {
	switch {
	case f.Users < 1 || f.Users > maxLoadUsers:
		return fmt.Errorf("--users: %d is not between 1 and %d", f.Users, maxLoadUsers)
	case f.Stock < 1 || f.Stock > maxLoadStock:
		return fmt.Errorf("--stock: %d is not between 1 and %d", f.Stock, maxLoadStock)
	case math.IsNaN(f.Dup) || f.Dup < 0 || f.Dup > 1:
		return fmt.Errorf("--dup: %v is not a fraction between 0 and 1", f.Dup)
	case f.Concurrency < 1 || f.Concurrency > maxLoadConcurrency:
		return fmt.Errorf("--concurrency: %d is not between 1 and %d", f.Concurrency, maxLoadConcurrency)
	case f.Timeout <= 0:
		return fmt.Errorf("--timeout: must be greater than 0")
	}
	return nil
}

type loadtestCmd struct {
	URL       string `name:"url" required:"" help:"Base URL of the running seckill, e.g. http://127.0.0.1:8080."`
	JWTSecret string `name:"jwt-secret" env:"SECKILL_JWT_SECRET" help:"The service's HS256 secret; the users' and the admin's tokens are minted locally."`
	Voucher   string `name:"voucher" help:"Sell this existing voucher instead of creating one (--stock is then ignored: the units left are on sale)."`
	LoadFlags `embed:""`
}

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
	return c.LoadFlags.check()
}

// healthTimeout bounds the first contact with the service.
const healthTimeout = 2 * time.Second

// Run checks that the service answers, then sells a voucher to the load and reports.
func (c *loadtestCmd) Run(ctx context.Context) error {
	base := strings.TrimRight(c.URL, "/")
	if err := load.Healthy(ctx, base, healthTimeout); err != nil {
		return err
	}
	return runSale(ctx, sale{
		base: base, voucher: c.Voucher, tokens: mintWith(c.JWTSecret), flags: c.LoadFlags,
		stdout: os.Stdout, progress: terminal(os.Stderr),
	})
}

// sale is one flash sale against a running service.
type sale struct {
	base    string
	voucher string // an existing voucher; empty creates one
	tokens  load.TokenSource
	flags   LoadFlags
	stdout  io.Writer
	// progress receives the progress line; nil shows none.
	progress io.Writer
}

// saleWindow is how long a created voucher stays on sale.
const saleWindow = time.Hour

// errBroken makes the command exit 1 when a promise was broken.
var errBroken = errors.New("a promise was broken")

// runSale puts a voucher on sale (or takes the given one), fires the load, waits for
// the reservations to be persisted, prints the report and returns an error wrapping
// errBroken when a promise was broken.
func runSale(ctx context.Context, s sale) error {
	admin, err := s.tokens(1, true)
	if err != nil {
		return fmt.Errorf("admin token: %w", err)
	}
	var v load.Voucher
	if s.voucher == "" {
		now := time.Now().UTC()
		v, err = load.CreateVoucher(ctx, s.base, admin, load.NewVoucher{
			Title: "seckill load test " + now.Format(time.RFC3339), Stock: s.flags.Stock,
			BeginsAt: now.Add(-time.Minute), EndsAt: now.Add(saleWindow), PerUserLimit: 1,
		})
	} else {
		v, err = load.GetVoucher(ctx, s.base, s.voucher)
	}
	if err != nil {
		return err
	}
	before, err := load.GetStats(ctx, s.base, v.ID, admin)
	if err != nil {
		return err
	}
	onSale := v.Stock
	if s.voucher != "" {
		onSale = before.Remaining
	}

	res, err := load.Run(ctx, load.Options{
		Base: s.base, Voucher: v.ID, Tokens: s.tokens, Users: s.flags.Users, Dup: s.flags.Dup,
		Concurrency: s.flags.Concurrency, Seed: s.flags.Seed, Progress: s.progress,
	})
	if errors.Is(err, context.Canceled) {
		return fmt.Errorf("interrupted after %d of the requests", res.Requests)
	}
	if err != nil {
		return err
	}
	if s.progress != nil {
		fmt.Fprintf(s.progress, "  waiting for %d orders to be persisted\n", res.Reserved)
	}
	persisted, waitErr := load.WaitPersisted(ctx, s.base, v.ID, admin, before.Persisted()+res.Reserved, s.flags.Timeout)
	if waitErr != nil && !errors.Is(waitErr, load.ErrNotPersisted) {
		return waitErr
	}
	rep := load.NewReport(load.Sale{Voucher: v.ID, Stock: onSale, Users: s.flags.Users, Concurrency: s.flags.Concurrency},
		res, persisted.Orders-before.Persisted(), persisted.Took)
	if s.flags.JSON {
		err = rep.WriteJSON(s.stdout)
	} else {
		err = rep.WriteTable(s.stdout)
	}
	if err != nil {
		return err
	}
	if problems := rep.Problems(); len(problems) > 0 {
		if waitErr != nil {
			problems = append(problems, waitErr.Error())
		}
		return fmt.Errorf("%w: %s", errBroken, strings.Join(problems, "; "))
	}
	return nil
}

// mintWith returns a token source signing with secret.
func mintWith(secret string) load.TokenSource {
	tokens := httpapi.NewTokens([]byte(secret))
	return func(user int64, admin bool) (string, error) {
		return tokens.Mint(domain.UserID(user), admin, 2*time.Hour)
	}
}

// terminal returns f when it is a terminal, else nil: the progress line is for
// people, not for logs.
func terminal(f *os.File) io.Writer {
	fi, err := f.Stat()
	if err != nil || fi.Mode()&os.ModeCharDevice == 0 {
		return nil
	}
	return f
}
