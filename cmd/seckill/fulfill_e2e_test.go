package main

// End-to-end tests of fulfillment: every reservation a grab answered 202 becomes exactly
// one persisted order, through a burst, a kill -9, a database outage, a graceful
// shutdown and a poison message in the queue. Each runs the real binary on the real
// Redis and PostgreSQL that scripts/test.sh provides.

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/uptrace/bun"

	"github.com/seckill/seckill/adapters/redisstore"
	"github.com/seckill/seckill/adapters/sqlstore"
	"github.com/seckill/seckill/adapters/testenv"
	"github.com/seckill/seckill/cmd/internal/burst"
	"github.com/seckill/seckill/domain"
)

// fulfillInstance is an instance with the helpers the fulfillment tests share: orders
// counted straight from the database, the queue's state, bursts and their checks.
type fulfillInstance struct {
	*instance
}

// startFulfillInstance is startInstance for the fulfillment tests.
func startFulfillInstance(t *testing.T, extraEnv ...string) *fulfillInstance {
	t.Helper()
	return &fulfillInstance{instance: startInstance(t, extraEnv...)}
}

// kill ends the process with SIGKILL, as a crash would, and reaps it.
func (fi *fulfillInstance) kill() {
	fi.t.Helper()
	if err := fi.cmd.Process.Kill(); err != nil {
		fi.t.Fatalf("kill: %v", err)
	}
	_ = fi.cmd.Wait() // "signal: killed"
}

func (fi *fulfillInstance) voucherID(id string) domain.VoucherID {
	fi.t.Helper()
	vid, err := domain.ParseVoucherID(id)
	if err != nil {
		fi.t.Fatal(err)
	}
	return vid
}

// dbOrder is a row of the orders table.
type dbOrder struct {
	ID        string    `bun:"id"`
	User      int64     `bun:"user_id"`
	Quantity  int       `bun:"quantity"`
	Status    string    `bun:"status"`
	CreatedAt time.Time `bun:"created_at"`
}

// openStore opens the instance's database, PostgreSQL or SQLite, for one look.
func (fi *fulfillInstance) openStore(ctx context.Context) (*bun.DB, error) {
	return sqlstore.Open(ctx, fi.dbURL)
}

// dbOrders reads the voucher's orders straight from the database. It returns an error
// instead of failing, so it can be polled through an outage.
func (fi *fulfillInstance) dbOrders(voucher string) ([]dbOrder, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	db, err := fi.openStore(ctx)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	var orders []dbOrder
	err = db.NewRaw("SELECT id, user_id, quantity, status, created_at FROM orders WHERE voucher_id = ? ORDER BY id", voucher).
		Scan(ctx, &orders)
	return orders, err
}

// dbSold reads vouchers.sold.
func (fi *fulfillInstance) dbSold(voucher string) int {
	fi.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	db, err := fi.openStore(ctx)
	if err != nil {
		fi.t.Fatalf("open the database: %v", err)
	}
	defer db.Close()
	var sold int
	if err := db.NewRaw("SELECT sold FROM vouchers WHERE id = ?", voucher).Scan(ctx, &sold); err != nil {
		fi.t.Fatalf("read sold: %v", err)
	}
	return sold
}

// queueState is the consumer group's view of a voucher's stream, read from Redis.
type queueState struct {
	PEL       int64            // delivered, not acknowledged
	Lag       int64            // never delivered
	Consumers map[string]int64 // pending entries per consumer
}

func (q queueState) String() string {
	return fmt.Sprintf("pel=%d lag=%d consumers=%v", q.PEL, q.Lag, q.Consumers)
}

func (fi *fulfillInstance) queueState(voucher string) queueState {
	fi.t.Helper()
	ctx := context.Background()
	stream := fi.keys.Stream(fi.voucherID(voucher))
	groups, err := fi.redis.XInfoGroups(ctx, stream).Result()
	if err != nil {
		fi.t.Fatalf("xinfo groups %s: %v", stream, err)
	}
	st := queueState{Consumers: map[string]int64{}}
	for _, g := range groups {
		if g.Name != redisstore.DefaultGroup {
			continue
		}
		st.PEL, st.Lag = g.Pending, g.Lag
		cs, err := fi.redis.XInfoConsumers(ctx, stream, g.Name).Result()
		if err != nil {
			fi.t.Fatalf("xinfo consumers %s: %v", stream, err)
		}
		for _, c := range cs {
			st.Consumers[c.Name] = c.Pending
		}
		return st
	}
	fi.t.Fatalf("stream %s has no group %q", stream, redisstore.DefaultGroup)
	return st
}

// stats reads GET /api/v1/vouchers/{id}/stats as an admin.
func (fi *fulfillInstance) stats(voucher string) map[string]float64 {
	fi.t.Helper()
	status, st := fi.tryStats(voucher)
	if status != http.StatusOK {
		fi.t.Fatalf("stats: %d %v", status, st)
	}
	return st
}

// tryStats is stats that returns the answer's status instead of failing on one that
// is not 200, for polling a service that is still recovering (its database breaker
// answers 503 until a probe finds the server back).
func (fi *fulfillInstance) tryStats(voucher string) (int, map[string]float64) {
	fi.t.Helper()
	status, body := fi.call(http.MethodGet, "/api/v1/vouchers/"+voucher+"/stats", fi.token(1, true), nil)
	out := make(map[string]float64, len(body))
	for k, v := range body {
		if f, ok := v.(float64); ok {
			out[k] = f
		}
	}
	return status, out
}

// grabs is what a burst of grabs answered.
type grabs struct {
	reserved map[string]int64 // order id of each 202 → its user
	holder   map[int64]string // user → the order id of its 202
	counts   map[string]int
	took     time.Duration
	// unsure are the users a busy burst answered 503 and then no order: whether they
	// hold one is for findOrders to ask.
	unsure []int64
}

// fireGrabs grabs voucher once per entry of users, all at once, and checks that every
// answer is a 202 or a 409 sold_out/already_purchased, that no user reserved twice and
// that every 202 names a distinct order id.
func (fi *fulfillInstance) fireGrabs(voucher string, users []int64) grabs {
	fi.t.Helper()
	return fi.fire(voucher, users, false)
}

// fireGrabsOnABusyMachine is fireGrabs on a machine other processes keep busy: a grab
// answered the contract's overloaded 503 is tried again after its Retry-After
// (retryOverloaded), and the answers checked are the last ones; an already_purchased
// names the user's order, which a 503 of unknown outcome may have reserved, and the
// users such a 503 left with no answer naming an order are g.unsure (findOrders).
func (fi *fulfillInstance) fireGrabsOnABusyMachine(voucher string, users []int64) grabs {
	fi.t.Helper()
	return fi.fire(voucher, users, true)
}

func (fi *fulfillInstance) fire(voucher string, users []int64, busy bool) grabs {
	fi.t.Helper()
	reqs := make([]burst.Request, len(users))
	for i, u := range users {
		reqs[i] = burst.Request{Path: "/api/v1/vouchers/" + voucher + "/grab", Token: fi.token(domain.UserID(u), false)}
	}
	results, took, err := burst.Fire(context.Background(), fi.base, reqs, burst.Options{})
	if err != nil {
		fi.t.Fatal(err)
	}
	var overloaded map[int]bool
	if busy {
		overloaded = fi.retryOverloaded(reqs, results)
	}
	g := grabs{reserved: map[string]int64{}, holder: map[int64]string{}, counts: map[string]int{}, took: took}
	for i, r := range results {
		if r.Err != nil {
			fi.t.Fatalf("grab %d (user %d): %v", i, users[i], r.Err)
		}
		switch {
		case r.Status == http.StatusAccepted:
			g.counts["reserved"]++
			if r.OrderID == "" {
				fi.t.Fatalf("grab %d (user %d): 202 without an order id", i, users[i])
			}
			// (A busy burst's already_purchased may have named this order already.)
			if prev, ok := g.holder[users[i]]; ok && (!busy || prev != r.OrderID) {
				fi.t.Fatalf("user %d reserved twice: %s and %s", users[i], prev, r.OrderID)
			}
			if other, ok := g.reserved[r.OrderID]; ok && other != users[i] {
				fi.t.Fatalf("order id %s answered to users %d and %d", r.OrderID, other, users[i])
			}
			g.holder[users[i]] = r.OrderID
			g.reserved[r.OrderID] = users[i]
		case r.Status == http.StatusConflict && (r.Code == "sold_out" || r.Code == "already_purchased"):
			g.counts[r.Code]++
			if busy && r.Code == "already_purchased" {
				// The user's order, or one reserved behind a 503 whose outcome was
				// unknown (taken, not confirmed in time), which this retry tells.
				if prev, ok := g.holder[users[i]]; ok && prev != r.OrderID {
					fi.t.Fatalf("user %d holds %s and is told of %s", users[i], prev, r.OrderID)
				}
				if r.OrderID == "" {
					fi.t.Fatalf("grab %d (user %d): already_purchased names no order", i, users[i])
				}
				g.holder[users[i]] = r.OrderID
				g.reserved[r.OrderID] = users[i]
			}
		default:
			fi.t.Fatalf("grab %d (user %d): unexpected answer %d %q; the service logged:\n%s", i, users[i], r.Status, r.Code, fi.logs)
		}
	}
	for i := range overloaded {
		if _, told := g.holder[users[i]]; !told && !slices.Contains(g.unsure, users[i]) {
			g.unsure = append(g.unsure, users[i])
		}
	}
	fi.t.Logf("burst of %d answered in %v: %v", len(users), took, g.counts)
	if busy {
		fi.t.Logf("%d grabs answered 503, tried again; %d of their users told of no order", len(overloaded), len(g.unsure))
	}
	return g
}

// findOrders asks, as the contract tells a client to (GET /api/v1/orders), whether each
// of g's unsure users holds an order of voucher that no answer named (a grab answered
// 503 whose outcome was unknown, then sold_out to its retry), and adds each found to g.
// Call it once the reservations are persisted (waitSettled).
func (fi *fulfillInstance) findOrders(voucher string, g grabs) {
	fi.t.Helper()
	for _, u := range g.unsure {
		status, list := fi.call(http.MethodGet, "/api/v1/orders?voucher_id="+voucher, fi.token(domain.UserID(u), false), nil)
		listed, _ := list["orders"].([]any)
		if status != http.StatusOK || len(listed) > 1 {
			fi.t.Fatalf("user %d lists its orders of voucher %s: %d %v", u, voucher, status, list)
		}
		if len(listed) == 1 {
			order, _ := listed[0].(map[string]any)["order_id"].(string)
			g.holder[u], g.reserved[order] = order, u
		}
	}
}

// burstUsers lists n distinct users from first, then the first dup of them again.
func burstUsers(first int64, n, dup int) []int64 {
	users := make([]int64, 0, n+dup)
	for u := range int64(n) {
		users = append(users, first+u)
	}
	for u := range int64(dup) {
		users = append(users, first+u)
	}
	return users
}

// prime grabs voucher as user and waits until that order is persisted, so the worker
// has discovered the voucher's stream and is consuming it when the burst that follows
// arrives (a new voucher's stream is only found at the next registry read, up to a
// second later). It adds the reservation to g.
func (fi *fulfillInstance) prime(voucher string, user int64, g grabs) {
	fi.t.Helper()
	status, body := fi.call(http.MethodPost, "/api/v1/vouchers/"+voucher+"/grab", fi.token(domain.UserID(user), false), nil)
	order, _ := body["order_id"].(string)
	if status != http.StatusAccepted || order == "" {
		fi.t.Fatalf("priming grab by user %d: %d %v", user, status, body)
	}
	if _, dup := g.holder[user]; dup {
		fi.t.Fatalf("priming user %d already holds an order", user)
	}
	g.reserved[order] = user
	g.holder[user] = order
	testenv.Eventually(fi.t, 10*time.Second, "the priming order persisted", func() (bool, string) {
		status, o := fi.call(http.MethodGet, "/api/v1/orders/"+order, fi.token(domain.UserID(user), false), nil)
		return status == http.StatusOK && o["status"] == "awaiting_payment", fmt.Sprintf("%d %v", status, o)
	})
}

// merge adds the reservations of b to g.
func (g grabs) merge(b grabs) {
	for id, u := range b.reserved {
		if prev, dup := g.holder[u]; dup {
			panic(fmt.Sprintf("user %d reserved %s and %s", u, prev, id))
		}
		g.reserved[id] = u
		g.holder[u] = id
	}
}

func newGrabs() grabs {
	return grabs{reserved: map[string]int64{}, holder: map[int64]string{}, counts: map[string]int{}}
}

// waitSettled waits until PostgreSQL holds at least as many orders for voucher as
// were reserved and the service reports nothing pending in the queue.
func (fi *fulfillInstance) waitSettled(voucher string, reserved int, timeout time.Duration) time.Duration {
	fi.t.Helper()
	took := testenv.Eventually(fi.t, timeout, "every reservation persisted", func() (bool, string) {
		orders, err := fi.dbOrders(voucher)
		if err != nil {
			return false, "postgres: " + err.Error()
		}
		if len(orders) < reserved {
			return false, fmt.Sprintf("%d of %d orders persisted", len(orders), reserved)
		}
		status, st := fi.tryStats(voucher)
		return status == http.StatusOK && st["pending"] == 0, fmt.Sprintf("%d orders, stats %d %v", len(orders), status, st)
	})
	fi.t.Logf("%d reservations persisted within %v", reserved, took)
	return took
}

// assertPersistedExactlyOnce checks that the voucher's orders in PostgreSQL are
// exactly the reservations g answered 202 — same ids, same users, one unit each,
// awaiting payment — and that the voucher's sold counter matches.
func (fi *fulfillInstance) assertPersistedExactlyOnce(voucher string, g grabs) {
	fi.t.Helper()
	orders, err := fi.dbOrders(voucher)
	if err != nil {
		fi.t.Fatalf("read orders: %v", err)
	}
	seenUser := map[int64]string{}
	var unknown, wrong []string
	for _, o := range orders {
		user, ok := g.reserved[o.ID]
		switch {
		case !ok:
			unknown = append(unknown, fmt.Sprintf("%s (user %d, %s)", o.ID, o.User, o.Status))
		case o.User != user || o.Quantity != 1 || o.Status != string(domain.StatusAwaitingPayment):
			wrong = append(wrong, fmt.Sprintf("%+v (reserved by user %d)", o, user))
		}
		if prev, dup := seenUser[o.User]; dup {
			fi.t.Errorf("user %d holds two orders: %s and %s", o.User, prev, o.ID)
		}
		seenUser[o.User] = o.ID
	}
	if len(unknown) > 0 {
		fi.t.Errorf("%d orders no grab answered 202 for: %v", len(unknown), unknown)
	}
	if len(wrong) > 0 {
		fi.t.Errorf("%d orders differ from their reservation: %v", len(wrong), wrong)
	}
	persisted := make(map[string]bool, len(orders))
	for _, o := range orders {
		persisted[o.ID] = true
	}
	var lost []string
	for id := range g.reserved {
		if !persisted[id] {
			lost = append(lost, id)
		}
	}
	sort.Strings(lost)
	if len(lost) > 0 {
		fi.t.Errorf("%d reservations answered 202 were never persisted: %v", len(lost), lost)
	}
	if got, want := len(orders), len(g.reserved); got != want {
		fi.t.Errorf("orders in postgres = %d, want %d (one per 202)", got, want)
	}
	if got, want := fi.dbSold(voucher), len(g.reserved); got != want {
		fi.t.Errorf("vouchers.sold = %d, want %d", got, want)
	}
	if fi.t.Failed() {
		fi.t.FailNow()
	}
}

// assertStats checks the admin stats of a settled voucher.
func (fi *fulfillInstance) assertStats(voucher string, want map[string]float64) {
	fi.t.Helper()
	st := fi.stats(voucher)
	for k, v := range want {
		if got, ok := st[k]; !ok || got != v {
			fi.t.Errorf("stats %s = %v (present %v), want %v; all: %v", k, got, ok, v, st)
		}
	}
	if got, want := st["remaining"]+st["queued"]+st["awaiting_payment"]+st["paid"], st["stock"]; got != want {
		fi.t.Errorf("remaining+queued+awaiting_payment+paid = %v, want stock %v; all: %v", got, want, st)
	}
}

// TestFulfillReferenceBurstEndToEnd runs the seeds' reference load (5,000 grabs, 4,950
// users, 50 of them twice, 100 units) and follows it to the database: exactly the 100
// reservations become orders, each readable by its owner only.
func TestFulfillReferenceBurstEndToEnd(t *testing.T) {
	fi := startFulfillInstance(t)
	const stock, users, twice = 100, 4950, 50
	id := fi.createVoucher(stock, 1)

	g := fi.fireGrabs(id, burstUsers(1001, users, twice))
	if got, want := len(g.reserved), stock; got != want {
		t.Fatalf("reserved = %d, want %d", got, want)
	}
	fi.waitSettled(id, stock, 30*time.Second)
	fi.assertPersistedExactlyOnce(id, g)
	fi.assertStats(id, map[string]float64{
		"stock": stock, "remaining": 0, "queued": 0, "awaiting_payment": stock, "paid": 0,
		"cancelled": 0, "expired": 0, "failed": 0, "pending": 0,
	})

	stranger := fi.token(999_999, false)
	for order, user := range g.reserved {
		status, o := fi.call(http.MethodGet, "/api/v1/orders/"+order, fi.token(domain.UserID(user), false), nil)
		if status != http.StatusOK || o["order_id"] != order || o["status"] != "awaiting_payment" ||
			o["user_id"] != fmt.Sprint(user) || o["voucher_id"] != id || o["quantity"] != 1.0 {
			t.Fatalf("owner %d reads order %s: %d %v", user, order, status, o)
		}
		status, o = fi.call(http.MethodGet, "/api/v1/orders/"+order, stranger, nil)
		if got, want := status, http.StatusNotFound; got != want {
			t.Fatalf("another user reads order %s: %d %v, want %d", order, got, o, want)
		}
		if e, _ := o["error"].(map[string]any); e["code"] != "not_found" {
			t.Fatalf("another user reads order %s: error %v, want code not_found", order, o)
		}
		status, list := fi.call(http.MethodGet, "/api/v1/orders?voucher_id="+id, fi.token(domain.UserID(user), false), nil)
		listed, _ := list["orders"].([]any)
		if status != http.StatusOK || len(listed) != 1 || listed[0].(map[string]any)["order_id"] != order {
			t.Fatalf("user %d lists orders of voucher %s: %d %v, want only %s", user, id, status, list, order)
		}
	}
	// A user who only got sold_out holds nothing.
	loser := int64(-1)
	for u := int64(1001); u < 1001+users; u++ {
		if _, won := g.holder[u]; !won {
			loser = u
			break
		}
	}
	status, list := fi.call(http.MethodGet, "/api/v1/orders?voucher_id="+id, fi.token(domain.UserID(loser), false), nil)
	if listed, _ := list["orders"].([]any); status != http.StatusOK || len(listed) != 0 {
		t.Fatalf("user %d without a reservation lists: %d %v, want no orders", loser, status, list)
	}
}

// TestFulfillSurvivesKillNineAfterABurst kills the process with SIGKILL as soon as a
// burst is answered, with reservations still in the stream and in the dead consumer's
// pending list, and restarts it: the new process (a new consumer) reads what was never
// delivered, claims what the dead one held, and persists each reservation exactly once.
func TestFulfillSurvivesKillNineAfterABurst(t *testing.T) {
	// Small batches keep the worker busy well past the burst, so the kill finds a
	// batch in hand (pending under the dead consumer) and entries never delivered.
	fi := startFulfillInstance(t, "SECKILL_ROLES=api,worker", "SECKILL_CLAIM_IDLE=2s", "SECKILL_BATCH_SIZE=10")
	const stock = 1000
	id := fi.createVoucher(stock, 1)

	g := newGrabs()
	fi.prime(id, 20_000, g)
	g.merge(fi.fireGrabs(id, burstUsers(20_001, 1900, 100)))
	fi.kill()
	if got, want := len(g.reserved), stock; got != want {
		t.Fatalf("reserved = %d, want %d", got, want)
	}
	atKill, err := fi.dbOrders(id)
	if err != nil {
		t.Fatal(err)
	}
	q := fi.queueState(id)
	t.Logf("at the kill: %d of %d orders persisted; queue %v", len(atKill), len(g.reserved), q)
	if q.PEL == 0 {
		t.Logf("note: the dead consumer held no batch at the kill; the claim path was not exercised this time")
	}

	fi.start() // same settings, a new pid, so a new consumer name
	fi.waitSettled(id, len(g.reserved), 30*time.Second)
	fi.assertPersistedExactlyOnce(id, g)
	fi.assertStats(id, map[string]float64{
		"stock": stock, "remaining": 0, "queued": 0, "awaiting_payment": stock, "failed": 0, "pending": 0,
	})
	if after := fi.queueState(id); after.PEL != 0 || after.Lag != 0 {
		t.Fatalf("queue after recovery: %v, want nothing pending", after)
	}
}

// pgOutage reads the scripts that stop and start the shared PostgreSQL, with the skip
// or fail rule of adapters/testenv.
func pgOutage(t *testing.T) (stop, start string) {
	t.Helper()
	for _, name := range []string{"SECKILL_TEST_PG_STOP", "SECKILL_TEST_PG_START"} {
		if os.Getenv(name) != "" {
			continue
		}
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is not set; in CI every integration test must run (use scripts/test.sh)", name)
		}
		t.Skipf("%s is not set; run scripts/test.sh to test a database outage", name)
	}
	return os.Getenv("SECKILL_TEST_PG_STOP"), os.Getenv("SECKILL_TEST_PG_START")
}

// stopPostgres stops the throwaway cluster and returns the function that starts it
// again. Registered after the instance, its cleanup runs first and restarts the cluster
// should the test end early: other tests and packages share it, and the instance's
// database is dropped after this.
func stopPostgres(t *testing.T, stopPG, startPG string) (restart func() error) {
	t.Helper()
	down := false
	restart = func() error {
		out, err := exec.Command(startPG).CombinedOutput()
		if err != nil {
			return fmt.Errorf("%s: %v\n%s", startPG, err, out)
		}
		down = false
		return nil
	}
	t.Cleanup(func() {
		if down {
			if err := restart(); err != nil {
				t.Errorf("restart postgres: %v", err)
			}
		}
	})
	if out, err := exec.Command(stopPG).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", stopPG, err, out)
	}
	down = true
	return restart
}

// readiness reads /readyz.
func (fi *fulfillInstance) readiness() (int, map[string]any) {
	fi.t.Helper()
	return fi.call(http.MethodGet, "/readyz", "", nil)
}

// TestFulfillRidesOutADatabaseOutage stops PostgreSQL, fires a burst while it is down
// (grabs never touch the database, so they are still answered), checks the service
// reports itself not ready and stays up, then restarts PostgreSQL: every reservation
// is persisted exactly once, by the same process, without help.
func TestFulfillRidesOutADatabaseOutage(t *testing.T) {
	stopPG, startPG := pgOutage(t)
	fi := startFulfillInstance(t)
	const stock = 300
	id := fi.createVoucher(stock, 1)
	g := newGrabs()
	fi.prime(id, 40_000, g)

	startDB := stopPostgres(t, stopPG, startPG)
	stoppedAt := time.Now()

	testenv.Eventually(t, 3*time.Second, "/readyz reports the database down", func() (bool, string) {
		status, body := fi.readiness()
		checks, _ := body["checks"].(map[string]any)
		return status == http.StatusServiceUnavailable && checks["database"] == "down" && checks["redis"] == "ok",
			fmt.Sprintf("%d %v", status, body)
	})

	g.merge(fi.fireGrabs(id, burstUsers(40_001, 500, 100)))
	if got, want := len(g.reserved), stock; got != want {
		t.Fatalf("reserved while the database is down = %d, want %d", got, want)
	}
	// The worker has taken a batch it cannot persist: it is riding out the outage,
	// not merely idle through it.
	testenv.Eventually(t, 2*time.Second, "the worker holds a batch during the outage", func() (bool, string) {
		q := fi.queueState(id)
		return q.PEL > 0, q.String()
	})

	// Still up, still not ready, and an order is answered quickly: queued from Redis or
	// a clear 503, never a hang or a crash.
	if status, body := fi.call(http.MethodGet, "/healthz", "", nil); status != http.StatusOK {
		t.Fatalf("/healthz during the outage: %d %v", status, body)
	}
	if status, body := fi.readiness(); status != http.StatusServiceUnavailable {
		t.Fatalf("/readyz during the outage: %d %v, want 503", status, body)
	}
	for order, user := range g.reserved {
		began := time.Now()
		status, o := fi.call(http.MethodGet, "/api/v1/orders/"+order, fi.token(domain.UserID(user), false), nil)
		e, _ := o["error"].(map[string]any)
		if !(status == http.StatusOK && o["status"] == "queued") &&
			!(status == http.StatusServiceUnavailable && e["code"] == "unavailable") {
			t.Fatalf("owner reads order %s during the outage: %d %v, want 200 queued or 503 unavailable", order, status, o)
		}
		// Far above the request timeout, far below a wait on the stopped database.
		if took := time.Since(began); took > 15*time.Second {
			t.Fatalf("owner reads order %s during the outage: answered after %v", order, took)
		}
		break
	}
	if fi.cmd.ProcessState != nil {
		t.Fatalf("serve exited during the outage:\n%s", fi.logs)
	}

	if err := startDB(); err != nil {
		t.Fatal(err)
	}
	outage := time.Since(stoppedAt)
	t.Logf("postgres was down for %v", outage)

	testenv.Eventually(t, 10*time.Second, "/readyz ready again", func() (bool, string) {
		status, body := fi.readiness()
		return status == http.StatusOK, fmt.Sprintf("%d %v", status, body)
	})
	fi.waitSettled(id, len(g.reserved), 30*time.Second)
	fi.assertPersistedExactlyOnce(id, g)
	fi.assertStats(id, map[string]float64{
		"stock": stock, "remaining": 0, "queued": 0, "awaiting_payment": stock, "failed": 0, "pending": 0,
	})
	if fi.cmd.ProcessState != nil {
		t.Fatalf("serve exited:\n%s", fi.logs)
	}
}

// TestFulfillGracefulShutdownLosesNothing sends SIGTERM right after a burst: the process
// exits 0 within its shutdown timeout, leaves nothing in its own pending list (the
// batch in hand is finished), and a fresh process on the same database and prefix
// persists whatever was left, each reservation exactly once.
func TestFulfillGracefulShutdownLosesNothing(t *testing.T) {
	const shutdownTimeout = 10 * time.Second
	// Small batches keep the worker busy when SIGTERM arrives.
	fi := startFulfillInstance(t, "SECKILL_SHUTDOWN_TIMEOUT="+shutdownTimeout.String(), "SECKILL_BATCH_SIZE=10")
	const stock = 600
	id := fi.createVoucher(stock, 1)

	g := newGrabs()
	fi.prime(id, 60_000, g)
	g.merge(fi.fireGrabs(id, burstUsers(60_001, 900, 100)))
	if got, want := len(g.reserved), stock; got != want {
		t.Fatalf("reserved = %d, want %d", got, want)
	}

	sent := time.Now()
	if err := fi.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- fi.cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("serve exited with %v after SIGTERM:\n%s", err, fi.logs)
		}
	case <-time.After(shutdownTimeout + 5*time.Second):
		_ = fi.cmd.Process.Kill()
		<-done //nolint:errcheck // killed: its exit error tells nothing more
		t.Fatalf("serve did not exit within %v of SIGTERM:\n%s", shutdownTimeout+5*time.Second, fi.logs)
	}
	took := time.Since(sent)
	if took > shutdownTimeout {
		t.Fatalf("serve exited %v after SIGTERM, beyond its shutdown timeout %v", took, shutdownTimeout)
	}
	if got, want := fi.cmd.ProcessState.ExitCode(), 0; got != want {
		t.Fatalf("exit code %d, want %d", got, want)
	}

	atStop, err := fi.dbOrders(id)
	if err != nil {
		t.Fatal(err)
	}
	q := fi.queueState(id)
	t.Logf("stopped %v after SIGTERM: %d of %d orders persisted; queue %v", took, len(atStop), len(g.reserved), q)
	if q.PEL != 0 {
		t.Fatalf("after a graceful stop %d entries are left in pending lists %v: the batch in hand was not finished", q.PEL, q.Consumers)
	}
	for _, o := range atStop {
		if _, ok := g.reserved[o.ID]; !ok {
			t.Fatalf("order %s persisted but never answered 202", o.ID)
		}
	}
	// Nothing vanished at the stop: what is not persisted is still waiting in the stream.
	if got, want := int64(len(atStop))+q.Lag, int64(len(g.reserved)); got != want {
		t.Fatalf("persisted %d + undelivered %d = %d, want %d reservations", len(atStop), q.Lag, got, want)
	}

	fi.start() // a fresh process on the same database and prefix, default settings
	fi.waitSettled(id, len(g.reserved), 30*time.Second)
	fi.assertPersistedExactlyOnce(id, g)
	fi.assertStats(id, map[string]float64{
		"stock": stock, "remaining": 0, "queued": 0, "awaiting_payment": stock, "failed": 0, "pending": 0,
	})
}

// TestFulfillDeadLettersAPoisonMessage slips malformed entries into a voucher's stream
// between real grabs: the real reservations are persisted, each malformed entry goes
// to the dead-letter stream with its reason, no stock moves for it, and nothing stays
// pending.
func TestFulfillDeadLettersAPoisonMessage(t *testing.T) {
	fi := startFulfillInstance(t)
	const stock = 50
	id := fi.createVoucher(stock, 1)
	vid := fi.voucherID(id)
	ctx := context.Background()

	g := newGrabs()
	grab := func(user int64) {
		t.Helper()
		status, body := fi.call(http.MethodPost, "/api/v1/vouchers/"+id+"/grab", fi.token(domain.UserID(user), false), nil)
		order, _ := body["order_id"].(string)
		if status != http.StatusAccepted || order == "" || body["status"] != "queued" {
			t.Fatalf("grab by user %d: %d %v", user, status, body)
		}
		g.reserved[order] = user
		g.holder[user] = order
	}
	for u := int64(80_001); u <= 80_010; u++ {
		grab(u)
	}
	poison := map[string]map[string]any{ // what each entry lacks → its fields
		"user":  {"order": "01POISONUSER000000000000000", "voucher": id, "user": "not-a-number", "qty": "1", "at": "1700000000000"},
		"order": {"voucher": id, "user": "80100", "qty": "1", "at": "1700000000000"},
		"voucher": {"order": "01POISONVOUCHER0000000000000", "voucher": "999999999", "user": "80101", "qty": "1",
			"at": "1700000000000"},
	}
	field := map[string]string{} // entry id → the field its reason must name
	for f, values := range poison {
		entry, err := fi.redis.XAdd(ctx, &redis.XAddArgs{Stream: fi.keys.Stream(vid), Values: values}).Result()
		if err != nil {
			t.Fatal(err)
		}
		field[entry] = f
	}
	for u := int64(80_011); u <= 80_020; u++ {
		grab(u)
	}

	var dead []redis.XMessage
	testenv.Eventually(t, 20*time.Second, "real reservations persisted and poison dead-lettered", func() (bool, string) {
		orders, err := fi.dbOrders(id)
		if err != nil {
			return false, err.Error()
		}
		dead, err = fi.redis.XRange(ctx, fi.keys.Dead(vid), "-", "+").Result()
		if err != nil {
			return false, err.Error()
		}
		st := fi.stats(id)
		return len(orders) >= len(g.reserved) && len(dead) >= len(poison) && st["pending"] == 0,
			fmt.Sprintf("%d orders, %d dead letters, stats %v", len(orders), len(dead), st)
	})
	fi.assertPersistedExactlyOnce(id, g)
	if got, want := len(dead), len(poison); got != want {
		t.Fatalf("dead letters = %d, want %d: %v", got, want, dead)
	}
	for _, d := range dead {
		entry, _ := d.Values["entry_id"].(string)
		f, ok := field[entry]
		if !ok {
			t.Fatalf("dead letter %v names entry %q, not one of the poison entries %v", d.Values, entry, field)
		}
		delete(field, entry)
		reason, _ := d.Values["reason"].(string)
		if !strings.HasPrefix(reason, "malformed entry") || !strings.Contains(reason, `"`+f+`"`) {
			t.Fatalf("dead letter of entry %s: reason %q, want a malformed entry naming field %q", entry, reason, f)
		}
		if got, want := d.Values["stream"], fi.keys.Stream(vid); got != want {
			t.Fatalf("dead letter of entry %s: stream %v, want %s", entry, got, want)
		}
	}
	if q := fi.queueState(id); q.PEL != 0 || q.Lag != 0 {
		t.Fatalf("queue after the dead letters: %v, want nothing pending", q)
	}
	reserved := float64(len(g.reserved))
	fi.assertStats(id, map[string]float64{
		"stock": stock, "remaining": stock - reserved, "queued": 0, "awaiting_payment": reserved,
		"failed": 0, "pending": 0,
	})
	if status, body := fi.call(http.MethodGet, "/readyz", "", nil); status != http.StatusOK {
		t.Fatalf("/readyz after a poison message: %d %v", status, body)
	}
	if fi.cmd.ProcessState != nil {
		t.Fatalf("serve exited:\n%s", fi.logs)
	}
}
