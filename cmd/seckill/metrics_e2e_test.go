package main

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil/promlint"

	"github.com/seckill/seckill/adapters/testenv"
	"github.com/seckill/seckill/application"
	"github.com/seckill/seckill/domain"
)

// scrapeURL reads a Prometheus text exposition into series → value, after checking it
// with Prometheus' own linter (promlint, what `promtool check metrics` runs): names,
// units, help texts, counters' suffixes.
func scrapeURL(t *testing.T, url string) map[string]float64 {
	t.Helper()
	res, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %s", url, res.StatusCode, raw)
	}
	problems, err := promlint.New(bytes.NewReader(raw)).Lint()
	if err != nil {
		t.Fatalf("lint the metrics: %v", err)
	}
	for _, p := range problems {
		t.Errorf("promlint: %s: %s", p.Metric, p.Text)
	}
	out := make(map[string]float64)
	for _, line := range strings.Split(string(raw), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("metrics line %q: %v", line, err)
		}
		out[line[:i]] = v
	}
	return out
}

// The worker's side of the sale shows in the metrics of the running binary, on the
// listener SECKILL_METRICS_ADDR names: every family from the start, then the
// persisted reservations, the released units of a cancelled order, and a backlog
// back at zero once the worker has caught up.
func TestServeExposesTheWorkersMetrics(t *testing.T) {
	metricsAddr := freeAddr(t)
	in := startInstance(t, "SECKILL_METRICS_ADDR="+metricsAddr)
	url := "http://" + metricsAddr + "/metrics"

	if res, err := http.Get(in.base + "/metrics"); err != nil {
		t.Fatal(err)
	} else {
		_ = res.Body.Close()
		if res.StatusCode != http.StatusNotFound {
			t.Fatalf("GET /metrics on the API answered %d with SECKILL_METRICS_ADDR set, want 404", res.StatusCode)
		}
	}
	start := scrapeURL(t, url)
	want := []string{
		`seckill_reservations_persisted_total`, `seckill_reservations_failed_total`,
		`seckill_dead_letters_total`, `seckill_orders_expired_total`, `seckill_units_released_total`,
		`seckill_reconcile_unchecked_total`, `seckill_clock_offset_seconds`, `seckill_db_statements_total`,
		`seckill_fulfilment_lag_seconds`, `seckill_queue_pending`,
		`seckill_breaker_open{dependency="redis"}`, `seckill_breaker_open{dependency="postgres"}`,
		`seckill_grab_requests_total{outcome="reserved"}`,
		`seckill_redis_pool_connections`, `go_sql_open_connections{db_name="seckill"}`, `go_goroutines`,
		`seckill_webhook_backlog`, `seckill_webhook_deliveries_total{outcome="delivered"}`, `seckill_denied_users`,
		`seckill_waitlist_length`, `seckill_waitlist_handoffs_total`,
		`seckill_webhook_deliveries_total{outcome="failed"}`, `seckill_webhook_deliveries_total{outcome="given_up"}`,
		`seckill_queue_joins_total{when="early"}`, `seckill_queue_joins_total{when="late"}`, `seckill_queue_admitted_total`,
		`seckill_queue_passes_outstanding`, `seckill_queue_shuffle_seconds_count`,
	}
	for _, k := range application.DriftKinds {
		want = append(want, `seckill_reconcile_drift{kind="`+string(k)+`"}`)
	}
	for _, r := range application.RecoverReasons {
		want = append(want, `seckill_recoveries_total{outcome="ok",reason="`+string(r)+`"}`)
	}
	for _, series := range want {
		if _, ok := start[series]; !ok {
			t.Errorf("%s is not exposed at start-up", series)
		}
	}

	const stock = 5
	id := in.createVoucher(stock, 1)
	var first string
	for u := 1; u <= stock+3; u++ {
		status, body := in.call(http.MethodPost, "/api/v1/vouchers/"+id+"/grab", in.token(domain.UserID(100+u), false), nil)
		if u == 1 {
			if status != http.StatusAccepted {
				t.Fatalf("grab: %d %v", status, body)
			}
			first = body["order_id"].(string)
		}
	}
	var m map[string]float64
	testenv.Eventually(t, 30*time.Second, fmt.Sprintf("%d persisted, none pending", stock), func() (bool, string) {
		m = scrapeURL(t, url)
		return m[`seckill_reservations_persisted_total`] == stock && m[`seckill_queue_pending`] == 0,
			fmt.Sprintf("persisted %v, pending %v", m[`seckill_reservations_persisted_total`], m[`seckill_queue_pending`])
	})
	if got := m[`seckill_fulfilment_lag_seconds`]; got != 0 {
		t.Errorf("fulfillment lag = %v with nothing pending, want 0", got)
	}
	if got := m[`seckill_grab_requests_total{outcome="reserved"}`]; got != stock {
		t.Errorf("reserved = %v, want %d", got, stock)
	}
	// Persisting them took statements: at least a BEGIN, an INSERT and a COMMIT.
	if got, before := m[`seckill_db_statements_total`], start[`seckill_db_statements_total`]; got < before+3 {
		t.Errorf("database statements = %v after persisting %d orders, %v at start; want at least 3 more", got, stock, before)
	}
	if status, body := in.call(http.MethodPost, "/api/v1/orders/"+first+"/cancel", in.token(101, false), nil); status != http.StatusOK {
		t.Fatalf("cancel: %d %v", status, body)
	}
	if got := scrapeURL(t, url)[`seckill_units_released_total`]; got != 1 {
		t.Errorf("units released = %v after one cancellation, want 1", got)
	}
}
