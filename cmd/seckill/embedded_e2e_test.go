package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/seckill/seckill/adapters/httpapi"
	"github.com/seckill/seckill/adapters/sqlstore"
	"github.com/seckill/seckill/adapters/testenv"
	"github.com/seckill/seckill/cmd/internal/burst"
	"github.com/seckill/seckill/domain"
)

// The zero-setup mode: serve with neither SECKILL_REDIS_URL nor
// SECKILL_DATABASE_URL runs an in-process Redis and a SQLite file, and needs nothing
// installed. These tests run the real binary with every SECKILL_* variable of the
// test run removed, in a directory of their own.

// zeroSetupEnv is the test process's environment without any SECKILL_* variable, plus
// extra.
func zeroSetupEnv(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "SECKILL_") {
			env = append(env, kv)
		}
	}
	return append(env, extra...)
}

// startZeroSetup starts serve as `go run ./cmd/seckill serve` runs it on a fresh
// machine: nothing configured but a free port, the tests' JWT secret and extraEnv
// (later entries win), in an empty working directory where it makes seckill.db.
func startZeroSetup(t *testing.T, extraEnv ...string) *fulfillInstance {
	t.Helper()
	dir := t.TempDir()
	addr := freeAddr(t)
	env := zeroSetupEnv("SECKILL_HTTP_ADDR="+addr, "SECKILL_JWT_SECRET="+e2eSecret, "SECKILL_LOG_LEVEL=warn")
	in := &instance{t: t, base: "http://" + addr, env: append(env, extraEnv...), logs: &syncBuffer{},
		tokens: httpapi.NewTokens([]byte(e2eSecret)), dir: dir,
		dbURL: sqlstore.SQLiteScheme + filepath.Join(dir, "seckill.db")}
	in.start()
	t.Cleanup(in.stop)
	return &fulfillInstance{instance: in}
}

// TestServeWithNothingInstalled is the README's first command: serve answers grabs
// with nothing but itself, keeps its orders in ./seckill.db across a restart, and
// rebuilds the in-process Redis from it.
func TestServeWithNothingInstalled(t *testing.T) {
	fi := startZeroSetup(t)
	if _, err := os.Stat(filepath.Join(fi.dir, "seckill.db")); err != nil {
		t.Fatalf("no seckill.db in the working directory: %v", err)
	}
	saleAcrossARestart(t, fi)
}

// TestServeWithTheInProcessRedis: the in-process Redis in front of a real PostgreSQL.
func TestServeWithTheInProcessRedis(t *testing.T) {
	saleAcrossARestart(t, startFulfillInstance(t, "SECKILL_REDIS_URL="))
}

// saleAcrossARestart sells through fi's in-process Redis and restarts it: grabs are
// served; on SIGTERM the worker drains the in-process streams, so every 202 is an
// order after the stop; and on the next start the sale state is rebuilt from the
// database, so the holders cannot buy twice and the remaining units are right.
func saleAcrossARestart(t *testing.T, fi *fulfillInstance) {
	t.Helper()
	id := fi.createVoucher(30, 1)
	first := fi.fireGrabs(id, burstUsers(1, 20, 2))
	if got := len(first.reserved); got != 20 {
		t.Fatalf("reserved %d, want 20", got)
	}
	// A second burst, then SIGTERM at once: whatever the worker had not persisted yet
	// is drained before the process exits.
	second := fi.fireGrabs(id, burstUsers(100, 20, 0))
	fi.stop()
	all := newGrabs()
	all.merge(first)
	all.merge(second)
	if got, want := len(all.reserved), 30; got != want {
		t.Fatalf("reserved %d in all, want the stock, %d", got, want)
	}
	orders := fi.wantAcceptedPersisted(id, all.reserved, "the stop")
	if got, want := len(orders), len(all.reserved); got != want {
		t.Fatalf("%d orders persisted, want %d", got, want)
	}
	if got, want := fi.dbSold(id), len(all.reserved); got != want {
		t.Fatalf("sold = %d, want %d", got, want)
	}

	// A fresh in-process Redis: the warm-up rebuilds the sale from the database.
	fi.start()
	testenv.Eventually(t, 10*time.Second, "the sale rebuilt", func() (bool, string) {
		status, v := fi.call(http.MethodGet, "/api/v1/vouchers/"+id, "", nil)
		return status == http.StatusOK && v["remaining"] == float64(30-len(all.reserved)), fmt.Sprintf("%d %v", status, v)
	})
	for user, order := range all.holder {
		var status int
		var body map[string]any
		// The warm-up runs beside the listener: until the holders' reservations are
		// restored, the voucher answers 503 (never a wrong answer).
		testenv.Eventually(t, 30*time.Second, "the holders' reservations restored", func() (bool, string) {
			status, body = fi.call(http.MethodPost, "/api/v1/vouchers/"+id+"/grab", fi.token(domain.UserID(user), false), nil)
			return status != http.StatusServiceUnavailable, fmt.Sprintf("%d %v", status, body)
		})
		if status != http.StatusConflict || body["error"].(map[string]any)["order_id"] != order {
			t.Fatalf("holder %d grabbed after the restart: %d %v", user, status, body)
		}
	}
	st := fi.assertStatsAddUp(id)
	if st["awaiting_payment"] != float64(len(all.reserved)) {
		t.Fatalf("stats after the restart: %v", st)
	}
}

// printedTokens waits for serve's banner in what fi printed from offset from on, and
// returns the admin and user tokens it printed. The banner comes once serve has
// started, after its start-up log lines.
func printedTokens(t *testing.T, fi *fulfillInstance, from int) (admin, user string) {
	t.Helper()
	testenv.Eventually(t, 30*time.Second, "the banner's tokens", func() (bool, string) {
		admin, user = "", ""
		logs := fi.logs.String()
		for _, line := range strings.Split(logs[from:], "\n") {
			if rest, ok := strings.CutPrefix(line, "Admin token (user 1):"); ok {
				admin = strings.TrimSpace(rest)
			}
			if rest, ok := strings.CutPrefix(line, "User token  (user 42):"); ok {
				user = strings.TrimSpace(rest)
			}
		}
		return admin != "" && user != "", logs
	})
	return admin, user
}

// TestServeWithNothingConfigured: with no setting at all, serve makes up a JWT secret,
// keeps it beside the database file, and prints an admin token, a user token and curl
// lines that work — after a restart too — and how to mint more; it says on start that
// this mode is for trying and testing.
func TestServeWithNothingConfigured(t *testing.T) {
	fi := startZeroSetup(t, "SECKILL_JWT_SECRET=")
	admin, user := printedTokens(t, fi, 0)
	// What the printed curl lines send.
	status, body := fi.call(http.MethodPost, "/api/v1/vouchers", admin, map[string]any{
		"title": "Coffee", "stock": 100, "begins_at": "2020-01-01T00:00:00Z", "ends_at": "2099-01-01T00:00:00Z",
	})
	if status != http.StatusCreated || body["id"] != "1" {
		t.Fatalf("create with the printed admin token: %d %v", status, body)
	}
	status, body = fi.call(http.MethodPost, "/api/v1/vouchers/1/grab", user, nil)
	if status != http.StatusAccepted {
		t.Fatalf("grab with the printed user token: %d %v", status, body)
	}
	order := body["order_id"]
	testenv.Eventually(t, 10*time.Second, "the order persisted", func() (bool, string) {
		status, body := fi.call(http.MethodGet, "/api/v1/orders", user, nil)
		orders, _ := body["orders"].([]any)
		if status != http.StatusOK || len(orders) != 1 {
			return false, fmt.Sprintf("%d %v", status, body)
		}
		o := orders[0].(map[string]any)
		return o["order_id"] == order && o["status"] == "awaiting_payment", fmt.Sprint(o)
	})
	// The made-up secret is not the tests' one: their tokens are refused.
	if status, _ := fi.call(http.MethodPost, "/api/v1/vouchers", fi.token(1, true), map[string]any{"title": "y"}); status != http.StatusUnauthorized {
		t.Fatalf("a token signed with another secret: %d", status)
	}
	logs := fi.logs.String()
	for _, want := range []string{"for trying and testing, not production", "in-process Redis", "SQLite",
		"Live sale page: http://" + strings.TrimPrefix(fi.base, "http://") + "/ui/"} {
		if !strings.Contains(logs, want) {
			t.Fatalf("start-up does not say %q:\n%s", want, logs)
		}
	}

	// The secret is kept beside the database, for its owner only, and the banner says
	// how to use it.
	secretFile := filepath.Join(fi.dir, "seckill.db.secret")
	st, err := os.Stat(secretFile)
	if err != nil {
		t.Fatalf("no secret kept beside seckill.db: %v", err)
	}
	if got := st.Mode().Perm(); got != 0o600 {
		t.Fatalf("%s has mode %v, want 0600", secretFile, got)
	}
	if want := "export SECKILL_JWT_SECRET=$(cat '" + secretFile + "')"; !strings.Contains(logs, want) {
		t.Fatalf("the banner does not say %q:\n%s", want, logs)
	}
	secret, err := os.ReadFile(secretFile)
	if err != nil {
		t.Fatal(err)
	}

	// After a restart the tokens printed first still work, and the new banner's are
	// signed with the same secret.
	fi.stop()
	restarted := len(fi.logs.String())
	fi.start()
	printedTokens(t, fi, restarted)
	if status, body := fi.call(http.MethodGet, "/api/v1/vouchers/1/stats", admin, nil); status != http.StatusOK {
		t.Fatalf("the first start's admin token after a restart: %d %v", status, body)
	}
	if status, body := fi.call(http.MethodGet, "/api/v1/orders", user, nil); status != http.StatusOK {
		t.Fatalf("the first start's user token after a restart: %d %v", status, body)
	}
	// seckill token, with the secret exported as the banner says, mints valid tokens.
	minted, err := runCmdStdout(seckillBinary(t), zeroSetupEnv("SECKILL_JWT_SECRET="+strings.TrimSpace(string(secret))), "token", "--user", "1", "--admin")
	if err != nil {
		t.Fatalf("seckill token: %v", err)
	}
	if status, body := fi.call(http.MethodGet, "/api/v1/vouchers/1/stats", strings.TrimSpace(minted), nil); status != http.StatusOK {
		t.Fatalf("a token seckill token minted with the kept secret: %d %v", status, body)
	}
}

// TestZeroSetupRunsOncePerDatabase: a second zero-setup serve in the same directory
// would count the stock in an in-process Redis of its own and sell the same units
// twice; it refuses to start, in one line. The lock dies with its holder: after a
// kill -9 a new serve starts.
func TestZeroSetupRunsOncePerDatabase(t *testing.T) {
	fi := startZeroSetup(t)
	env := zeroSetupEnv("SECKILL_HTTP_ADDR="+freeAddr(t), "SECKILL_JWT_SECRET="+e2eSecret)
	stdout, stderr, status := runSplitIn(t, fi.dir, env, time.Minute, "serve")
	if status == 0 {
		t.Fatalf("a second serve on the same seckill.db started:\n%s%s", stdout, stderr)
	}
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(stderr), "\n") {
		if !strings.HasPrefix(l, "{") { // a JSON log line, not the failure
			lines = append(lines, l)
		}
	}
	want := fmt.Sprintf("seckill.db is in use by another seckill serve (pid %d) with an in-process Redis of its own", fi.cmd.Process.Pid)
	if len(lines) != 1 || !strings.Contains(lines[0], want) {
		t.Fatalf("the second serve said %q, want one line saying %q", stderr, want)
	}

	// kill -9 leaves no stale lock.
	if err := fi.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = fi.cmd.Wait()
	fi.start()
	if status, body := fi.call(http.MethodGet, "/api/v1/vouchers", "", nil); status != http.StatusOK {
		t.Fatalf("serve after a kill -9: %d %v", status, body)
	}
}

// TestZeroSetupDrainsItsWholeBacklogAtStop: the in-process Redis dies with the
// process, so at SIGTERM every reservation it holds is persisted however long that
// takes — here far longer than SECKILL_SHUTDOWN_TIMEOUT, with one reservation per
// transaction — and none is lost. With one order per transaction the worker is far
// behind the burst, so grabs whose commit does not come within their deadline are
// answered 503 (their reservations stand, a retry names them): those are drained too.
func TestZeroSetupDrainsItsWholeBacklogAtStop(t *testing.T) {
	fi := startZeroSetup(t, "SECKILL_SHUTDOWN_TIMEOUT=1s", "SECKILL_BATCH_SIZE=1")
	const stock = 1500
	id := fi.createVoucher(stock, 1)
	users := burstUsers(1, stock, 0)
	reqs := make([]burst.Request, len(users))
	for i, u := range users {
		reqs[i] = burst.Request{Path: "/api/v1/vouchers/" + id + "/grab", Token: fi.token(domain.UserID(u), false)}
	}
	results, _, err := burst.Fire(context.Background(), fi.base, reqs, burst.Options{})
	if err != nil {
		t.Fatal(err)
	}
	accepted, answers := map[string]int64{}, map[int]int{}
	for i, r := range results {
		answers[r.Status]++
		switch r.Status {
		case http.StatusAccepted:
			accepted[r.OrderID] = users[i]
		case http.StatusServiceUnavailable:
		default:
			t.Fatalf("grab of user %d: %d %s", users[i], r.Status, r.Code)
		}
	}
	st := fi.stats(id)
	reserved := stock - int(st["remaining"])
	t.Logf("answers %v; at the stop %v of %d reservations wait to be persisted", answers, st["queued"], reserved)
	fi.stop() // fails the test if serve does not exit 0
	if orders := fi.wantAcceptedPersisted(id, accepted, "the stop"); len(orders) != reserved {
		t.Fatalf("%d orders after the stop, want every one of the %d reservations", len(orders), reserved)
	}
}

// TestZeroSetupBurstOnABusyMachine: with nothing installed and the CPUs kept busy by
// other processes, a burst of 2,000 grabs for 100 units sells out — every unit to a
// distinct user, every grab a true answer in the end (one told the instance is
// overloaded, 503 within a second, tries again after the Retry-After, and one whose
// retry found it sold out asks for its orders, as the contract tells clients to) — and
// every reservation becomes an order, each of a user told of it. The in-process Redis is reached in memory, so the
// process's own load cannot make it look unreachable.
func TestZeroSetupBurstOnABusyMachine(t *testing.T) {
	fi := startZeroSetup(t)
	const stock = 100
	id := fi.createVoucher(stock, 1)
	t.Logf("%d CPU hogs", testenv.Hog(t))
	g := fi.fireGrabsOnABusyMachine(id, burstUsers(1001, 1980, 20))
	fi.waitSettled(id, stock, time.Minute)
	fi.findOrders(id, g)
	if got, want := len(g.reserved), stock; got != want {
		t.Fatalf("users holding an order = %d, want the whole stock of %d", got, want)
	}
	fi.assertPersistedExactlyOnce(id, g)
}

// TestInProcessRedisRunsOncePerPostgres: a serve with an in-process Redis of its own
// on a PostgreSQL database holds a lock on it, so a second such serve on the same
// database refuses to start, in one line, rather than sell the units a second time
// from its own Redis; the lock dies with its holder.
func TestInProcessRedisRunsOncePerPostgres(t *testing.T) {
	dbURL := testenv.PostgresURL(t)
	if out, err := runCmd(seckillBinary(t), zeroSetupEnv("SECKILL_DATABASE_URL="+dbURL), "migrate", "up"); err != nil {
		t.Fatalf("migrate up: %v\n%s", err, out)
	}
	fi := startZeroSetup(t, "SECKILL_DATABASE_URL="+dbURL)
	fi.dbURL = dbURL
	env := zeroSetupEnv("SECKILL_HTTP_ADDR="+freeAddr(t), "SECKILL_JWT_SECRET="+e2eSecret, "SECKILL_DATABASE_URL="+dbURL)
	stdout, stderr, status := runSplitIn(t, t.TempDir(), env, time.Minute, "serve")
	if status == 0 {
		t.Fatalf("a second serve with an in-process Redis on the same database started:\n%s%s", stdout, stderr)
	}
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(stderr), "\n") {
		if !strings.HasPrefix(l, "{") { // a JSON log line, not the failure
			lines = append(lines, l)
		}
	}
	if want := "the database is in use by another seckill serve with an in-process Redis"; len(lines) != 1 || !strings.Contains(lines[0], want) {
		t.Fatalf("the second serve said %q, want one line saying %q", stderr, want)
	}
	// kill -9 leaves no lock behind: the server drops it with the session.
	fi.kill()
	fi.start()
	if status, body := fi.call(http.MethodGet, "/api/v1/vouchers", "", nil); status != http.StatusOK {
		t.Fatalf("serve after a kill -9: %d %v", status, body)
	}
}

// TestZeroSetupKeepsEvery202ThroughAKillNine: the in-process Redis dies with the
// process, so in the zero-setup mode a grab is answered 202 only once its order is
// in the database. Waves of grabs run while the process is killed with kill -9; every
// order answered 202 is in seckill.db afterwards, and after a restart on the same file
// the sale's stats add up.
func TestZeroSetupKeepsEvery202ThroughAKillNine(t *testing.T) {
	fi := startZeroSetup(t, "SECKILL_BATCH_SIZE=10")
	const stock = 20_000
	id := fi.createVoucher(stock, 1)
	var (
		mu       sync.Mutex
		accepted = map[string]int64{}
		answers  = map[int]int{}
	)
	stop := make(chan struct{})
	fired := make(chan struct{})
	go func() {
		defer close(fired)
		for wave := int64(0); ; wave++ {
			select {
			case <-stop:
				return
			default:
			}
			users := burstUsers(1+wave*500, 500, 0)
			reqs := make([]burst.Request, len(users))
			for i, u := range users {
				reqs[i] = burst.Request{Path: "/api/v1/vouchers/" + id + "/grab", Token: fi.token(domain.UserID(u), false)}
			}
			results, _, err := burst.Fire(context.Background(), fi.base, reqs, burst.Options{Timeout: 10 * time.Second})
			if err != nil {
				return // the process is gone
			}
			mu.Lock()
			for i, r := range results {
				answers[r.Status]++
				if r.Status == http.StatusAccepted {
					accepted[r.OrderID] = users[i]
				}
			}
			mu.Unlock()
		}
	}()
	testenv.Eventually(t, 2*time.Minute, "grabs persisted before the kill", func() (bool, string) {
		orders, err := fi.dbOrders(id)
		return err == nil && len(orders) >= 1000, fmt.Sprintf("%d orders, %v", len(orders), err)
	})
	fi.kill()
	close(stop)
	<-fired
	mu.Lock()
	defer mu.Unlock()
	t.Logf("answers before and at the kill: %v", answers)
	fi.wantAcceptedPersisted(id, accepted, "the kill -9")
	fi.start()
	testenv.Eventually(t, time.Minute, "the sale rebuilt from seckill.db", func() (bool, string) {
		status, v := fi.call(http.MethodGet, "/api/v1/vouchers/"+id+"/stats", fi.token(1, true), nil)
		return status == http.StatusOK && v["queued"] == 0.0, fmt.Sprintf("%d %v", status, v)
	})
	fi.assertStatsAddUp(id)
}

// wantAcceptedPersisted fails the test unless every order of accepted (order id →
// user, each answered 202) is in the database after what (a stop, a kill -9), naming
// the first few that are not and how many; it returns the voucher's orders.
func (fi *fulfillInstance) wantAcceptedPersisted(voucher string, accepted map[string]int64, what string) []dbOrder {
	fi.t.Helper()
	orders, err := fi.dbOrders(voucher)
	if err != nil {
		fi.t.Fatal(err)
	}
	persisted := map[string]bool{}
	for _, o := range orders {
		persisted[o.ID] = true
	}
	lost := 0
	for order, user := range accepted {
		if !persisted[order] {
			lost++
			if lost <= 5 {
				fi.t.Errorf("order %s of user %d was answered 202 but is not in the database after %s", order, user, what)
			}
		}
	}
	if lost > 0 {
		fi.t.Fatalf("%d of %d orders answered 202 lost to %s", lost, len(accepted), what)
	}
	return orders
}
