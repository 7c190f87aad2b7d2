package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/adapters/testenv"
	"github.com/seckill/seckill/cmd/internal/burst"
	"github.com/seckill/seckill/domain"
)

// sentinelSetup is what scripts/services.sh's start_sentinel made: a master, one
// replica and one sentinel watching them.
type sentinelSetup struct {
	addrs, master         string
	masterPID, replicaPID int
	// restartMaster starts the killed master again, as a replica of the promoted one.
	restartMaster string
}

// sentinels reads start_sentinel's variables, with the skip or fail rule of the other
// integration tests.
func sentinels(t *testing.T) sentinelSetup {
	t.Helper()
	names := []string{"SECKILL_TEST_SENTINEL_ADDRS", "SECKILL_TEST_SENTINEL_MASTER", "SECKILL_TEST_SENTINEL_MASTER_PID",
		"SECKILL_TEST_SENTINEL_REPLICA_PID", "SECKILL_TEST_SENTINEL_MASTER_START"}
	for _, name := range names {
		if os.Getenv(name) != "" {
			continue
		}
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is not set; in CI every integration test must run (use scripts/test.sh)", name)
		}
		t.Skipf("%s is not set; run scripts/test.sh to test a Sentinel failover", name)
	}
	var pids [2]int
	for i, name := range []string{"SECKILL_TEST_SENTINEL_MASTER_PID", "SECKILL_TEST_SENTINEL_REPLICA_PID"} {
		var err error
		if pids[i], err = strconv.Atoi(os.Getenv(name)); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	return sentinelSetup{addrs: os.Getenv("SECKILL_TEST_SENTINEL_ADDRS"), master: os.Getenv("SECKILL_TEST_SENTINEL_MASTER"),
		masterPID: pids[0], replicaPID: pids[1], restartMaster: os.Getenv("SECKILL_TEST_SENTINEL_MASTER_START")}
}

// TestSentinelFailoverLosesNoAcceptedGrab runs serve on the master a Redis Sentinel
// watches, with SECKILL_REDIS_MIN_REPLICAS=1 and no worker until after the failover
// (so every reservation lives in Redis only). Burst A sells a third of the units,
// confirmed by the replica; burst B another third while the replica is stopped: none
// is answered 202, as no replica confirms it. Then the master is killed with SIGKILL
// and the replica continues (with what of B its socket had received, or none). The
// sentinel promotes it and the service follows: every user told 202 is, asked again, told
// already_purchased with the same order, 503s meanwhile retried as the contract says.
// The worker persists them from there; once the old master is back as a replica, B's
// users, retried, and a last burst of newcomers buy the units left with 202s. Every
// 202 becomes exactly one order, no user holds two, the stats add up and reconcile
// (through the sentinel) finds nothing.
func TestSentinelFailoverLosesNoAcceptedGrab(t *testing.T) {
	s := sentinels(t)
	ctx := context.Background()
	fi := startFulfillInstance(t, "SECKILL_REDIS_URL=", "SECKILL_REDIS_SENTINELS="+s.addrs, "SECKILL_REDIS_MASTER_NAME="+s.master,
		"SECKILL_REDIS_MIN_REPLICAS=1", "SECKILL_CLAIM_IDLE=2s", "SECKILL_USER_RATE=0", "SECKILL_SOLD_OUT_TTL=0",
		// No worker until after the failover: at the kill every reservation lives in
		// Redis only, as the slowest worker would leave it.
		"SECKILL_ROLES=api")
	// The test's own reads of the queue go to whichever server is master.
	rdb := redis.NewFailoverClient(&redis.FailoverOptions{MasterName: s.master, SentinelAddrs: strings.Split(s.addrs, ",")})
	t.Cleanup(func() { _ = rdb.Close() })
	fi.redis = rdb
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("serve's log:\n%s", fi.logs)
		}
	})
	sentinel := redis.NewSentinelClient(&redis.Options{Addr: strings.Split(s.addrs, ",")[0]})
	t.Cleanup(func() { _ = sentinel.Close() })
	oldMaster, err := sentinel.GetMasterAddrByName(ctx, s.master).Result()
	if err != nil {
		t.Fatal(err)
	}

	const stock = 300
	id := fi.createVoucher(stock, 1)
	g := newGrabs()
	counts := map[string]int{}
	// record takes one definitive answer to user's grab.
	record := func(user int64, r burst.Result) {
		switch {
		case r.Status == http.StatusAccepted || r.Status == http.StatusConflict && r.Code == "already_purchased" && r.OrderID != "":
			if prev, ok := g.holder[user]; ok && prev != r.OrderID {
				t.Fatalf("user %d holds %s and %s", user, prev, r.OrderID)
			}
			if other, ok := g.reserved[r.OrderID]; ok && other != user {
				t.Fatalf("order %s answered to users %d and %d", r.OrderID, other, user)
			}
			g.holder[user], g.reserved[r.OrderID] = r.OrderID, user
		case r.Status == http.StatusConflict && r.Code == "sold_out":
		default:
			t.Fatalf("grab by user %d: unexpected answer %d %q", user, r.Status, r.Code)
		}
	}
	// fire fires a burst of grabs by users and returns those answered 503, recording
	// every other answer.
	fire := func(users []int64) (unknown []int64) {
		reqs := make([]burst.Request, len(users))
		for i, u := range users {
			reqs[i] = burst.Request{Path: "/api/v1/vouchers/" + id + "/grab", Token: fi.token(domain.UserID(u), false)}
		}
		results, _, err := burst.Fire(ctx, fi.base, reqs, burst.Options{})
		if err != nil {
			t.Fatal(err)
		}
		for i, r := range results {
			if r.Err != nil {
				t.Fatalf("grab by user %d: %v", users[i], r.Err)
			}
			key := fmt.Sprintf("%d %s", r.Status, r.Code)
			counts[key]++
			if r.Status == http.StatusServiceUnavailable && r.Code == "unavailable" {
				unknown = append(unknown, users[i])
				continue
			}
			record(users[i], r)
		}
		return unknown
	}
	// retry asks again, one grab at a time, until the service answers other than 503.
	retry := func(users []int64) {
		for _, u := range users {
			testenv.Eventually(t, 60*time.Second, fmt.Sprintf("user %d's grab answered", u), func() (bool, string) {
				status, body := fi.call(http.MethodPost, "/api/v1/vouchers/"+id+"/grab", fi.token(domain.UserID(u), false), nil)
				if status == http.StatusServiceUnavailable {
					return false, fmt.Sprintf("%d %v", status, body)
				}
				order, _ := body["order_id"].(string)
				if order == "" {
					order, _ = errorField(body, "order_id").(string)
				}
				code, _ := errorField(body, "code").(string)
				record(u, burst.Result{Status: status, Code: code, OrderID: order})
				return true, ""
			})
		}
	}

	// Burst A, a third of the units, confirmed by the replica.
	unknown := fire(burstUsers(10_001, stock/3, 20))
	t.Logf("burst A answered %v", counts)
	// Burst B, another third, while the replica is stopped (SIGSTOP): reserved on the
	// master, no replica confirming them, so answered 503, the outcome unknown.
	if err := syscall.Kill(s.replicaPID, syscall.SIGSTOP); err != nil {
		t.Fatalf("stop the replica (pid %d): %v", s.replicaPID, err)
	}
	t.Cleanup(func() { _ = syscall.Kill(s.replicaPID, syscall.SIGCONT) })
	clear(counts)
	unknown = append(unknown, fire(burstUsers(20_001, stock/3, 0))...)
	t.Logf("burst B answered %v", counts)
	if counts["202 "] != 0 {
		t.Errorf("%d grabs answered 202 while no replica could confirm them", counts["202 "])
	}
	// The master dies, then the replica goes on.
	if err := syscall.Kill(s.masterPID, syscall.SIGKILL); err != nil {
		t.Fatalf("kill -9 the master (pid %d): %v", s.masterPID, err)
	}
	killedAt := time.Now()
	if err := syscall.Kill(s.replicaPID, syscall.SIGCONT); err != nil {
		t.Fatalf("continue the replica (pid %d): %v", s.replicaPID, err)
	}
	if atKill, err := fi.dbOrders(id); err != nil || len(atKill) != 0 {
		t.Fatalf("orders persisted at the kill without a worker: %d, %v", len(atKill), err)
	}
	acked := make(map[int64]string, len(g.holder))
	for u, order := range g.holder {
		acked[u] = order
	}
	t.Logf("at the kill: %d grabs to retry, %d users hold a reservation", len(unknown), len(acked))

	testenv.Eventually(t, 60*time.Second, "the sentinel promoting the replica", func() (bool, string) {
		now, err := sentinel.GetMasterAddrByName(ctx, s.master).Result()
		if err != nil {
			return false, err.Error()
		}
		return now[1] != oldMaster[1], fmt.Sprint(now)
	})
	t.Logf("the sentinel promoted the replica %v after the kill", time.Since(killedAt))

	// The service follows: every holder of a 202 (or of an order, told so by
	// already_purchased) is told it holds that order, by the promoted replica. They
	// ask all at once (one WAIT for many, with no replica left to confirm it), the
	// ones answered 503 again until none is.
	asking := make([]int64, 0, len(acked))
	for u := range acked {
		asking = append(asking, u)
	}
	testenv.Eventually(t, 60*time.Second, "every holder told its order after the failover", func() (bool, string) {
		reqs := make([]burst.Request, len(asking))
		for i, u := range asking {
			reqs[i] = burst.Request{Path: "/api/v1/vouchers/" + id + "/grab", Token: fi.token(domain.UserID(u), false)}
		}
		results, _, err := burst.Fire(ctx, fi.base, reqs, burst.Options{})
		if err != nil {
			t.Fatal(err)
		}
		var again []int64
		for i, r := range results {
			u := asking[i]
			switch {
			case r.Err == nil && r.Status == http.StatusServiceUnavailable:
				again = append(again, u)
			case r.Err != nil || r.Status != http.StatusConflict || r.Code != "already_purchased" || r.OrderID != acked[u]:
				t.Fatalf("user %d, told it holds order %s before the failover, grabbed after it: %d %q %q %v",
					u, acked[u], r.Status, r.Code, r.OrderID, r.Err)
			}
		}
		asking = again
		return len(asking) == 0, fmt.Sprintf("%d answered 503", len(asking))
	})
	t.Logf("all %d holders told their order after the failover, %v after the kill", len(acked), time.Since(killedAt))

	// The worker starts: the reservations are read from the promoted replica.
	fi.stop()
	fi.env = append(fi.env, "SECKILL_ROLES=api,worker")
	fi.start()

	// The old master comes back as a replica, so grabs can be confirmed again.
	if out, err := exec.Command(s.restartMaster).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", s.restartMaster, err, out)
	}
	testenv.Eventually(t, 60*time.Second, "a replica in sync with the new master", func() (bool, string) {
		info, err := rdb.Info(ctx, "replication").Result()
		return err == nil && strings.Contains(info, "connected_slaves:1") && strings.Contains(info, "state=online"), fmt.Sprint(info, err)
	})
	retry(unknown)
	before := len(g.reserved)
	// A second burst of newcomers: the units left sell with 202s, retried on a 503.
	clear(counts)
	retry(fire(burstUsers(30_001, stock, 0)))
	t.Logf("after the failover: the last burst answered %v; %d reservations in all", counts, len(g.reserved))
	if counts["202 "] == 0 {
		t.Errorf("no grab answered 202 after the failover (reserved %d before the last burst)", before)
	}
	if got := len(g.reserved); got != stock {
		t.Fatalf("reservations = %d, want the stock %d", got, stock)
	}

	fi.waitSettled(id, stock, 60*time.Second)
	fi.assertPersistedExactlyOnce(id, g)
	fi.assertStats(id, map[string]float64{
		"stock": stock, "remaining": 0, "queued": 0, "awaiting_payment": stock, "failed": 0, "pending": 0,
	})
	if code, report := fi.reconcileCLI(id, false); code != 0 {
		t.Fatalf("reconcile through the sentinel: exit %d, %v", code, report)
	}
}
