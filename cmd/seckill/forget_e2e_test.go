package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/seckill/seckill/adapters/testenv"
	"github.com/seckill/seckill/domain"
)

// TestRedisComesBackEmptyMidSale: Redis restarts without persistence in the middle of
// a sale (as after a FLUSHALL). With no warm-up to help (it runs only every hour
// here), the grabs themselves find the voucher's sale state missing and have it
// rebuilt from the database: no grab is ever answered not_found, no holder of an
// order gets a second 202, exactly the units left are sold, and the stats add up.
func TestRedisComesBackEmptyMidSale(t *testing.T) {
	stopRedis, startRedis := redisOutage(t)
	fi := startFulfillInstance(t, "SECKILL_WARM_INTERVAL=1h")
	const stock, first = 50, 30
	id := fi.createVoucher(stock, 1)
	before := fi.fireGrabs(id, burstUsers(1001, first, 0))
	if got := len(before.reserved); got != first {
		t.Fatalf("reserved before the restart = %d, want %d", got, first)
	}
	fi.waitSettled(id, first, 30*time.Second)

	for _, script := range []string{stopRedis, startRedis} {
		if out, err := exec.Command(script).CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", script, err, out)
		}
	}

	// Every holder asks again, retrying a 503 as the contract says: the answer is
	// their order, never a second 202 and never not_found.
	fi.wantHoldersAnswered(id, before.holder)
	// The units left sell, exactly, to newcomers.
	after := fi.fireGrabs(id, burstUsers(2001, 40, 0))
	if got, want := len(after.reserved), stock-first; got != want {
		t.Fatalf("reserved after the restart = %d, want the %d units left", got, want)
	}
	fi.waitSettled(id, stock, 30*time.Second)
	fi.assertStats(id, map[string]float64{
		"stock": stock, "remaining": 0, "queued": 0, "awaiting_payment": stock, "pending": 0,
	})
}

// TestRedisRestartsFromAnOlderSnapshot: Redis comes back from a snapshot taken before
// the last grabs (its default persistence): their buyers are missing from it and its
// remaining count is too high. The service notices the restart (Redis's run_id) and
// heals the sale from the database before taking grabs of it again: no holder of an
// order gets a second 202, no phantom unit is sold, and the stats add up.
func TestRedisRestartsFromAnOlderSnapshot(t *testing.T) {
	stopRedis, startRedis := redisOutage(t)
	fi := startFulfillInstance(t, "SECKILL_WARM_INTERVAL=1h")
	dump := filepath.Join(filepath.Dir(stopRedis), "dump.rdb")
	// The restarts of the tests after this one must come back empty, as they expect.
	t.Cleanup(func() { _ = os.Remove(dump) })
	const stock = 50
	id := fi.createVoucher(stock, 1)
	before := fi.fireGrabs(id, burstUsers(1001, 10, 0))
	fi.waitSettled(id, 10, 30*time.Second)
	if err := fi.redis.Save(context.Background()).Err(); err != nil {
		t.Fatalf("SAVE: %v", err)
	}
	// Sold after the snapshot: persisted, but missing from the Redis that comes back.
	after := fi.fireGrabs(id, burstUsers(2001, 20, 0))
	fi.waitSettled(id, 30, 30*time.Second)

	for _, script := range []string{stopRedis, startRedis} {
		if out, err := exec.Command(script).CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", script, err, out)
		}
	}
	holders := map[int64]string{}
	for _, g := range []grabs{before, after} {
		for user, order := range g.holder {
			holders[user] = order
		}
	}
	fi.wantHoldersAnswered(id, holders)
	// Exactly the 20 units left sell: none of the 20 the snapshot still counts as free.
	newcomers := fi.fireGrabs(id, burstUsers(3001, 40, 0))
	if got, want := len(newcomers.reserved), stock-30; got != want {
		t.Fatalf("reserved after the restart = %d, want the %d units left", got, want)
	}
	fi.waitSettled(id, stock, 30*time.Second)
	fi.assertStats(id, map[string]float64{
		"stock": stock, "remaining": 0, "queued": 0, "awaiting_payment": stock, "failed": 0, "pending": 0,
	})
}

// wantHoldersAnswered has each holder grab voucher again, retrying a 503 as the contract
// says, and fails the test unless the answer is 409 already_purchased naming the order
// the user holds: never a second 202, never not_found.
func (fi *fulfillInstance) wantHoldersAnswered(voucher string, holders map[int64]string) {
	fi.t.Helper()
	for user, order := range holders {
		testenv.Eventually(fi.t, 30*time.Second, fmt.Sprintf("user %d's grab after the restart", user), func() (bool, string) {
			status, body := fi.call(http.MethodPost, "/api/v1/vouchers/"+voucher+"/grab", fi.token(domain.UserID(user), false), nil)
			e, _ := body["error"].(map[string]any)
			switch {
			case status == http.StatusServiceUnavailable:
				return false, "503"
			case status == http.StatusConflict && e["code"] == "already_purchased" && e["order_id"] == order:
				return true, ""
			}
			fi.t.Fatalf("user %d, who holds order %s, grabbed after Redis came back: %d %v; the service logged:\n%s", user, order, status, body, fi.logs)
			return false, ""
		})
	}
}

// TestPeriodicReconciliationRepairsDrift: serve's periodic reconciliation repairs the
// drift it finds instead of only logging it. Redis forgets a live order's buyer (as a
// partial loss would); within a few rounds the buyer is back and reconcile finds nothing,
// so the holder's next grab is answered with the order.
func TestPeriodicReconciliationRepairsDrift(t *testing.T) {
	fi := startFulfillInstance(t, "SECKILL_RECONCILE_INTERVAL=500ms", "SECKILL_RECONCILE_GRACE=100ms")
	id := fi.createVoucher(10, 1)
	g := fi.fireGrabs(id, burstUsers(1001, 1, 0))
	fi.waitSettled(id, 1, 30*time.Second)
	order := g.holder[1001]
	vid := fi.voucherID(id)
	ctx := context.Background()
	if err := fi.redis.HDel(ctx, fi.keys.Buyers(vid), "1001").Err(); err != nil {
		t.Fatal(err)
	}
	if err := fi.redis.HDel(ctx, fi.keys.Orders(vid), order).Err(); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 30*time.Second, "the buyer restored by the periodic reconciliation", func() (bool, string) {
		held, err := fi.redis.HGet(ctx, fi.keys.Buyers(vid), "1001").Result()
		return err == nil && held == order, fmt.Sprintf("%q %v", held, err)
	})
	if code, report := fi.reconcileCLI(id, false); code != 0 {
		t.Fatalf("reconcile after the repair: exit %d %v", code, report)
	}
	fi.wantHoldersAnswered(id, map[int64]string{1001: order})
}

// TestCreateWhileRedisIsFrozen: a voucher created while Redis does not answer (SIGSTOP)
// is stored and answered 201 — so a 503 never hides a stored voucher — and a repeat
// with the same Idempotency-Key answers the same 201 without a second voucher; once
// Redis answers again, the voucher's first grab loads it and is served.
func TestCreateWhileRedisIsFrozen(t *testing.T) {
	redisPID := redisPIDFile(t)
	fi := startFulfillInstance(t)
	admin := fi.token(1, true)
	body := `{"title":"frozen","stock":5,"begins_at":"2026-01-01T00:00:00Z","ends_at":"2099-01-01T00:00:00Z"}`
	create := func(key string) (int, string) {
		req, _ := http.NewRequest(http.MethodPost, fi.base+"/api/v1/vouchers", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+admin)
		if key != "" {
			req.Header.Set("Idempotency-Key", key)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		raw, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(raw)
	}
	thaw := freezeRedis(t, redisPID)
	status, plain := create("")
	if status != http.StatusCreated {
		t.Fatalf("create while Redis is frozen: %d %s, want 201 (stored)", status, plain)
	}
	status, first := create("frozen-1")
	again, repeat := create("frozen-1")
	if status != http.StatusCreated || again != http.StatusCreated || first != repeat {
		t.Fatalf("create with a key while frozen: %d %s, then %d %s; want the same 201 twice", status, first, again, repeat)
	}
	thaw()

	var v struct{ ID string }
	if err := json.Unmarshal([]byte(first), &v); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 30*time.Second, "the voucher created while Redis was frozen on sale", func() (bool, string) {
		status, body := fi.call(http.MethodPost, "/api/v1/vouchers/"+v.ID+"/grab", fi.token(7, false), nil)
		return status == http.StatusAccepted, fmt.Sprintf("%d %v", status, body)
	})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	db, err := fi.openStore(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.NewRaw("SELECT count(*) FROM vouchers WHERE title = 'frozen'").Scan(ctx, &n); err != nil {
		t.Fatal(err)
	}
	if n != 2 {
		t.Fatalf("vouchers titled frozen: %d, want 2 (one without a key, one for the key)", n)
	}
}

// freezeRedis stops the throwaway Redis whose pid file is pidFile (SIGSTOP), as a
// server that no longer answers, and returns the function that thaws it (SIGCONT),
// which also runs when the test ends.
func freezeRedis(t *testing.T, pidFile string) (thaw func()) {
	t.Helper()
	if err := signalPIDFile(pidFile, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	thawed := false
	thaw = func() {
		if !thawed {
			thawed = true
			_ = signalPIDFile(pidFile, syscall.SIGCONT)
		}
	}
	t.Cleanup(thaw)
	return thaw
}

// TestGrabAfterTheSaleIsEndedWithOrWithoutKeys: after ends_at a grab answers 409 ended
// while the sale's keys live on (the grace), and still 409 ended — never 404 — once
// they have expired.
func TestGrabAfterTheSaleIsEndedWithOrWithoutKeys(t *testing.T) {
	fi := startFulfillInstance(t)
	now := time.Now().UTC()
	status, v := fi.call(http.MethodPost, "/api/v1/vouchers", fi.token(1, true), map[string]any{
		"title": "short", "stock": 5, "begins_at": now.Add(-time.Minute), "ends_at": now.Add(time.Second),
	})
	if status != http.StatusCreated {
		t.Fatalf("create: %d %v", status, v)
	}
	id := v["id"].(string)
	grab := func() (int, any) {
		status, body := fi.call(http.MethodPost, "/api/v1/vouchers/"+id+"/grab", fi.token(7, false), nil)
		e, _ := body["error"].(map[string]any)
		return status, e["code"]
	}
	testenv.Eventually(t, 30*time.Second, "the sale ended", func() (bool, string) {
		status, code := grab()
		return status == http.StatusConflict && code == "ended", fmt.Sprintf("%d %v", status, code)
	})
	// As the grace's expiry does.
	vid, k := fi.voucherID(id), fi.keys
	if err := fi.redis.Del(context.Background(), k.Meta(vid), k.Buyers(vid), k.Orders(vid), k.Stream(vid)).Err(); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if status, code := grab(); status != http.StatusConflict || code != "ended" {
			t.Fatalf("grab of an ended sale whose keys expired: %d %v, want 409 ended", status, code)
		}
	}
}
