package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/seckill/seckill/cmd/internal/load"
)

type compareCmd struct {
	Seckill    string `name:"seckill" help:"The seckill binary whose serve is compared (default: the seckill beside this command, else the one on PATH)."`
	Strategies string `name:"strategies" default:"lua,watch,postgres" help:"The stock strategies to compare (SECKILL_STOCK_STRATEGY values), comma-separated, in order."`
	load.Flags `embed:""`

	strategies []string // parsed by Validate
}

// Validate checks the flags and finds the seckill binary before Run (kong calls it; a
// failure exits 2).
func (c *compareCmd) Validate() error {
	if err := c.Flags.Check(); err != nil {
		return err
	}
	c.strategies = nil
	for _, s := range strings.Split(c.Strategies, ",") {
		if s = strings.TrimSpace(s); s != "" {
			c.strategies = append(c.strategies, s)
		}
	}
	if len(c.strategies) == 0 {
		return fmt.Errorf("--strategies: %q names no strategy", c.Strategies)
	}
	bin, err := seckillBinary(c.Seckill)
	if err != nil {
		return fmt.Errorf("--seckill: %w", err)
	}
	c.Seckill = bin
	return nil
}

// comparison is one strategy's row: the sale's report, with the mean latency and the
// database statements the requests cost.
type comparison struct {
	Strategy string `json:"strategy"`
	load.Report
	// AvgMs is the mean latency of the answered requests.
	AvgMs float64 `json:"avg_ms"`
	// Statements counts every statement the service sent to its database while the
	// requests ran — the grab path's, and the fulfillment worker's and background
	// jobs' meanwhile — and StatementsPerGrab divides it by the requests.
	Statements        int64   `json:"db_statements"`
	StatementsPerGrab float64 `json:"db_statements_per_grab"`
}

// Run fires the same sale — the same users in the same order, the same stock, repeats
// and concurrency — at `seckill serve` running each strategy in turn, each serve with
// a fresh voucher, key prefix and secret on the same Redis and database (those of the
// SECKILL_* settings, as serve reads them; with no database configured, a temporary
// SQLite file), prints the rows side by side (a table, or with --json one JSON array)
// and returns the strongest verdict among them.
func (c *compareCmd) Run(ctx context.Context) error {
	dbURL, remove, err := labDatabase(ctx, c.Seckill, "compare")
	if err != nil {
		return err
	}
	defer remove()
	rows := make([]comparison, 0, len(c.strategies))
	for i, strategy := range c.strategies {
		svc, err := serveStrategy(ctx, c.Seckill, strategy, dbURL)
		if err != nil {
			return fmt.Errorf("%s: %w", strategy, err)
		}
		fmt.Fprintf(os.Stderr, "seckill-lab compare: %s (%d of %d) on %s (key prefix %s): %d users grab %d units, %d in flight\n",
			strategy, i+1, len(c.strategies), svc.base, svc.prefix, c.Users, c.Stock, c.Concurrency)
		row, saleErr := c.sell(ctx, svc, strategy)
		if err := svc.stop(); err != nil && saleErr == nil {
			saleErr = err
		}
		if saleErr != nil {
			return fmt.Errorf("%s: %w", strategy, saleErr)
		}
		rows = append(rows, row)
	}
	if c.JSON {
		err = json.NewEncoder(os.Stdout).Encode(rows)
	} else {
		err = writeComparison(os.Stdout, c.Flags, rows)
	}
	if err != nil {
		return err
	}
	return verdict(rows)
}

// sell sells a fresh voucher of --stock units on svc, counting svc's database
// statements while the requests run.
func (c *compareCmd) sell(ctx context.Context, svc *service, strategy string) (comparison, error) {
	var first, last int64
	var countErr error
	count := func() int64 {
		n, err := statements(ctx, svc.base)
		if err != nil && countErr == nil {
			countErr = err
		}
		return n
	}
	res, rep, err := load.Sell(ctx, load.Target{
		Base:  svc.base,
		Title: fmt.Sprintf("seckill-lab compare %s %s", strategy, time.Now().UTC().Format(time.RFC3339)),
		// Minting the tokens touches no database: the statements counted are the
		// service's while it answers the grabs.
		Tokens: load.Minter(svc.secret), Progress: load.Terminal(os.Stderr),
		During: func() func(load.Result) {
			first = count()
			return func(res load.Result) {
				last = count()
				fmt.Fprintf(os.Stderr, "  %s: %d requests answered in %v; waiting for %d orders to be persisted\n",
					strategy, res.Requests, res.Elapsed.Round(time.Millisecond), res.Reserved)
			}
		},
	}, c.Flags)
	if err != nil {
		return comparison{}, err
	}
	if countErr != nil {
		return comparison{}, countErr
	}
	row := comparison{
		Strategy: strategy, Report: rep,
		AvgMs:      math.Round(float64(res.Mean)/float64(time.Microsecond)) / 1000,
		Statements: last - first,
	}
	if rep.Requests > 0 {
		row.StatementsPerGrab = math.Round(float64(row.Statements)/float64(rep.Requests)*1000) / 1000
	}
	return row, nil
}

// statementsMetric counts the statements a seckill sent to its database.
const statementsMetric = "seckill_db_statements_total"

// statements reads statementsMetric from the service's GET /metrics.
func statements(ctx context.Context, base string) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/metrics", nil)
	if err != nil {
		return 0, err
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, fmt.Errorf("read %s: %w", statementsMetric, err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("read %s: GET /metrics answered %d", statementsMetric, res.StatusCode)
	}
	lines := bufio.NewScanner(res.Body)
	for lines.Scan() {
		if v, ok := strings.CutPrefix(lines.Text(), statementsMetric+" "); ok {
			n, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return 0, fmt.Errorf("read %s: %q: %w", statementsMetric, v, err)
			}
			return int64(n), nil
		}
	}
	if err := lines.Err(); err != nil {
		return 0, fmt.Errorf("read %s: %w", statementsMetric, err)
	}
	return 0, fmt.Errorf("read %s: GET /metrics does not expose it (a seckill older than this lab?)", statementsMetric)
}

// verdict is the strongest verdict among the rows (see load.Report.Err), naming the
// strategy of each row that has it.
func verdict(rows []comparison) error {
	var strongest error
	var found []string
	for _, sentinel := range []error{load.ErrBroken, load.ErrNotServed, load.ErrUnverified} {
		for _, r := range rows {
			if err := r.Err(); errors.Is(err, sentinel) {
				strongest = sentinel
				found = append(found, r.Strategy+": "+strings.TrimPrefix(err.Error(), sentinel.Error()+": "))
			}
		}
		if strongest != nil {
			return fmt.Errorf("%w: %s", strongest, strings.Join(found, "; "))
		}
	}
	return nil
}

// mark is a row's verdict in the table.
func mark(r comparison) string {
	switch err := r.Err(); {
	case err == nil:
		return "ok"
	case errors.Is(err, load.ErrBroken):
		return "BROKEN"
	case errors.Is(err, load.ErrNotServed):
		return "NOT SERVED"
	default:
		return "UNVERIFIED"
	}
}

// writeComparison writes the rows as a table for people.
func writeComparison(w io.Writer, f load.Flags, rows []comparison) error {
	repeats := 0
	if len(rows) > 0 {
		repeats = max(rows[0].Requests-f.Users, 0)
	}
	soldOutTTL := os.Getenv("SECKILL_SOLD_OUT_TTL")
	if soldOutTTL == "" {
		soldOutTTL = "1s"
	}
	fmt.Fprintf(w, "stock strategies compared: %d users (%d twice), %d units, %d in flight, sold-out short cut %s\n",
		f.Users, repeats, f.Stock, f.Concurrency, soldOutTTL)
	fmt.Fprintf(w, "  %-9s %8s %8s %10s %9s %7s %8s %8s %9s %13s  %s\n",
		"strategy", "reserved", "oversold", "duplicates", "persisted", "other", "avg ms", "p99 ms", "req/s", "db stmts/grab", "verdict")
	for _, r := range rows {
		persisted := strconv.Itoa(r.OrdersPersisted)
		if r.Unverified != "" {
			persisted = "?"
		}
		fmt.Fprintf(w, "  %-9s %8d %8d %10d %9s %7d %8.2f %8.2f %9.0f %13.3f  %s\n",
			r.Strategy, r.Reserved, r.Oversold, r.Duplicates, persisted, r.Other,
			r.AvgMs, r.P99Ms, r.RPS, r.StatementsPerGrab, mark(r))
	}
	for _, r := range rows {
		for _, ex := range r.OtherExamples {
			fmt.Fprintf(w, "  %s, other answers, e.g.: %s\n", r.Strategy, ex)
		}
	}
	fmt.Fprintln(w, "  db stmts/grab: every statement on the service's database while the requests ran (grab path,")
	fmt.Fprintln(w, "  fulfillment worker, background jobs), BEGIN and COMMIT included, per request")
	var err error
	switch v := verdict(rows); {
	case v == nil:
		_, err = fmt.Fprintln(w, "all promises kept by every strategy: no oversell, no duplicate, no lost order")
	case errors.Is(v, load.ErrBroken):
		_, err = fmt.Fprintln(w, "PROMISE BROKEN: see the rows marked BROKEN")
	case errors.Is(v, load.ErrNotServed):
		_, err = fmt.Fprintln(w, "NOTHING SERVED: see the rows marked NOT SERVED")
	default:
		_, err = fmt.Fprintln(w, "COULD NOT VERIFY every strategy: see the rows marked UNVERIFIED")
	}
	return err
}
