package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/seckill/seckill/adapters/testenv"
	"github.com/seckill/seckill/cmd/internal/clitest"
	"github.com/seckill/seckill/cmd/internal/load"
)

const e2eSecret = "e2e-secret-0123456789abcdef"

// The lab is tested as an operator runs it: both commands built, each run a process of
// its own, the lab beside the service's binary.

func builtSeckill(t *testing.T) string {
	t.Helper()
	return clitest.Build(t, "github.com/seckill/seckill/cmd/seckill")
}

// lab runs seckill-lab (built beside seckill) and returns its stdout, its stderr and
// its exit status.
func lab(t *testing.T, env []string, timeout time.Duration, args ...string) (string, string, int) {
	t.Helper()
	return labIn(t, "", env, timeout, args...)
}

// labIn is lab in the working directory dir (empty: the test's).
func labIn(t *testing.T, dir string, env []string, timeout time.Duration, args ...string) (string, string, int) {
	t.Helper()
	builtSeckill(t)
	return clitest.Run(t, clitest.Build(t, "github.com/seckill/seckill/cmd/seckill-lab"), dir, env, timeout, args...)
}

// instance is one `seckill serve` on the throwaway Redis and PostgreSQL.
type instance struct {
	t     *testing.T
	base  string
	cmd   *exec.Cmd
	logs  *logBuffer
	admin string
}

// startService migrates a fresh database and starts serve on a free port with the
// tests' secret and a key prefix of its own; it is stopped when the test ends.
func startService(t *testing.T) *instance {
	t.Helper()
	bin := builtSeckill(t)
	rdb := testenv.Redis(t)
	prefix := "l" + testenv.Unique()
	t.Cleanup(func() {
		if err := testenv.DeleteKeys(context.Background(), rdb, prefix+":*"); err != nil {
			t.Errorf("delete the keys of %s: %v", prefix, err)
		}
	})
	addr, err := freeAddr()
	if err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(),
		"SECKILL_HTTP_ADDR="+addr, "SECKILL_REDIS_URL="+testenv.RedisURL(t),
		"SECKILL_DATABASE_URL="+testenv.PostgresURL(t), "SECKILL_JWT_SECRET="+e2eSecret,
		"SECKILL_KEY_PREFIX="+prefix, "SECKILL_LOG_LEVEL=warn", "SECKILL_USER_RATE=0", "SECKILL_IP_RATE=0",
	)
	migrate := exec.Command(bin, "migrate", "up")
	migrate.Env = env
	if out, err := migrate.CombinedOutput(); err != nil {
		t.Fatalf("migrate up: %v\n%s", err, out)
	}
	admin, err := load.Minter(e2eSecret)(1, true)
	if err != nil {
		t.Fatal(err)
	}
	s := &instance{t: t, base: "http://" + addr, logs: &logBuffer{}, admin: admin}
	s.cmd = exec.Command(bin, "serve")
	s.cmd.Env = env
	s.cmd.Stdout, s.cmd.Stderr = s.logs, s.logs
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.stop)
	testenv.Eventually(t, 30*time.Second, "serve ready", func() (bool, string) {
		res, err := http.Get(s.base + "/readyz")
		if err != nil {
			return false, err.Error()
		}
		_ = res.Body.Close()
		return res.StatusCode == http.StatusOK, fmt.Sprintf("readyz %d; logs:\n%s", res.StatusCode, s.logs)
	})
	return s
}

// stop sends SIGTERM and waits for a clean exit; a process already gone is left be.
func (s *instance) stop() {
	if s.cmd.ProcessState != nil {
		return
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- s.cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			s.t.Errorf("serve exited with %v:\n%s", err, s.logs)
		}
	case <-time.After(30 * time.Second):
		_ = s.cmd.Process.Kill()
		s.t.Errorf("serve did not stop on SIGTERM:\n%s", s.logs)
	}
}

// voucher creates a voucher of stock units on sale now.
func (s *instance) voucher(stock int) string {
	s.t.Helper()
	now := time.Now().UTC()
	v, err := load.CreateVoucher(context.Background(), s.base, s.admin, load.NewVoucher{
		Title: "lab", Stock: stock, BeginsAt: now.Add(-time.Minute), EndsAt: now.Add(time.Hour), PerUserLimit: 1,
	})
	if err != nil {
		s.t.Fatal(err)
	}
	return v.ID
}

func (s *instance) stats(voucher string) load.Stats {
	s.t.Helper()
	st, err := load.GetStats(context.Background(), s.base, voucher, s.admin)
	if err != nil {
		s.t.Fatal(err)
	}
	return st
}

func secretEnv() []string { return append(os.Environ(), "SECKILL_JWT_SECRET="+e2eSecret) }

func TestLoadtestAgainstARunningService(t *testing.T) {
	s := startService(t)
	stdout, stderr, status := lab(t, secretEnv(), 2*time.Minute, "loadtest", "--url", s.base,
		"--users", "300", "--stock", "30", "--dup", "0.1", "--concurrency", "50", "--json")
	if status != 0 {
		t.Fatalf("loadtest exited %d\nstdout %s\nstderr %s\nserve logs %s", status, stdout, stderr, s.logs)
	}
	m := clitest.SaleReport(t, stdout, stderr)
	clitest.WantCounts(t, m, map[string]float64{
		"requests": 330, "reserved": 30, "orders_persisted": 30, "oversold": 0, "duplicates": 0, "other": 0, "stock": 30,
	})
	if m["verdict"] != "kept" || m["broken"] != false {
		t.Fatalf("verdict %v, broken %v", m["verdict"], m["broken"])
	}
	id := m["voucher_id"].(string)
	if st := s.stats(id); st.AwaitingPayment != 30 || st.Remaining != 0 {
		t.Fatalf("stats after the loadtest: %+v", st)
	}

	// Again on the same, sold-out voucher: nothing more to sell, nothing broken.
	stdout, stderr, status = lab(t, secretEnv(), time.Minute, "loadtest", "--url", s.base+"/", "--voucher", id,
		"--users", "100", "--concurrency", "10", "--json")
	if status != 0 {
		t.Fatalf("loadtest --voucher exited %d\nstdout %s\nstderr %s", status, stdout, stderr)
	}
	clitest.WantCounts(t, clitest.SaleReport(t, stdout, stderr), map[string]float64{
		"requests": 101, "reserved": 0, "orders_persisted": 0, "oversold": 0, "stock": 0, "other": 0,
	})

	// An existing voucher with units left: they are what is on sale.
	fresh := s.voucher(15)
	stdout, stderr, status = lab(t, secretEnv(), time.Minute, "loadtest", "--url", s.base, "--voucher", fresh,
		"--users", "40", "--dup", "0", "--concurrency", "8")
	if status != 0 {
		t.Fatalf("loadtest --voucher exited %d\nstdout %s\nstderr %s", status, stdout, stderr)
	}
	if !strings.Contains(stdout, "  reserved                       15\n") || !strings.Contains(stdout, "all promises kept") {
		t.Fatalf("table:\n%s", stdout)
	}

	// The wrong secret is refused by the service: one line, exit 1.
	stdout, stderr, status = lab(t, append(os.Environ(), "SECKILL_JWT_SECRET=not-the-service-secret"), time.Minute,
		"loadtest", "--url", s.base, "--users", "10")
	if status != 1 || !strings.Contains(stderr, "401 unauthorized") || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
		t.Fatalf("wrong secret: exit %d\nstdout %s\nstderr %s", status, stdout, stderr)
	}
}

// Two loads selling one voucher at once (two instances behind a balancer, say): each
// sees the other's orders persisted too, more than its own 202s. Neither breaks a
// promise, and neither report says otherwise anywhere.
func TestLoadtestBesideAnotherLoad(t *testing.T) {
	s := startService(t)
	id := s.voucher(100_000)
	type run struct {
		stdout, stderr string
		status         int
	}
	runs := make([]run, 2)
	var wg sync.WaitGroup
	for i := range runs {
		wg.Go(func() {
			stdout, stderr, status := lab(t, secretEnv(), 3*time.Minute, "loadtest", "--url", s.base, "--voucher", id,
				"--users", "5000", "--dup", "0", "--concurrency", "20", "--seed", fmt.Sprint(i+1))
			runs[i] = run{stdout, stderr, status}
		})
	}
	wg.Wait()
	reserved, noted := 0, false
	for i, r := range runs {
		noted = noted || strings.Contains(r.stdout, "orders more than this run's 202s")
		if r.status != 0 || strings.Contains(r.stdout, "BROKEN") || !strings.Contains(r.stdout, "all promises kept") {
			t.Fatalf("load %d: exit %d\nstdout %s\nstderr %s", i, r.status, r.stdout, r.stderr)
		}
		var n int
		for _, line := range strings.Split(r.stdout, "\n") {
			if v, ok := strings.CutPrefix(line, "  reserved"); ok {
				_, _ = fmt.Sscan(strings.TrimSpace(v), &n)
			}
		}
		reserved += n
	}
	// The same 5,000 users pressed in both: each got one order, from one load or the
	// other.
	if got, want := reserved, 5000; got != want {
		t.Fatalf("reserved by both = %d, want %d\n%s\n%s", got, want, runs[0].stdout, runs[1].stdout)
	}
	if st := s.stats(id); st.Persisted() != 5000 {
		t.Fatalf("stats: %+v", st)
	}
	// The loads overlapped: one at least counted the other's orders with its own.
	if !noted {
		t.Fatalf("neither load saw the other's orders:\n%s\n%s", runs[0].stdout, runs[1].stdout)
	}
}

// A service stopped in the middle of a sale cannot show what it persisted: the load
// test says it could not verify and exits 3 — not 1, with every order called lost, as
// it once did.
func TestLoadtestCannotVerifyAServiceStoppedMidSale(t *testing.T) {
	s := startService(t)
	id := s.voucher(100_000)
	type result struct {
		stdout, stderr string
		status         int
	}
	done := make(chan result, 1)
	go func() {
		stdout, stderr, status := lab(t, secretEnv(), 5*time.Minute, "loadtest", "--url", s.base, "--voucher", id,
			"--users", "100000", "--dup", "0", "--concurrency", "20", "--timeout", "2s")
		done <- result{stdout, stderr, status}
	}()
	testenv.Eventually(t, 2*time.Minute, "the sale under way", func() (bool, string) {
		st, err := load.GetStats(context.Background(), s.base, id, s.admin)
		return err == nil && st.Persisted() > 0, fmt.Sprintf("%+v %v", st, err)
	})
	_ = s.cmd.Process.Kill()
	_ = s.cmd.Wait()
	r := <-done
	if r.status != 3 {
		t.Fatalf("exit %d, want 3\nstdout %s\nstderr %s", r.status, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stdout, "  orders persisted                ?  UNVERIFIED\n") || !strings.Contains(r.stdout, "\nCOULD NOT VERIFY") ||
		strings.Contains(r.stdout, "BROKEN") {
		t.Fatalf("table:\n%s", r.stdout)
	}
	if lines := strings.Split(strings.TrimSpace(r.stderr), "\n"); !strings.HasPrefix(lines[len(lines)-1], "seckill-lab: could not verify that every reservation became an order: stats not readable") {
		t.Fatalf("stderr %q", r.stderr)
	}
}

// A service that answers its health check and its stats but refuses every grab's
// connection served nothing: exit 1 — it once said all promises were kept.
func TestLoadtestFailsWhenNothingWasServed(t *testing.T) {
	// The service's API without its grab route: every grab is a connection closed
	// unanswered.
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(http.ResponseWriter, *http.Request) {})
	mux.HandleFunc("POST /api/v1/vouchers", func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusCreated)
		fmt.Fprint(w, `{"id":"9","title":"x","stock":5,"remaining":5,"per_user_limit":1}`)
	})
	mux.HandleFunc("GET /api/v1/vouchers/9/stats", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, `{"stock":5,"remaining":5}`)
	})
	mux.HandleFunc("POST /api/v1/vouchers/9/grab", func(w http.ResponseWriter, _ *http.Request) {
		if conn, _, err := w.(http.Hijacker).Hijack(); err == nil {
			_ = conn.Close()
		}
	})
	srv := newServer(t, mux)
	stdout, stderr, status := lab(t, secretEnv(), time.Minute, "loadtest", "--url", srv, "--users", "20", "--concurrency", "4", "--json")
	if status != 1 {
		t.Fatalf("exit %d, want 1\nstdout %s\nstderr %s", status, stdout, stderr)
	}
	m := clitest.SaleReport(t, stdout, stderr)
	clitest.WantCounts(t, m, map[string]float64{"requests": 20, "other": 20, "reserved": 0})
	if m["verdict"] != "not_served" {
		t.Fatalf("verdict %v", m["verdict"])
	}
	if !strings.Contains(stderr, "seckill-lab: nothing was served: none of the 20 requests got a sale's answer") {
		t.Fatalf("stderr %q", stderr)
	}
}

// newServer serves h on a loopback port for the test and returns its base URL.
func newServer(t *testing.T, h http.Handler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return "http://" + ln.Addr().String()
}

func TestLoadtestRejectsBadValuesInOneLine(t *testing.T) {
	env := secretEnv()
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
		{[]string{"demo", "--dup", "2"}, "--dup"},
		{[]string{"demo", "--timeout", "0s"}, "--timeout"},
		{[]string{"demo", "--seckill", "/nonexistent/seckill"}, "--seckill"},
		{[]string{"compare", "--users", "0"}, "--users"},
		{[]string{"compare", "--strategies", ","}, "--strategies"},
		{[]string{"compare", "--seckill", "/nonexistent/seckill"}, "--seckill"},
		{[]string{"seed", "--vouchers", "0"}, "--vouchers"},
		{[]string{"seed"}, "SECKILL_REDIS_URL"},
		{[]string{"seed", "--redis-url", "redis://127.0.0.1:1/0"}, "SECKILL_DATABASE_URL"},
		{[]string{"seed", "--redis-url", "mysql://x", "--database-url", "sqlite:x"}, "SECKILL_REDIS_URL"},
	} {
		stdout, stderr, status := lab(t, append(env, "SECKILL_REDIS_URL=", "SECKILL_DATABASE_URL="), 30*time.Second, c.args...)
		out := stdout + stderr
		if status != 2 {
			t.Fatalf("%v: exit %d, want 2: %q", c.args, status, out)
		}
		if lines := strings.Split(strings.TrimSpace(out), "\n"); len(lines) != 1 || !strings.Contains(out, c.name) {
			t.Fatalf("%v: want one line naming %s, got %q", c.args, c.name, out)
		}
	}
	stdout, stderr, status := lab(t, append(os.Environ(), "SECKILL_JWT_SECRET="), 30*time.Second, "loadtest", "--url", url)
	if out := stdout + stderr; status != 2 || !strings.Contains(out, "SECKILL_JWT_SECRET") || strings.Count(strings.TrimSpace(out), "\n") != 0 {
		t.Fatalf("no secret: exit %d, %q", status, out)
	}
}

func TestLoadtestFailsFastOnAnUnreachableURL(t *testing.T) {
	start := time.Now()
	stdout, stderr, status := lab(t, secretEnv(), 2*time.Minute, "loadtest", "--url", "http://127.0.0.1:1")
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
	users    map[string]int // token -> user, numbered as they come
	store    strings.Builder
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
	case r.Method == http.MethodGet && r.URL.Path == "/api/v1/vouchers/9":
		fmt.Fprint(w, `{"id":"9","title":"x","stock":5,"remaining":0,"per_user_limit":1}`)
	case r.Method == http.MethodPost && r.URL.Path == "/api/v1/vouchers/9/grab":
		b.reserved++
		if b.users == nil {
			b.users = map[string]int{}
		}
		tok := r.Header.Get("Authorization")
		if _, ok := b.users[tok]; !ok {
			b.users[tok] = len(b.users) + 1
		}
		fmt.Fprintf(&b.store, "o%d,9,%d,1,awaiting_payment,2026-01-01T00:00:00.000Z\r\n", b.reserved, b.users[tok])
		w.WriteHeader(http.StatusAccepted)
		fmt.Fprintf(w, `{"order_id":"o%d","voucher_id":"9","quantity":1,"status":"queued"}`, b.reserved)
	case r.Method == http.MethodGet && r.URL.Path == "/api/v1/vouchers/9/stats":
		fmt.Fprintf(w, `{"stock":5,"awaiting_payment":%d}`, b.reserved)
	case r.Method == http.MethodGet && r.URL.Path == "/api/v1/vouchers/9/orders":
		w.Header().Set("Content-Type", "text/csv")
		fmt.Fprint(w, "order_id,voucher_id,user_id,quantity,status,created_at\r\n"+b.store.String())
	default:
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprint(w, `{"error":{"code":"not_found","message":"not found"}}`)
	}
}

func TestLoadtestExitsOneWhenAPromiseIsBroken(t *testing.T) {
	srv := newServer(t, &brokenSeckill{})
	stdout, stderr, status := lab(t, secretEnv(), time.Minute, "loadtest", "--url", srv,
		"--users", "20", "--stock", "5", "--dup", "0.5", "--concurrency", "4", "--json")
	if status != 1 {
		t.Fatalf("exit %d, want 1\nstdout %s\nstderr %s", status, stdout, stderr)
	}
	clitest.WantCounts(t, clitest.SaleReport(t, stdout, stderr), map[string]float64{
		"requests": 30, "reserved": 30, "oversold": 25, "duplicates": 10, "orders_persisted": 30,
	})
	if !strings.Contains(stderr, "a promise was broken: oversold: the store's orders hold 25 units beyond the stock of 5; 10 users hold more than one order in the store") {
		t.Fatalf("stderr %q", stderr)
	}
}

// cleanLabKeys removes the keys of every service compare ran with prefix.
func cleanLabKeys(t *testing.T, prefix string) {
	rdb := testenv.Redis(t)
	t.Cleanup(func() {
		if err := testenv.DeleteKeys(context.Background(), rdb, prefix+"-lab-*"); err != nil {
			t.Errorf("delete the keys of %s: %v", prefix, err)
		}
	})
}

func TestCompareKeepsThePromisesWithEveryStrategy(t *testing.T) {
	prefix := "c" + testenv.Unique()
	cleanLabKeys(t, prefix)
	env := append(os.Environ(),
		"SECKILL_REDIS_URL="+testenv.RedisURL(t),
		"SECKILL_DATABASE_URL="+testenv.PostgresURL(t),
		"SECKILL_KEY_PREFIX="+prefix,
	)
	stdout, stderr, status := lab(t, env, 3*time.Minute, "compare", "--users", "1000", "--stock", "50", "--json")
	if status != 0 {
		t.Fatalf("compare exited %d\nstdout %s\nstderr %s", status, stdout, stderr)
	}
	if got, want := strings.Count(stdout, "\n"), 1; got != want {
		t.Fatalf("stdout has %d lines, want %d:\n%s", got, want, stdout)
	}
	var rows []map[string]any
	if err := json.Unmarshal([]byte(stdout), &rows); err != nil {
		t.Fatalf("stdout is not a JSON array: %v\n%s", err, stdout)
	}
	if got, want := len(rows), 3; got != want {
		t.Fatalf("%d rows, want %d: %s", got, want, stdout)
	}
	vouchers := map[any]bool{}
	for i, strategy := range []string{"lua", "watch", "postgres"} {
		m := rows[i]
		if got, want := m["strategy"], strategy; got != want {
			t.Fatalf("row %d is strategy %v, want %s", i, got, want)
		}
		clitest.WantCounts(t, m, map[string]float64{
			"requests": 1010, "reserved": 50, "oversold": 0, "duplicates": 0, "orders_persisted": 50, "stock": 50,
		})
		if m["broken"] != false || m["verdict"] != "kept" {
			t.Fatalf("%s: broken %v, verdict %v", strategy, m["broken"], m["verdict"])
		}
		for _, k := range []string{"avg_ms", "p99_ms", "rps"} {
			if v, ok := m[k].(float64); !ok || v <= 0 {
				t.Fatalf("%s: %s = %v, want a positive number", strategy, k, m[k])
			}
		}
		if m["avg_ms"].(float64) > m["max_ms"].(float64) {
			t.Fatalf("%s: avg %v above max %v", strategy, m["avg_ms"], m["max_ms"])
		}
		// The Redis strategies leave the database to fulfillment and the background
		// jobs; the database strategy runs every grab through it.
		perGrab := m["db_statements_per_grab"].(float64)
		if strategy == "postgres" {
			if perGrab < 0.25 {
				t.Fatalf("postgres: %v statements per grab, want each of 50 orders to cost several", perGrab)
			}
		} else if perGrab > 0.1 {
			t.Fatalf("%s: %v statements per grab, want about none", strategy, perGrab)
		}
		vouchers[m["voucher_id"]] = true
	}
	if got, want := len(vouchers), 3; got != want {
		t.Fatalf("%d distinct vouchers sold, want a fresh one per strategy", got)
	}

	// The table names every strategy and says the promises were kept; --strategies
	// picks them.
	stdout, stderr, status = lab(t, env, 3*time.Minute, "compare", "--strategies", "watch,lua", "--users", "200", "--stock", "20", "--concurrency", "50")
	if status != 0 {
		t.Fatalf("compare exited %d\nstdout %s\nstderr %s", status, stdout, stderr)
	}
	for _, want := range []string{"\n  watch ", "\n  lua ", "all promises kept by every strategy"} {
		if !strings.Contains(stdout, want) {
			t.Fatalf("table lacks %q:\n%s", want, stdout)
		}
	}
	if strings.Contains(stdout, "BROKEN") || strings.Contains(stdout, "postgres") || strings.Index(stdout, "  watch ") > strings.Index(stdout, "  lua ") {
		t.Fatalf("table:\n%s", stdout)
	}
}

// compare with nothing configured sells every strategy on a temporary database —
// never the working directory's seckill.db — and says how far it is.
func TestCompareWithNothingInstalled(t *testing.T) {
	dir, tmp := t.TempDir(), t.TempDir()
	stdout, stderr, status := labIn(t, dir, clitest.WithoutSettings("TMPDIR="+tmp), 3*time.Minute,
		"compare", "--users", "200", "--stock", "20", "--concurrency", "20")
	if status != 0 {
		t.Fatalf("compare exited %d\nstdout %s\nstderr %s", status, stdout, stderr)
	}
	if !strings.Contains(stdout, "all promises kept by every strategy") {
		t.Fatalf("table:\n%s", stdout)
	}
	for i, strategy := range []string{"lua", "watch", "postgres"} {
		for _, want := range []string{fmt.Sprintf("%s (%d of 3)", strategy, i+1), "  " + strategy + ": 202 requests answered"} {
			if !strings.Contains(stderr, want) {
				t.Errorf("progress lacks %q:\n%s", want, stderr)
			}
		}
	}
	for _, d := range []string{dir, tmp} {
		if left, _ := os.ReadDir(d); len(left) != 0 {
			t.Fatalf("compare left %d files in %s (%s)", len(left), d, left[0].Name())
		}
	}
}

// seed makes sales that reconcile finds consistent: Redis and the database agree on
// the popular voucher's every order.
func TestSeedMakesConsistentSales(t *testing.T) {
	prefix := "s" + testenv.Unique()
	rdb := testenv.Redis(t)
	t.Cleanup(func() {
		if err := testenv.DeleteKeys(context.Background(), rdb, prefix+":*"); err != nil {
			t.Errorf("delete the keys of %s: %v", prefix, err)
		}
	})
	env := append(os.Environ(), "SECKILL_REDIS_URL="+testenv.RedisURL(t), "SECKILL_DATABASE_URL="+testenv.PostgresURL(t),
		"SECKILL_KEY_PREFIX="+prefix, "SECKILL_RECONCILE_GRACE=1ms")
	stdout, stderr, status := lab(t, env, time.Minute, "seed")
	if status != 1 || !strings.Contains(stderr, "run `seckill migrate up` first") {
		t.Fatalf("seed before migrating: exit %d\nstdout %s\nstderr %s", status, stdout, stderr)
	}
	bin := builtSeckill(t)
	migrate := exec.Command(bin, "migrate", "up")
	migrate.Env = env
	if out, err := migrate.CombinedOutput(); err != nil {
		t.Fatalf("migrate up: %v\n%s", err, out)
	}
	stdout, stderr, status = lab(t, env, 2*time.Minute, "seed", "--vouchers", "3", "--orders", "50")
	if status != 0 {
		t.Fatalf("seed exited %d\nstdout %s\nstderr %s", status, stdout, stderr)
	}
	var made map[string]any
	if err := json.Unmarshal([]byte(stdout), &made); err != nil {
		t.Fatalf("seed printed %q: %v", stdout, err)
	}
	hot, _ := made["hot_voucher"].(string)
	if made["vouchers"] != 3.0 || made["orders"] != 50.0 || hot == "" {
		t.Fatalf("seed printed %v", made)
	}
	reconcile := exec.Command(bin, "reconcile", "--voucher", hot, "--json")
	reconcile.Env = env
	out, err := reconcile.CombinedOutput()
	if err != nil {
		t.Fatalf("reconcile after seed: %v\n%s", err, out)
	}
	var rep struct {
		Vouchers []struct {
			Drifts []any `json:"drifts"`
		} `json:"vouchers"`
	}
	if err := json.Unmarshal(out, &rep); err != nil || len(rep.Vouchers) != 1 || len(rep.Vouchers[0].Drifts) != 0 {
		t.Fatalf("reconcile after seed: %v\n%s", err, out)
	}
}

// cost measures a real serve, Redis and PostgreSQL against the hello-world server:
// every grab reserved and persisted, CPU read for each process, and Redis's commands
// counted per grab (at least the stream entry and the reserve call each grab costs;
// other tests' commands on the same Redis may add to them, never take away).
func TestCostMeasuresAGrabAgainstHelloWorld(t *testing.T) {
	prefix := "k" + testenv.Unique()
	cleanLabKeys(t, prefix)
	hello := clitest.Build(t, "github.com/seckill/seckill/cmd/internal/hello")
	env := append(os.Environ(),
		"SECKILL_REDIS_URL="+testenv.RedisURL(t),
		"SECKILL_DATABASE_URL="+testenv.PostgresURL(t),
		"SECKILL_KEY_PREFIX="+prefix,
	)
	stdout, stderr, status := lab(t, env, 3*time.Minute, "cost", "--hello", hello, "--grabs", "2000", "--rounds", "1", "--concurrency", "16", "--json")
	if status != 0 {
		t.Fatalf("cost exited %d\nstdout %s\nstderr %s", status, stdout, stderr)
	}
	var rounds []struct {
		Grabs    int                `json:"grabs"`
		Hello    float64            `json:"hello_us"`
		Before   float64            `json:"hello_before_us"`
		After    float64            `json:"hello_after_us"`
		Service  float64            `json:"service_us"`
		Redis    float64            `json:"redis_us"`
		Postgres float64            `json:"postgres_us"`
		Total    float64            `json:"total_us"`
		TotalX   float64            `json:"total_x"`
		Calls    map[string]float64 `json:"redis_calls_per_grab"`
	}
	if err := json.Unmarshal([]byte(stdout), &rounds); err != nil || len(rounds) != 1 {
		t.Fatalf("stdout is not one round as JSON (%v):\n%s", err, stdout)
	}
	r := rounds[0]
	if r.Grabs != 2000 {
		t.Fatalf("grabs = %d, want 2000", r.Grabs)
	}
	// The service did the most work of all: 2,000 requests, their reservations and
	// their orders are tens of ms of CPU, many ticks of /proc's clock.
	if r.Service <= 0 || r.Service <= r.Hello || r.Total < r.Service+r.Redis+r.Postgres-0.01 || r.TotalX <= 1 {
		t.Fatalf("implausible figures: %+v", r)
	}
	// The baseline is the mean of the hello-world runs before and after the grabs.
	if mean := (r.Before + r.After) / 2; r.Before < 0 || r.After < 0 || math.Abs(r.Hello-mean) > 1e-6 {
		t.Fatalf("hello world %v µs, before %v and after %v: want their mean", r.Hello, r.Before, r.After)
	}
	for _, cmd := range []string{"xadd", "evalsha", "xreadgroup"} {
		if r.Calls[cmd] <= 0 {
			t.Fatalf("no %s counted per grab: %v", cmd, r.Calls)
		}
	}
	if r.Calls["xadd"] < 1 {
		t.Fatalf("%v stream entries per grab, want at least one each: %v", r.Calls["xadd"], r.Calls)
	}
	_, stderr, status = lab(t, env, time.Minute, "cost", "--hello", hello, "--grabs", "10")
	if status != 2 || !strings.Contains(stderr, "--grabs") {
		t.Fatalf("cost --grabs 10 exited %d, want 2 and a line naming --grabs: %s", status, stderr)
	}
}
