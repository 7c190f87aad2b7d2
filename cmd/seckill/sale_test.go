package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/seckill/seckill/adapters/testenv"
)

// runSplit runs the binary and returns its stdout, its stderr and its exit status.
func runSplit(t *testing.T, env []string, timeout time.Duration, args ...string) (string, string, int) {
	t.Helper()
	return runSplitIn(t, "", env, timeout, args...)
}

// runSplitIn is runSplit in the working directory dir (empty: the test's).
func runSplitIn(t *testing.T, dir string, env []string, timeout time.Duration, args ...string) (string, string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, seckillBinary(t), args...)
	cmd.Env = env
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("seckill %s did not finish within %v:\nstdout %s\nstderr %s", strings.Join(args, " "), timeout, &stdout, &stderr)
	}
	var exit *exec.ExitError
	switch {
	case err == nil:
		return stdout.String(), stderr.String(), 0
	case errors.As(err, &exit):
		return stdout.String(), stderr.String(), exit.ExitCode()
	default:
		t.Fatalf("run seckill %s: %v", strings.Join(args, " "), err)
		return "", "", 0
	}
}

// saleReport decodes the one JSON object of demo or loadtest --json.
func saleReport(t *testing.T, stdout, stderr string) map[string]any {
	t.Helper()
	if got, want := strings.Count(stdout, "\n"), 1; got != want {
		t.Fatalf("stdout has %d lines, want %d:\n%s\nstderr:\n%s", got, want, stdout, stderr)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(stdout), &m); err != nil {
		t.Fatalf("stdout is not JSON: %v\n%s", err, stdout)
	}
	for _, k := range []string{"requests", "reserved", "sold_out", "already_purchased", "other", "oversold",
		"duplicates", "orders_persisted", "p50_ms", "p99_ms", "max_ms", "rps", "persist_ms"} {
		if _, ok := m[k].(float64); !ok {
			t.Fatalf("report lacks the number %q: %s", k, stdout)
		}
	}
	return m
}

// wantCounts compares the report's counts with want.
func wantCounts(t *testing.T, m map[string]any, want map[string]float64) {
	t.Helper()
	for k, v := range want {
		if got := m[k]; got != v {
			t.Fatalf("%s = %v, want %v (report %v)", k, got, v, m)
		}
	}
}

// cleanDemoKeys removes the keys of every demo run with prefix.
func cleanDemoKeys(t *testing.T, prefix string) {
	rdb := testenv.Redis(t)
	t.Cleanup(func() {
		ctx := context.Background()
		iter := rdb.Scan(ctx, 0, prefix+"-demo-*", 1000).Iterator()
		for iter.Next(ctx) {
			rdb.Unlink(ctx, iter.Val())
		}
	})
}

func TestDemoSellsExactlyTheStockAndPersistsIt(t *testing.T) {
	seckillBinary(t)
	prefix := "d" + testenv.Unique()
	cleanDemoKeys(t, prefix)
	vouchers := map[any]int{}
	// Twice on one Redis with one key prefix, each on a fresh database, so both demos
	// sell a voucher 1: every demo has keys of its own, or the second would find the
	// first one's sale.
	for run := range 2 {
		env := append(os.Environ(),
			"SECKILL_REDIS_URL="+testenv.RedisURL(t),
			"SECKILL_DATABASE_URL="+testenv.PostgresURL(t),
			"SECKILL_KEY_PREFIX="+prefix,
		)
		stdout, stderr, status := runSplit(t, env, 2*time.Minute, "demo", "--users", "500", "--stock", "50", "--json")
		if status != 0 {
			t.Fatalf("run %d: demo exited %d\nstdout %s\nstderr %s", run, status, stdout, stderr)
		}
		m := saleReport(t, stdout, stderr)
		wantCounts(t, m, map[string]float64{
			"requests": 505, "reserved": 50, "orders_persisted": 50, "oversold": 0, "duplicates": 0, "other": 0,
		})
		if got, want := m["sold_out"].(float64)+m["already_purchased"].(float64), 455.0; got != want {
			t.Fatalf("sold_out+already_purchased = %v, want %v", got, want)
		}
		if got, want := m["broken"], false; got != want {
			t.Fatalf("broken = %v, want %v", got, want)
		}
		if m["p50_ms"].(float64) <= 0 || m["max_ms"].(float64) < m["p99_ms"].(float64) || m["rps"].(float64) <= 0 {
			t.Fatalf("latencies: %s", stdout)
		}
		vouchers[m["voucher_id"]]++
	}
	if got, want := vouchers["1"], 2; got != want {
		t.Fatalf("demos that sold voucher 1 = %d, want %d (%v)", got, want, vouchers)
	}
}

func TestDemoPrintsATable(t *testing.T) {
	seckillBinary(t)
	prefix := "d" + testenv.Unique()
	cleanDemoKeys(t, prefix)
	env := append(os.Environ(),
		"SECKILL_REDIS_URL="+testenv.RedisURL(t),
		"SECKILL_DATABASE_URL="+testenv.PostgresURL(t),
		"SECKILL_KEY_PREFIX="+prefix,
	)
	stdout, stderr, status := runSplit(t, env, 2*time.Minute, "demo", "--users", "200", "--stock", "20", "--dup", "0.5", "--concurrency", "20")
	if status != 0 {
		t.Fatalf("demo exited %d\nstdout %s\nstderr %s", status, stdout, stderr)
	}
	for _, line := range []string{
		"  requests                      300\n",
		"  reserved                       20\n",
		"  oversold                        0  ok\n",
		"  duplicate buyers                0  ok\n",
		"  orders persisted               20  ok\n",
		"all promises kept",
	} {
		if !strings.Contains(stdout, line) {
			t.Fatalf("table lacks %q:\n%s", line, stdout)
		}
	}
}

func TestLoadtestAgainstARunningService(t *testing.T) {
	in := startInstance(t)
	env := append(os.Environ(), "SECKILL_JWT_SECRET="+e2eSecret)
	stdout, stderr, status := runSplit(t, env, 2*time.Minute, "loadtest", "--url", in.base,
		"--users", "300", "--stock", "30", "--dup", "0.1", "--concurrency", "50", "--json")
	if status != 0 {
		t.Fatalf("loadtest exited %d\nstdout %s\nstderr %s\nserve logs %s", status, stdout, stderr, in.logs)
	}
	m := saleReport(t, stdout, stderr)
	wantCounts(t, m, map[string]float64{
		"requests": 330, "reserved": 30, "orders_persisted": 30, "oversold": 0, "duplicates": 0, "other": 0, "stock": 30,
	})
	id := m["voucher_id"].(string)
	if status, s := in.call(http.MethodGet, "/api/v1/vouchers/"+id+"/stats", in.token(1, true), nil); status != http.StatusOK || s["awaiting_payment"] != 30.0 || s["remaining"] != 0.0 {
		t.Fatalf("stats after the loadtest: %d %v", status, s)
	}

	// Again on the same, sold-out voucher: nothing more to sell, nothing broken.
	stdout, stderr, status = runSplit(t, env, time.Minute, "loadtest", "--url", in.base+"/", "--voucher", id,
		"--users", "100", "--concurrency", "10", "--json")
	if status != 0 {
		t.Fatalf("loadtest --voucher exited %d\nstdout %s\nstderr %s", status, stdout, stderr)
	}
	wantCounts(t, saleReport(t, stdout, stderr), map[string]float64{
		"requests": 101, "reserved": 0, "orders_persisted": 0, "oversold": 0, "stock": 0, "other": 0,
	})

	// An existing voucher with units left: they are what is on sale.
	fresh := in.createVoucher(15, 1)
	stdout, stderr, status = runSplit(t, env, time.Minute, "loadtest", "--url", in.base, "--voucher", fresh,
		"--users", "40", "--dup", "0", "--concurrency", "8")
	if status != 0 {
		t.Fatalf("loadtest --voucher exited %d\nstdout %s\nstderr %s", status, stdout, stderr)
	}
	if !strings.Contains(stdout, "  reserved                       15\n") || !strings.Contains(stdout, "all promises kept") {
		t.Fatalf("table:\n%s", stdout)
	}

	// The wrong secret is refused by the service: one line, exit 1.
	stdout, stderr, status = runSplit(t, append(os.Environ(), "SECKILL_JWT_SECRET=not-the-service-secret"), time.Minute,
		"loadtest", "--url", in.base, "--users", "10")
	if status != 1 || !strings.Contains(stderr, "401 unauthorized") || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
		t.Fatalf("wrong secret: exit %d\nstdout %s\nstderr %s", status, stdout, stderr)
	}
}

func TestLoadtestRejectsBadValuesInOneLine(t *testing.T) {
	env := append(os.Environ(), "SECKILL_JWT_SECRET="+e2eSecret, "SECKILL_REDIS_URL=", "SECKILL_DATABASE_URL=")
	url := "http://127.0.0.1:1"
	for _, c := range []struct {
		args []string
		name string // what the line must name
	}{
		{[]string{"loadtest", "--url", url, "--users", "0"}, "--users"},
		{[]string{"loadtest", "--url", url, "--stock=-1"}, "--stock"},
		{[]string{"loadtest", "--url", url, "--stock", "-1"}, "--stock"},
		{[]string{"loadtest", "--url", url, "--dup", "2"}, "--dup"},
		{[]string{"loadtest", "--url", url, "--dup=-0.5"}, "--dup"},
		{[]string{"loadtest", "--url", url, "--concurrency", "0"}, "--concurrency"},
		{[]string{"loadtest", "--url", url, "--timeout", "0s"}, "--timeout"},
		{[]string{"loadtest", "--url", url, "--voucher", "abc"}, "--voucher"},
		{[]string{"loadtest", "--url", "127.0.0.1:8080"}, "--url"},
		{[]string{"loadtest"}, "--url"},
		{[]string{"demo", "--users", "0"}, "--users"},
		{[]string{"demo", "--stock=-1"}, "--stock"},
		{[]string{"demo", "--dup", "2"}, "--dup"},
		{[]string{"demo", "--concurrency", "0"}, "--concurrency"},
		{[]string{"demo", "--database-url", "mysql://127.0.0.1/seckill"}, "SECKILL_DATABASE_URL"},
		{[]string{"demo", "--database-url", "sqlite:"}, "SECKILL_DATABASE_URL"},
	} {
		stdout, stderr, status := runSplit(t, env, 30*time.Second, c.args...)
		out := stdout + stderr
		if status != 2 {
			t.Fatalf("%v: exit %d, want 2: %q", c.args, status, out)
		}
		if lines := strings.Split(strings.TrimSpace(out), "\n"); len(lines) != 1 || !strings.Contains(out, c.name) {
			t.Fatalf("%v: want one line naming %s, got %q", c.args, c.name, out)
		}
	}
	stdout, stderr, status := runSplit(t, append(os.Environ(), "SECKILL_JWT_SECRET="), 30*time.Second, "loadtest", "--url", url)
	if out := stdout + stderr; status != 2 || !strings.Contains(out, "SECKILL_JWT_SECRET") || strings.Count(strings.TrimSpace(out), "\n") != 0 {
		t.Fatalf("no secret: exit %d, %q", status, out)
	}
}

func TestLoadtestFailsFastOnAnUnreachableURL(t *testing.T) {
	env := append(os.Environ(), "SECKILL_JWT_SECRET="+e2eSecret)
	start := time.Now()
	stdout, stderr, status := runSplit(t, env, 2*time.Minute, "loadtest", "--url", "http://127.0.0.1:1")
	// Generous for a busy machine: what it guards against is a wait for the run's
	// whole timeout (minutes), not a slow start.
	if took := time.Since(start); took > 30*time.Second {
		t.Fatalf("took %v", took)
	}
	out := stdout + stderr
	if status != 1 {
		t.Fatalf("exit %d, want 1: %q", status, out)
	}
	if lines := strings.Split(strings.TrimSpace(out), "\n"); len(lines) != 1 || !strings.Contains(out, "127.0.0.1:1") {
		t.Fatalf("want one line naming the URL, got %q", out)
	}
}

// brokenSeckill answers every grab with a new order, oversold and twice to a
// repeat: a service that breaks the promises, for the exit status of loadtest. It
// stands in for seckill only in this test of the load tool.
type brokenSeckill struct {
	mu       sync.Mutex
	reserved int
}

func (b *brokenSeckill) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case r.URL.Path == "/healthz":
		w.WriteHeader(http.StatusOK)
	case r.Method == http.MethodPost && r.URL.Path == "/api/v1/vouchers":
		w.WriteHeader(http.StatusCreated)
		fmt.Fprint(w, `{"id":"9","title":"x","stock":5,"remaining":5,"per_user_limit":1}`)
	case r.Method == http.MethodPost && r.URL.Path == "/api/v1/vouchers/9/grab":
		b.reserved++
		w.WriteHeader(http.StatusAccepted)
		fmt.Fprintf(w, `{"order_id":"o%d","voucher_id":"9","quantity":1,"status":"queued"}`, b.reserved)
	case r.Method == http.MethodGet && r.URL.Path == "/api/v1/vouchers/9/stats":
		fmt.Fprintf(w, `{"stock":5,"awaiting_payment":%d}`, b.reserved)
	default:
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprint(w, `{"error":{"code":"not_found","message":"not found"}}`)
	}
}

func TestLoadtestExitsOneWhenAPromiseIsBroken(t *testing.T) {
	srv := httptest.NewServer(&brokenSeckill{})
	defer srv.Close()
	env := append(os.Environ(), "SECKILL_JWT_SECRET="+e2eSecret)
	stdout, stderr, status := runSplit(t, env, time.Minute, "loadtest", "--url", srv.URL,
		"--users", "20", "--stock", "5", "--dup", "0.5", "--concurrency", "4", "--json")
	if status != 1 {
		t.Fatalf("exit %d, want 1\nstdout %s\nstderr %s", status, stdout, stderr)
	}
	wantCounts(t, saleReport(t, stdout, stderr), map[string]float64{
		"requests": 30, "reserved": 30, "oversold": 25, "duplicates": 10, "orders_persisted": 30,
	})
	if !strings.Contains(stderr, "a promise was broken: oversold: 30 reserved and 30 orders persisted for a stock of 5; 10 users hold more than one order") {
		t.Fatalf("stderr %q", stderr)
	}
}
