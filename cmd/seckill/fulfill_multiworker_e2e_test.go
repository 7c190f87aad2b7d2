package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/adapters/redisstore"
	"github.com/seckill/seckill/adapters/testenv"
)

// entryOf returns the id of the entry of stream that carries order.
func entryOf(t *testing.T, rdb redis.UniversalClient, stream, order string) string {
	t.Helper()
	entries, err := rdb.XRange(context.Background(), stream, "-", "+").Result()
	if err != nil {
		t.Fatalf("xrange %s: %v", stream, err)
	}
	// The entry's one field ends with the order id (user:qty:at:order).
	for _, e := range entries {
		if v, _ := e.Values["r"].(string); strings.HasSuffix(v, ":"+order) {
			return e.ID
		}
	}
	t.Fatalf("no entry of %s carries order %s", stream, order)
	return ""
}

// startWorkerOnly starts one more `seckill serve` with SECKILL_ROLES=worker on fi's
// database and prefix (so a consumer of its own); it is stopped with SIGTERM when the
// test ends.
func (fi *fulfillInstance) startWorkerOnly() *exec.Cmd {
	fi.t.Helper()
	env := append(append([]string{}, fi.env...), "SECKILL_ROLES=worker")
	cmd := exec.Command(seckillBinary(fi.t), "serve")
	cmd.Env = env
	logs := &bytes.Buffer{} // its own: fi.logs is written by fi's process
	cmd.Stdout = logs
	cmd.Stderr = logs
	if err := cmd.Start(); err != nil {
		fi.t.Fatal(err)
	}
	fi.t.Cleanup(func() {
		if cmd.ProcessState != nil {
			return
		}
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				fi.t.Errorf("worker exited with %v:\n%s", err, logs)
			}
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
			<-done //nolint:errcheck // killed: its exit error tells nothing more
			fi.t.Errorf("worker did not stop on SIGTERM:\n%s", logs)
		}
		if fi.t.Failed() {
			fi.t.Logf("worker-only process log:\n%s", logs)
		}
	})
	return cmd
}

// TestFulfillOutageWithMoreWorkersThanTheDeliveryLimit runs two worker processes with
// SECKILL_MAX_DELIVERIES=1 (in general: more workers than the delivery limit) and a
// short claim idle, and grabs once while PostgreSQL is down. The worker that read the
// reservation holds it, retrying; the idle one claims it once it has been idle for
// SECKILL_CLAIM_IDLE, which counts as another delivery — the test waits for that
// redelivery. An outage is not a poison message: nothing is dead-lettered, and once the
// database is back the reservation must be one live order, Redis and PostgreSQL must
// agree on the units, and the user's repeated grab must answer with that order.
func TestFulfillOutageWithMoreWorkersThanTheDeliveryLimit(t *testing.T) {
	stopPG, startPG := pgOutage(t)
	fi := startFulfillInstance(t, "SECKILL_CLAIM_IDLE=1s", "SECKILL_MAX_DELIVERIES=1")
	const stock = 10
	id := fi.createVoucher(stock, 1)
	vid := fi.voucherID(id)
	ctx := context.Background()

	g := newGrabs()
	fi.prime(id, 1, g)
	fi.startWorkerOnly()
	// A consumer appears in the group with its first delivery: prime until both have one.
	user := int64(100)
	testenv.Eventually(t, 10*time.Second, "both workers consuming", func() (bool, string) {
		q := fi.queueState(id)
		if len(q.Consumers) == 2 {
			return true, q.String()
		}
		user++
		fi.prime(id, user, g)
		return false, q.String()
	})

	startDB := stopPostgres(t, stopPG, startPG)

	const buyer = 2
	status, body := fi.call(http.MethodPost, "/api/v1/vouchers/"+id+"/grab", fi.token(buyer, false), nil)
	order, _ := body["order_id"].(string)
	if status != http.StatusAccepted || order == "" {
		t.Fatalf("grab during the outage: %d %v", status, body)
	}
	g.reserved[order], g.holder[buyer] = buyer, order

	// The reservation's entry is delivered to one worker, which holds it, retrying,
	// while the database is down. Once it has been idle there for SECKILL_CLAIM_IDLE,
	// the other worker claims it: a second delivery, past the delivery limit, to
	// another consumer — and no dead letter.
	stream := fi.keys.Stream(vid)
	entry := entryOf(t, fi.redis, stream, order)
	pending := func() (redis.XPendingExt, bool) {
		p, err := fi.redis.XPendingExt(ctx, &redis.XPendingExtArgs{Stream: stream, Group: redisstore.DefaultGroup,
			Start: entry, End: entry, Count: 1}).Result()
		if err != nil || len(p) == 0 {
			return redis.XPendingExt{}, false
		}
		return p[0], true
	}
	var first redis.XPendingExt
	testenv.Eventually(t, 30*time.Second, "the reservation delivered to a worker", func() (bool, string) {
		p, ok := pending()
		first = p
		return ok, fmt.Sprintf("pending %v, queue %v", p, fi.queueState(id))
	})
	testenv.Eventually(t, 60*time.Second, "the reservation redelivered to the other worker", func() (bool, string) {
		if dead, _ := fi.redis.XLen(ctx, fi.keys.Dead(vid)).Result(); dead > 0 {
			t.Fatalf("the outage dead-lettered %d reservations (an outage is not a poison message)", dead)
		}
		p, ok := pending()
		// Seen first at its first delivery, the claim moves it to the other worker.
		moved := first.RetryCount >= 2 || p.Consumer != first.Consumer
		return ok && p.RetryCount >= 2 && moved, fmt.Sprintf("first %v, now %v", first, p)
	})
	remaining, _ := fi.redis.HGet(ctx, fi.keys.Meta(vid), "remaining").Result()
	t.Logf("redelivered during the outage: redis remaining %s, queue %v", remaining, fi.queueState(id))

	if err := startDB(); err != nil {
		t.Fatal(err)
	}
	fi.waitSettled(id, len(g.reserved), 30*time.Second)

	st := fi.stats(id)
	dead, _ := fi.redis.XRange(ctx, fi.keys.Dead(vid), "-", "+").Result()
	t.Logf("after recovery: stats %v, dead letters %v", st, dead)
	if got, want := st["remaining"]+st["queued"]+st["awaiting_payment"]+st["paid"], st["stock"]; got != want {
		t.Errorf("Redis and PostgreSQL disagree: remaining %v + queued %v + awaiting_payment %v + paid %v = %v, want stock %v",
			st["remaining"], st["queued"], st["awaiting_payment"], st["paid"], got, want)
	}
	status, o := fi.call(http.MethodGet, "/api/v1/orders/"+order, fi.token(buyer, false), nil)
	if status != http.StatusOK || o["status"] != "awaiting_payment" {
		t.Errorf("the buyer reads order %s: %d %v, want 200 awaiting_payment", order, status, o)
	}
	status, again := fi.call(http.MethodPost, "/api/v1/vouchers/"+id+"/grab", fi.token(buyer, false), nil)
	e, _ := again["error"].(map[string]any)
	if status != http.StatusConflict || e["code"] != "already_purchased" || e["order_id"] != order {
		t.Errorf("the buyer grabs again while holding %s: %d %v, want 409 already_purchased naming it", order, status, again)
	}
	if len(dead) > 0 {
		t.Errorf("the outage dead-lettered %d reservations (an outage is not a poison message): %v", len(dead), dead)
	}
	if t.Failed() {
		t.FailNow()
	}
	fi.assertPersistedExactlyOnce(id, g)
}
