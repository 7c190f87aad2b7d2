package load

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"time"

	"github.com/seckill/seckill/adapters/httpapi"
	"github.com/seckill/seckill/domain"
)

// Flags are the flash sale that `seckill-lab demo`, `seckill-lab loadtest` and
// `seckill-lab compare` fire, as kong reads them from the command line.
type Flags struct {
	Users       int           `name:"users" default:"5000" help:"Distinct users that grab."`
	Stock       int           `name:"stock" default:"100" help:"Units the voucher puts on sale."`
	Dup         float64       `name:"dup" default:"0.01" help:"Fraction of users (0..1) that grab twice."`
	Concurrency int           `name:"concurrency" default:"500" help:"Requests in flight at once (and keep-alive connections in the pool)."`
	Seed        uint64        `name:"seed" default:"1" help:"Seed of the order of the grabs and of who grabs twice."`
	Timeout     time.Duration `name:"timeout" default:"60s" help:"How long to wait for every reserved order to be persisted."`
	JSON        bool          `name:"json" help:"Print the report as JSON instead of a table."`
}

// Limits of the flags: beyond them a run is a mistake, not a benchmark.
const (
	maxUsers       = 10_000_000
	maxStock       = 10_000_000
	maxConcurrency = 100_000
)

// Check returns the first bad flag as one line naming it.
func (f *Flags) Check() error {
	switch {
	case f.Users < 1 || f.Users > maxUsers:
		return fmt.Errorf("--users: %d is not between 1 and %d", f.Users, maxUsers)
	case f.Stock < 1 || f.Stock > maxStock:
		return fmt.Errorf("--stock: %d is not between 1 and %d", f.Stock, maxStock)
	case math.IsNaN(f.Dup) || f.Dup < 0 || f.Dup > 1:
		return fmt.Errorf("--dup: %v is not a fraction between 0 and 1", f.Dup)
	case f.Concurrency < 1 || f.Concurrency > maxConcurrency:
		return fmt.Errorf("--concurrency: %d is not between 1 and %d", f.Concurrency, maxConcurrency)
	case f.Timeout <= 0:
		return fmt.Errorf("--timeout: must be greater than 0")
	}
	return nil
}

// Target is the service a sale is fired at, and how.
type Target struct {
	// Base is the service's base URL, e.g. http://127.0.0.1:8080.
	Base string
	// Voucher is an existing voucher to sell (the units it has left are on sale);
	// empty, Sell creates one of Flags.Stock units, titled Title.
	Voucher string
	Title   string
	// Tokens mints the users' tokens and the admin's.
	Tokens TokenSource
	// FirstUser is the first user id of the sale (see Options.FirstUser); default 1.
	FirstUser int64
	// Progress, when set, receives the progress of the requests and of the wait.
	Progress io.Writer
	// During, when set, is called just before the first request and returns the
	// function called with the tally once the last one was answered: to measure the
	// service while it answers.
	During func() (after func(Result))
}

// saleWindow is how long a voucher Sell creates stays on sale.
const saleWindow = time.Hour

// Sell puts a voucher on sale (or takes t.Voucher), fires the load of f at it, waits
// for the reservations to be persisted, reads the orders the store then holds, and
// returns the tally and the report, judged by the store (Report.WithStore); the
// report's Err says whether the promises were kept. Sell's own error means no report:
// the service refused or failed a call around the sale, or ctx was cancelled.
func Sell(ctx context.Context, t Target, f Flags) (Result, Report, error) {
	admin, err := t.Tokens(1, true)
	if err != nil {
		return Result{}, Report{}, fmt.Errorf("admin token: %w", err)
	}
	var v Voucher
	if t.Voucher == "" {
		now := time.Now().UTC()
		v, err = CreateVoucher(ctx, t.Base, admin, NewVoucher{
			Title: t.Title, Stock: f.Stock,
			BeginsAt: now.Add(-time.Minute), EndsAt: now.Add(saleWindow), PerUserLimit: 1,
		})
	} else {
		v, err = GetVoucher(ctx, t.Base, t.Voucher)
	}
	if err != nil {
		return Result{}, Report{}, err
	}
	before, err := GetStats(ctx, t.Base, v.ID, admin)
	if err != nil {
		return Result{}, Report{}, err
	}
	onSale := v.Stock
	held := map[string]bool{} // the orders the store held before the run
	if t.Voucher != "" {
		onSale = before.Remaining
		orders, err := VoucherOrders(ctx, t.Base, v.ID, admin)
		if err != nil {
			return Result{}, Report{}, err
		}
		for _, o := range orders {
			held[o.ID] = true
		}
	}

	after := func(Result) {}
	if t.During != nil {
		after = t.During()
	}
	res, err := Run(ctx, Options{
		Base: t.Base, Voucher: v.ID, Tokens: t.Tokens, Users: f.Users, Dup: f.Dup,
		Concurrency: f.Concurrency, Seed: f.Seed, Progress: t.Progress, FirstUser: t.FirstUser,
	})
	after(res)
	if errors.Is(err, context.Canceled) {
		return res, Report{}, fmt.Errorf("interrupted after %d of the requests", res.Requests)
	}
	if err != nil {
		return res, Report{}, err
	}

	// A sale nobody was served is reported as such whatever the stats say: one look
	// at them is enough.
	timeout := f.Timeout
	if res.Served() == 0 {
		timeout = 0
	} else if t.Progress != nil {
		fmt.Fprintf(t.Progress, "  waiting for %d orders to be persisted\n", res.Reserved)
	}
	persisted, waitErr := WaitPersisted(ctx, t.Base, v.ID, admin, before.Persisted()+res.Reserved, timeout)
	if waitErr != nil && !errors.Is(waitErr, ErrNotPersisted) && !errors.Is(waitErr, ErrNoStats) {
		return res, Report{}, waitErr
	}
	sale := Sale{Voucher: v.ID, Stock: onSale, Users: f.Users, Concurrency: f.Concurrency}
	rep := NewReport(sale, res, max(persisted.Orders-before.Persisted(), 0), persisted.Took, waitErr)
	if errors.Is(waitErr, ErrNoStats) || res.Served() == 0 {
		return res, rep, nil
	}
	return res, judgeByStore(ctx, t.Base, v.ID, admin, held, res, rep), nil
}

// judgeByStore reads what the store holds of the voucher after the run — its orders
// and its stock — and returns rep judged by it (Report.WithStore), or unverified
// when either could not be read.
func judgeByStore(ctx context.Context, base, voucher, admin string, held map[string]bool, res Result, rep Report) Report {
	orders, err := VoucherOrders(ctx, base, voucher, admin)
	if err != nil {
		return rep.WithoutStore(fmt.Errorf("%w: %v", ErrNoOrders, err))
	}
	v, err := GetVoucher(ctx, base, voucher)
	if err != nil {
		return rep.WithoutStore(fmt.Errorf("%w: %v", ErrNoOrders, err))
	}
	return rep.WithStore(CheckStore(v.Stock, held, orders, res))
}

// Minter returns a token source that signs with the service's secret, as the
// service's own tokens are signed.
func Minter(secret string) TokenSource {
	tokens := httpapi.NewTokens([]byte(secret))
	return func(user int64, admin bool) (string, error) {
		return tokens.Mint(domain.UserID(user), admin, 2*time.Hour)
	}
}

// Terminal returns f when it is a terminal, else nil: a progress line is for people,
// not for logs.
func Terminal(f *os.File) io.Writer {
	fi, err := f.Stat()
	if err != nil || fi.Mode()&os.ModeCharDevice == 0 {
		return nil
	}
	return f
}
