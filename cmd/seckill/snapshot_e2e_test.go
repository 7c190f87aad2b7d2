package main

import (
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/seckill/seckill/domain"
)

// TestStaleSnapshotAfterRegrabs: Redis comes back from a snapshot taken before users
// cancelled their orders and grabbed again. The snapshot names each of them as the
// buyer of the order they cancelled; the database holds their new, live order. The
// heal must make Redis name the live order — whatever the snapshot holds — so the
// cancelled order's release cannot free the live order's unit: every holder is
// answered with the order they hold, exactly the units left sell, none of the
// accepted grabs ends failed, and the stats add up.
func TestStaleSnapshotAfterRegrabs(t *testing.T) {
	staleSnapshotAfterRegrabs(t, false)
}

// TestStaleSnapshotAfterRegrabsWithTheInstanceRestarted: the same, but the only
// instance dies with Redis and a new one starts after Redis is back, so no running
// process saw the server change: the new instance must still find that Redis is not
// the one whose state was last made whole, and heal it before taking grabs.
func TestStaleSnapshotAfterRegrabsWithTheInstanceRestarted(t *testing.T) {
	staleSnapshotAfterRegrabs(t, true)
}

func staleSnapshotAfterRegrabs(t *testing.T, restartInstance bool) {
	stopRedis, startRedis := redisOutage(t)
	stopPG, startPG := pgOutage(t)
	// The snapshot holds entries delivered while the database was down, pending for
	// the consumer that read them: a short claim-idle has them delivered again soon
	// after Redis comes back, so the test need not wait the default 30 s.
	fi := startFulfillInstance(t, "SECKILL_WARM_INTERVAL=1h", "SECKILL_RECONCILE_INTERVAL=0", "SECKILL_CLAIM_IDLE=1s")
	dump := filepath.Join(filepath.Dir(stopRedis), "dump.rdb")
	// The restarts of the tests after this one must come back empty, as they expect.
	t.Cleanup(func() { _ = os.Remove(dump) })
	const stock = 100
	id := fi.createVoucher(stock, 1)

	holders := map[int64]string{}
	keep := func(g grabs) {
		for user, order := range g.holder {
			holders[user] = order
		}
	}
	// Users 1–50 buy, persisted; users 51–60 buy while the database is down, so their
	// entries are still in the stream when the snapshot is taken.
	keep(fi.fireGrabs(id, burstUsers(1, 50, 0)))
	fi.waitSettled(id, 50, 30*time.Second)
	restartPG := stopPostgres(t, stopPG, startPG)
	keep(fi.fireGrabs(id, burstUsers(51, 10, 0)))
	if err := fi.redis.Save(context.Background()).Err(); err != nil {
		t.Fatalf("SAVE: %v", err)
	}
	if err := restartPG(); err != nil {
		t.Fatal(err)
	}
	fi.waitSettled(id, 60, 60*time.Second)

	// After the snapshot: users 1–20 cancel and grab again, users 61–70 buy.
	for user := int64(1); user <= 20; user++ {
		if status, body := fi.act("cancel", holders[user], user); status != http.StatusOK {
			t.Fatalf("user %d cancels %s: %d %v", user, holders[user], status, body)
		}
	}
	regrabs := fi.fireGrabs(id, burstUsers(1, 20, 0))
	if got := len(regrabs.reserved); got != 20 {
		t.Fatalf("grabs again after cancelling: %d reserved, want 20", got)
	}
	keep(regrabs)
	keep(fi.fireGrabs(id, burstUsers(61, 10, 0)))
	fi.waitSettled(id, 90, 30*time.Second)

	if restartInstance {
		fi.kill()
	}
	for _, script := range []string{stopRedis, startRedis} {
		if out, err := exec.Command(script).CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", script, err, out)
		}
	}
	if restartInstance {
		fi.start()
	}

	// The 70 who hold a live order are answered with it, never a second 202.
	if len(holders) != 70 {
		t.Fatalf("%d holders, want 70", len(holders))
	}
	fi.wantHoldersAnswered(id, holders)
	// Exactly the 30 units left sell, and each of them is persisted, none failed.
	newcomers := fi.fireGrabs(id, burstUsers(1001, 60, 0))
	if got, want := len(newcomers.reserved), stock-70; got != want {
		t.Fatalf("reserved after Redis came back: %d, want the %d units left", got, want)
	}
	fi.waitSettled(id, 90+stock-70, 30*time.Second)
	fi.assertStats(id, map[string]float64{
		"stock": stock, "remaining": 0, "queued": 0, "awaiting_payment": stock, "failed": 0, "pending": 0,
	})
	orders, err := fi.dbOrders(id)
	if err != nil {
		t.Fatal(err)
	}
	live := map[int64]string{}
	for _, o := range orders {
		if domain.OrderStatus(o.Status).HoldsStock() {
			if prev, dup := live[o.User]; dup {
				t.Fatalf("user %d holds two live orders: %s and %s", o.User, prev, o.ID)
			}
			live[o.User] = o.ID
		}
	}
	for user, order := range holders {
		if live[user] != order {
			t.Fatalf("user %d's live order is %q, want %s", user, live[user], order)
		}
	}
}
