package main

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/seckill/seckill/adapters/testenv"
	"github.com/seckill/seckill/cmd/internal/clitest"
)

func TestDemoSellsExactlyTheStockAndPersistsIt(t *testing.T) {
	prefix := "d" + testenv.Unique()
	cleanLabKeys(t, prefix)
	vouchers := map[any]int{}
	// Twice on one Redis with one key prefix, each on a fresh database, so both demos
	// sell a voucher 1: every demo's service has keys of its own, or the second would
	// find the first one's sale.
	for run := range 2 {
		env := append(os.Environ(),
			"SECKILL_REDIS_URL="+testenv.RedisURL(t),
			"SECKILL_DATABASE_URL="+testenv.PostgresURL(t),
			"SECKILL_KEY_PREFIX="+prefix,
		)
		stdout, stderr, status := lab(t, env, 2*time.Minute, "demo", "--users", "500", "--stock", "50", "--json")
		if status != 0 {
			t.Fatalf("run %d: demo exited %d\nstdout %s\nstderr %s", run, status, stdout, stderr)
		}
		m := clitest.SaleReport(t, stdout, stderr)
		clitest.WantCounts(t, m, map[string]float64{
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
	prefix := "d" + testenv.Unique()
	cleanLabKeys(t, prefix)
	env := append(os.Environ(),
		"SECKILL_REDIS_URL="+testenv.RedisURL(t),
		"SECKILL_DATABASE_URL="+testenv.PostgresURL(t),
		"SECKILL_KEY_PREFIX="+prefix,
	)
	stdout, stderr, status := lab(t, env, 2*time.Minute, "demo", "--users", "200", "--stock", "20", "--dup", "0.5", "--concurrency", "20")
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

// TestDemoWithNothingInstalled is the README's demo: the default flash sale, 5,000
// users for 100 units, against a seckill serve with nothing configured (an in-process
// Redis, a temporary SQLite file), with every promise kept and nothing left behind.
func TestDemoWithNothingInstalled(t *testing.T) {
	dir := t.TempDir()
	tmp := t.TempDir() // the demo's own database goes here, and must be gone after
	stdout, stderr, status := labIn(t, dir, clitest.WithoutSettings("TMPDIR="+tmp), 2*time.Minute, "demo", "--json")
	if status != 0 {
		t.Fatalf("demo exited %d\nstdout %s\nstderr %s", status, stdout, stderr)
	}
	m := clitest.SaleReport(t, stdout, stderr)
	clitest.WantCounts(t, m, map[string]float64{
		"requests": 5050, "reserved": 100, "orders_persisted": 100, "oversold": 0, "duplicates": 0, "other": 0,
	})
	if got, want := m["sold_out"].(float64)+m["already_purchased"].(float64), 4950.0; got != want {
		t.Fatalf("sold_out+already_purchased = %v, want %v", got, want)
	}
	for _, d := range []string{dir, tmp} {
		if left, _ := os.ReadDir(d); len(left) != 0 {
			t.Fatalf("the demo left %d files in %s (%s)", len(left), d, left[0].Name())
		}
	}
}
