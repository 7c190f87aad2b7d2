package main

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/adapters/testenv"
	"github.com/seckill/seckill/cmd/internal/burst"
	"github.com/seckill/seckill/domain"
)

// another starts one more `seckill serve` with fi's settings (Redis, database, key
// prefix) and extraEnv on an address of its own, stopped when the test ends.
func (fi *fulfillInstance) another(extraEnv ...string) *fulfillInstance {
	fi.t.Helper()
	addr := freeAddr(fi.t)
	env := append(append(slices.Clone(fi.env), "SECKILL_HTTP_ADDR="+addr), extraEnv...)
	in := &instance{t: fi.t, base: "http://" + addr, env: env, logs: &syncBuffer{},
		tokens: fi.tokens, redis: fi.redis, keys: fi.keys, dbURL: fi.dbURL}
	in.start()
	fi.t.Cleanup(in.stop)
	return &fulfillInstance{instance: in}
}

// grabAt is one grab of a burst spread over instances and vouchers.
type grabAt struct {
	user    int64
	voucher string
}

// fireAt fires grabs at fi all at once and returns the answers, in order. When fi may
// be killed meanwhile, a burst that could not even open its connections is no error:
// every one of its grabs is answered with that failure (an unknown outcome).
func (fi *fulfillInstance) fireAt(gs []grabAt, mayDie bool) []burst.Result {
	reqs := make([]burst.Request, len(gs))
	for i, g := range gs {
		reqs[i] = burst.Request{Path: "/api/v1/vouchers/" + g.voucher + "/grab", Token: fi.token(domain.UserID(g.user), false)}
	}
	results, _, err := burst.Fire(context.Background(), fi.base, reqs, burst.Options{})
	if err != nil {
		if !mayDie {
			fi.t.Error(err)
			return results
		}
		results = make([]burst.Result, len(gs))
		for i := range results {
			results[i].Err = err
		}
	}
	return results
}

// TestInstancesShareASaleThroughAKillNine runs three `serve` processes on one Redis
// (the cluster, in scripts/test.sh's cluster pass) and one PostgreSQL, and fires a
// burst spread over all three and over four vouchers (in different slots on a
// cluster), some users grabbing the same voucher through two instances. One instance
// is killed with SIGKILL mid-burst: its answers are lost, so for each of its grabs (and
// each grab answered 503, whose outcome the contract leaves unknown) the user's orders
// (queued ones included) are read through a live instance. Every reservation then becomes exactly one order
// (claimed from the dead consumer where it held them), no user holds two, the stats
// add up and reconcile finds nothing. Last, a cancelled order's unit is grabbable
// through every live instance at once: the restock signal, not the sold-out flag's
// TTL (one minute here), clears the flags.
func TestInstancesShareASaleThroughAKillNine(t *testing.T) {
	a := startFulfillInstance(t, "SECKILL_CLAIM_IDLE=2s", "SECKILL_BATCH_SIZE=10", "SECKILL_SOLD_OUT_TTL=1m")
	killed := "killed-" + testenv.Unique()
	b, c := a.another(), a.another("SECKILL_CONSUMER="+killed)
	const vouchers, stock, perInstance = 4, 150, 900
	ids := make([]string, vouchers)
	for i := range ids {
		ids[i] = a.createVoucher(stock, 1)
	}
	if cc, ok := a.redis.(*redis.ClusterClient); ok {
		nodes := map[string]bool{}
		for _, id := range ids {
			node, err := cc.MasterForKey(context.Background(), a.keys.Stream(a.voucherID(id)))
			if err != nil {
				t.Fatal(err)
			}
			nodes[node.Options().Addr] = true
		}
		t.Logf("the %d vouchers' streams live on %d cluster nodes", vouchers, len(nodes))
		if len(nodes) < 2 {
			t.Fatal("the vouchers' streams all live on one node; want them spread")
		}
	}
	// Every voucher's stream is being read by the workers before the burst.
	byVoucher := map[string]grabs{}
	for i, id := range ids {
		byVoucher[id] = newGrabs()
		a.prime(id, int64(90_000+i), byVoucher[id])
	}

	// Distinct users per instance, spread over the vouchers; the first 50 of a's also
	// grab the same voucher through b.
	instances := []*fulfillInstance{a, b, c}
	plans := make([][]grabAt, len(instances))
	for i := range instances {
		for k := range perInstance {
			user := int64(100_000 + i*perInstance + k)
			plans[i] = append(plans[i], grabAt{user: user, voucher: ids[k%vouchers]})
		}
	}
	plans[1] = append(plans[1], plans[0][:50]...)

	results := make([][]burst.Result, len(instances))
	var wg sync.WaitGroup
	for i, in := range instances {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = in.fireAt(plans[i], in == c)
		}()
	}
	// Kill c once the burst is well under way: a third of the units reserved.
	testenv.Eventually(t, 60*time.Second, "the burst under way", func() (bool, string) {
		var n int64
		for _, id := range ids {
			n += a.streamLen(id)
		}
		return n >= vouchers*stock/3, fmt.Sprintf("%d entries", n)
	})
	c.kill()
	wg.Wait()
	held := 0
	for _, id := range ids {
		held += int(a.queueState(id).Consumers[killed])
	}
	t.Logf("the killed instance's consumer held %d reservations, for the others to claim", held)

	// Tally: 202s as answered; grabs whose answer was lost with c are asked again.
	var unknown []grabAt
	counts := map[string]int{}
	record := func(g grabAt, status int, code, order string) {
		v := byVoucher[g.voucher]
		switch {
		case status == http.StatusAccepted || status == http.StatusConflict && code == "already_purchased" && order != "":
			if prev, ok := v.holder[g.user]; ok && prev != order {
				t.Fatalf("user %d holds %s and %s of voucher %s", g.user, prev, order, g.voucher)
			}
			if other, ok := v.reserved[order]; ok && other != g.user {
				t.Fatalf("order %s answered to users %d and %d", order, other, g.user)
			}
			v.holder[g.user], v.reserved[order] = order, g.user
			if status == http.StatusAccepted {
				counts["reserved"]++
			} else {
				counts["already_purchased"]++
			}
		case status == http.StatusConflict && code == "sold_out":
			counts["sold_out"]++
		default:
			t.Fatalf("grab by user %d of voucher %s: unexpected answer %d %q", g.user, g.voucher, status, code)
		}
	}
	lost := 0
	for i := range instances {
		for k, r := range results[i] {
			if r.Err != nil || r.Status == 0 {
				if i != 2 {
					t.Fatalf("grab %d through a live instance: %v", k, r.Err)
				}
				lost++
				unknown = append(unknown, plans[i][k])
				continue
			}
			if r.Status == http.StatusServiceUnavailable && r.Code == "unavailable" {
				// Nothing done, or the outcome unknown (the contract's 503): asked below.
				counts["unavailable"]++
				unknown = append(unknown, plans[i][k])
				continue
			}
			record(plans[i][k], r.Status, r.Code, r.OrderID)
		}
	}
	for _, g := range unknown {
		// The user's orders, queued ones included, say whether the lost grab reserved;
		// asked again while the service answers 503 (a breaker closing after the burst).
		var status int
		var body map[string]any
		testenv.Eventually(t, 30*time.Second, "the user's orders", func() (bool, string) {
			status, body = a.call(http.MethodGet, "/api/v1/orders?voucher_id="+g.voucher, a.token(domain.UserID(g.user), false), nil)
			return status != http.StatusServiceUnavailable, fmt.Sprintf("%d %v", status, body)
		})
		listed, _ := body["orders"].([]any)
		if status != http.StatusOK || len(listed) > 1 {
			t.Fatalf("user %d lists its orders of voucher %s: %d %v", g.user, g.voucher, status, body)
		}
		if len(listed) == 1 {
			order, _ := listed[0].(map[string]any)["order_id"].(string)
			record(g, http.StatusAccepted, "", order)
		}
	}
	t.Logf("burst answered: %v (with the %d grabs whose answers were lost with the killed instance, and the 503s, read from their users' orders)", counts, lost)

	for _, id := range ids {
		if got, want := len(byVoucher[id].reserved), stock; got != want {
			t.Fatalf("voucher %s: %d reservations, want its stock %d", id, got, want)
		}
	}
	for _, id := range ids {
		a.waitSettled(id, stock, 60*time.Second)
		a.assertPersistedExactlyOnce(id, byVoucher[id])
		a.assertStats(id, map[string]float64{
			"stock": stock, "remaining": 0, "queued": 0, "awaiting_payment": stock, "failed": 0, "pending": 0,
			"oldest_queued_ms": 0,
		})
		if code, report := a.reconcileCLI(id, false); code != 0 {
			t.Fatalf("reconcile voucher %s: exit %d, %v", id, code, report)
		}
	}
	if status, body := b.readiness(); status != http.StatusOK || body["fulfilment"] != "ok" {
		t.Fatalf("/readyz after the sale: %d %v, want 200 with fulfillment ok", status, body)
	}

	// Every live instance answers sold_out from its own flag now; a cancel puts a unit
	// back, and each of them sells it again long before the flag's minute is up.
	live := []*fulfillInstance{a, b}
	id := ids[0]
	for i, in := range live {
		status, body := in.call(http.MethodPost, "/api/v1/vouchers/"+id+"/grab", in.token(domain.UserID(95_000+i), false), nil)
		if status != http.StatusConflict || errorField(body, "code") != "sold_out" {
			t.Fatalf("grab through instance %d of a sold-out voucher: %d %v", i, status, body)
		}
	}
	// Two units back, one for each live instance.
	cancelled := 0
	for order, buyer := range byVoucher[id].reserved {
		if status, body := a.act("cancel", order, buyer); status != http.StatusOK {
			t.Fatalf("cancel %s: %d %v", order, status, body)
		}
		if cancelled++; cancelled == len(live) {
			break
		}
	}
	for i, in := range live {
		took := testenv.Eventually(t, 10*time.Second, fmt.Sprintf("instance %d selling a returned unit", i), func() (bool, string) {
			status, body := in.call(http.MethodPost, "/api/v1/vouchers/"+id+"/grab", in.token(domain.UserID(96_000+i), false), nil)
			return status == http.StatusAccepted, fmt.Sprintf("%d %v", status, body)
		})
		t.Logf("instance %d sold a returned unit %v after the cancels", i, took)
	}
}

// TestReadinessReportsAStalledFulfillment runs the API without a worker: a reservation
// waits, and once it has waited over 30 s /readyz says fulfillment is stalled while
// still answering 200, and the voucher's stats say how long it has waited. A worker
// that starts clears both.
func TestReadinessReportsAStalledFulfillment(t *testing.T) {
	fi := startFulfillInstance(t, "SECKILL_ROLES=api")
	id := fi.createVoucher(10, 1)
	status, body := fi.call(http.MethodPost, "/api/v1/vouchers/"+id+"/grab", fi.token(7, false), nil)
	if status != http.StatusAccepted {
		t.Fatalf("grab: %d %v", status, body)
	}
	if status, body := fi.readiness(); status != http.StatusOK || body["fulfilment"] != "ok" {
		t.Fatalf("/readyz with a fresh reservation: %d %v, want 200 with fulfillment ok", status, body)
	}
	testenv.Eventually(t, 60*time.Second, "/readyz reporting the stalled fulfillment", func() (bool, string) {
		status, body := fi.readiness()
		return status == http.StatusOK && body["fulfilment"] == "stalled", fmt.Sprintf("%d %v", status, body)
	})
	if st := fi.stats(id); st["oldest_queued_ms"] < 30_000 || st["queued"] != 1 {
		t.Fatalf("stats of the stalled voucher: %v, want queued 1 and oldest_queued_ms over 30,000", st)
	}

	fi.startWorkerOnly()
	fi.waitSettled(id, 1, 30*time.Second)
	if status, body := fi.readiness(); status != http.StatusOK || body["fulfilment"] != "ok" {
		t.Fatalf("/readyz once persisted: %d %v, want 200 with fulfillment ok", status, body)
	}
	if st := fi.stats(id); st["oldest_queued_ms"] != 0 {
		t.Fatalf("stats once persisted: %v, want oldest_queued_ms 0", st)
	}
}
