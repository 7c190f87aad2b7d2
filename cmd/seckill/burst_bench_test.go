package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/labstack/echo/v4"
	"go.uber.org/zap"

	"github.com/seckill/seckill/adapters/httpapi"
	"github.com/seckill/seckill/adapters/testenv"
	"github.com/seckill/seckill/cmd/internal/burst"
	"github.com/seckill/seckill/cmd/internal/load"
	"github.com/seckill/seckill/domain"
)

// BenchmarkBurst fires the reference burst — 5,000 requests, each on its own
// connection, written at one instant — at a hello-world Echo server (the baseline) and
// at the whole service (serve's graph and defaults, real Redis and PostgreSQL), both in
// this process beside the client, in the same run. Each seckill burst is 4,950 users
// (50 of them twice) for a fresh voucher of 100 units. It reports the time from the
// first write to the last answer, and for seckill the grabs per Redis call.
func BenchmarkBurst(b *testing.B) {
	const requests = 5000
	b.Run("hello", func(b *testing.B) {
		e := echo.New()
		e.POST("/grab", func(c echo.Context) error {
			return c.JSON(http.StatusOK, map[string]string{"hello": "world"})
		})
		srv := httptest.NewServer(e)
		defer srv.Close()
		reqs := make([]burst.Request, requests)
		for i := range reqs {
			reqs[i] = burst.Request{Path: "/grab", Token: "x"}
		}
		fireBursts(b, srv.URL, func(int) []burst.Request { return reqs }, http.StatusOK)
	})
	b.Run("seckill", func(b *testing.B) {
		cfg, err := inProcessConfig(Common{
			RedisURL: testenv.RedisURL(b), DatabaseURL: testenv.PostgresURL(b),
			StrategyConfig: StrategyConfig{StockStrategy: string(StrategyLua)},
			KeyPrefix:      "bench" + testenv.Unique(), KeyGrace: time.Hour, ReconcileGrace: 30 * time.Second,
			LogLevel: "warn", LogFormat: "json",
		})
		if err != nil {
			b.Fatal(err)
		}
		if err := migrateUp(context.Background(), cfg.DatabaseURL); err != nil {
			b.Fatal(err)
		}
		svc, err := startInProcess(context.Background(), cfg, zap.NewNop())
		if err != nil {
			b.Fatal(err)
		}
		defer func() { _ = svc.stop() }()
		tokens := httpapi.NewTokens([]byte(cfg.JWTSecret))
		mint := func(user domain.UserID, admin bool) string {
			tok, err := tokens.Mint(user, admin, time.Hour)
			if err != nil {
				b.Fatal(err)
			}
			return tok
		}
		admin := mint(1, true)
		users := make([]string, 4950)
		for i := range users {
			users[i] = mint(domain.UserID(1000+i), false)
		}
		before := svc.app.Stock.BatchSizes()
		fireBursts(b, svc.base, func(int) []burst.Request {
			id := createBenchVoucher(b, svc.base, admin)
			reqs := make([]burst.Request, 0, requests)
			for _, tok := range users {
				reqs = append(reqs, burst.Request{Path: "/api/v1/vouchers/" + id + "/grab", Token: tok})
			}
			for _, tok := range users[:requests-len(users)] {
				reqs = append(reqs, burst.Request{Path: "/api/v1/vouchers/" + id + "/grab", Token: tok})
			}
			return reqs
		}, http.StatusAccepted, http.StatusConflict)
		reportBatches(b, before, svc.app.Stock.BatchSizes())
	})
}

// fireBursts fires b.N bursts at base, each made by reqs just before it is fired, and
// reports the mean time a burst took to clear. Every answer must have one of want.
func fireBursts(b *testing.B, base string, reqs func(i int) []burst.Request, want ...int) {
	var total time.Duration
	for i := range b.N {
		rs := reqs(i)
		results, took, err := burst.Fire(context.Background(), base, rs, burst.Options{})
		if err != nil {
			b.Fatal(err)
		}
		counts := map[int]int{}
		for j, r := range results {
			if r.Err != nil {
				b.Fatalf("request %d: %v", j, r.Err)
			}
			counts[r.Status]++
		}
		for status := range counts {
			ok := false
			for _, w := range want {
				ok = ok || status == w
			}
			if !ok {
				b.Fatalf("burst %d: answers %v, want only %v", i, counts, want)
			}
		}
		total += took
	}
	b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "ms/burst")
}

// reportBatches reports the reserve calls made between two readings of
// Stock.BatchSizes: grabs per call, and the distribution of batch sizes.
func reportBatches(b *testing.B, before, after []int64) {
	var calls, grabs int64
	dist := ""
	for n := 1; n < len(after); n++ {
		c := after[n] - before[n]
		calls += c
		grabs += int64(n) * c
		if c > 0 {
			dist += fmt.Sprintf(" %d×%d", c, n)
		}
	}
	if calls > 0 {
		b.ReportMetric(float64(grabs)/float64(calls), "grabs/call")
		b.Logf("%d reserve calls for %d grabs; calls × grabs per call:%s", calls, grabs, dist)
	}
}

// createBenchVoucher creates a voucher of 100 units on sale now and returns its id.
func createBenchVoucher(b *testing.B, base, admin string) string {
	now := time.Now().UTC()
	v, err := load.CreateVoucher(context.Background(), base, admin, load.NewVoucher{
		Title: "burst", Stock: 100, BeginsAt: now.Add(-time.Minute), EndsAt: now.Add(time.Hour), PerUserLimit: 1,
	})
	if err != nil {
		b.Fatal(err)
	}
	return v.ID
}
