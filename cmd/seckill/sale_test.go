package main

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/seckill/seckill/adapters/testenv"
	"github.com/seckill/seckill/cmd/internal/clitest"
)

// runSplit runs the binary and returns its stdout, its stderr and its exit status.
func runSplit(t *testing.T, env []string, timeout time.Duration, args ...string) (string, string, int) {
	t.Helper()
	return runSplitIn(t, "", env, timeout, args...)
}

// runSplitIn is runSplit in the working directory dir (empty: the test's).
func runSplitIn(t *testing.T, dir string, env []string, timeout time.Duration, args ...string) (string, string, int) {
	t.Helper()
	return clitest.Run(t, seckillBinary(t), dir, env, timeout, args...)
}

// saleReport decodes the one JSON object of demo --json.
func saleReport(t *testing.T, stdout, stderr string) map[string]any {
	t.Helper()
	return clitest.SaleReport(t, stdout, stderr)
}

// wantCounts compares the report's counts with want.
func wantCounts(t *testing.T, m map[string]any, want map[string]float64) {
	t.Helper()
	clitest.WantCounts(t, m, want)
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

func TestDemoRejectsBadValuesInOneLine(t *testing.T) {
	env := append(os.Environ(), "SECKILL_REDIS_URL=", "SECKILL_DATABASE_URL=")
	for _, c := range []struct {
		args []string
		name string // what the line must name
	}{
		{[]string{"demo", "--users", "0"}, "--users"},
		{[]string{"demo", "--stock=-1"}, "--stock"},
		{[]string{"demo", "--dup", "2"}, "--dup"},
		{[]string{"demo", "--concurrency", "0"}, "--concurrency"},
		{[]string{"demo", "--timeout", "0s"}, "--timeout"},
		{[]string{"demo", "--database-url", "mysql://127.0.0.1/seckill"}, "SECKILL_DATABASE_URL"},
		{[]string{"demo", "--database-url", "sqlite:"}, "SECKILL_DATABASE_URL"},
		// The lab's commands are not the service's.
		{[]string{"demo", "--compare"}, "--compare"},
		{[]string{"loadtest", "--url", "http://127.0.0.1:1"}, "loadtest"},
		{[]string{"seed"}, "seed"},
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
}
