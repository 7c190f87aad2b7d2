package main

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
	"golang.org/x/sync/errgroup"
)

// Each role runs its own jobs: the API's the deny list and the restock signal, the
// worker's the fulfillment worker and the sweeps, both the warm-up and the heal; the
// sale clock is measured only against a Redis server, not the in-process one.
func TestJobsOfEachRole(t *testing.T) {
	t.Parallel()
	names := func(roles, redisURL string) map[string]bool {
		cfg := Config{Roles: roles}
		cfg.RedisURL, cfg.ReconcileInterval, cfg.WarmInterval, cfg.TrimInterval = redisURL, time.Minute, time.Minute, time.Second
		got := map[string]bool{}
		for _, j := range serveJobs(&app{}, cfg, zap.NewNop(), nil) {
			if got[j.name] {
				t.Errorf("two jobs named %q", j.name)
			}
			if cfg.runs(j.role) {
				got[j.name] = true
			}
		}
		return got
	}
	api, worker := names("api", "redis://x:6379"), names("worker", "redis://x:6379")
	for _, n := range []string{"warm vouchers", "heal after redis restarts", "deny list", "restock signal", "measure the sale clock"} {
		if !api[n] {
			t.Errorf("an api does not run %q", n)
		}
	}
	for _, n := range []string{"warm vouchers", "fulfillment worker", "expire unpaid orders", "reconcile", "waiting rooms", "run draws"} {
		if !worker[n] {
			t.Errorf("a worker does not run %q", n)
		}
	}
	if api["fulfillment worker"] || worker["deny list"] {
		t.Errorf("a role runs another's jobs: api %v, worker %v", api, worker)
	}
	if names("api,worker", "")["measure the sale clock"] {
		t.Error("the sale clock is measured against the in-process Redis, whose time is this host's")
	}
}

// A periodic job's failure is logged, under its name, and the job runs again; a fatal
// job's failure stops the others; none is logged as serve stops.
func TestJobsFailures(t *testing.T) {
	t.Parallel()
	core, logs := observer.New(zap.InfoLevel)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	g, gctx := errgroup.WithContext(ctx)
	runs := make(chan struct{}, 100)
	boom := errors.New("boom")
	runJobs(gctx, g, []job{
		{name: "flaky", every: time.Millisecond, run: func(context.Context) error { runs <- struct{}{}; return boom }},
		{name: "stops", fatal: true, run: func(context.Context) error {
			for range 3 {
				<-runs
			}
			return boom
		}},
		{name: "waits", run: func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() }},
	}, Config{Roles: "api"}, zap.New(core))
	if err := g.Wait(); !errors.Is(err, boom) {
		t.Fatalf("serve's jobs ended with %v, want the fatal job's failure", err)
	}
	if n := logs.FilterMessage("flaky").Len(); n < 2 {
		t.Errorf("the periodic job's failure was logged %d times, want at each run: %v", n, logs.All())
	}
	if n := logs.FilterMessage("waits").Len(); n != 0 {
		t.Errorf("a job stopped by serve's end was logged as failing: %v", logs.All())
	}
}
