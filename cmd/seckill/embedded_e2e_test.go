package main

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/seckill/seckill/domain"
)

// TestServeWithTheInProcessRedis runs serve with SECKILL_REDIS_URL unset: grabs are
// served by the in-process Redis; on SIGTERM the worker drains it, so every 202 is an
// order after the stop; and on the next start the sale state is rebuilt from the
// database, so the holders cannot buy twice and the remaining units are right.
func TestServeWithTheInProcessRedis(t *testing.T) {
	fi := startFulfilInstance(t, "SECKILL_REDIS_URL=")
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
	orders, err := fi.pgOrders(id)
	if err != nil {
		t.Fatal(err)
	}
	persisted := map[string]bool{}
	for _, o := range orders {
		persisted[o.ID] = true
	}
	for order, user := range all.reserved {
		if !persisted[order] {
			t.Fatalf("order %s of user %d was answered 202 but is not in the database after the stop", order, user)
		}
	}
	if got, want := len(orders), len(all.reserved); got != want {
		t.Fatalf("%d orders persisted, want %d", got, want)
	}

	// A fresh in-process Redis: the warm-up rebuilds the sale from the database.
	fi.start()
	eventually(t, 10*time.Second, "the sale rebuilt", func() (bool, string) {
		status, v := fi.call(http.MethodGet, "/api/v1/vouchers/"+id, "", nil)
		return status == http.StatusOK && v["remaining"] == float64(30-len(all.reserved)), fmt.Sprintf("%d %v", status, v)
	})
	for user, order := range all.holder {
		status, body := fi.call(http.MethodPost, "/api/v1/vouchers/"+id+"/grab", fi.token(domain.UserID(user), false), nil)
		if status != http.StatusConflict || body["error"].(map[string]any)["order_id"] != order {
			t.Fatalf("holder %d grabbed after the restart: %d %v", user, status, body)
		}
	}
	st := fi.assertStatsAddUp(id)
	if st["awaiting_payment"] != float64(len(all.reserved)) {
		t.Fatalf("stats after the restart: %v", st)
	}
}

// TestServeWithNothingButADatabase: with neither SECKILL_REDIS_URL nor
// SECKILL_JWT_SECRET, serve makes up a secret and prints an admin token that works.
func TestServeWithNothingButADatabase(t *testing.T) {
	fi := startFulfilInstance(t, "SECKILL_REDIS_URL=", "SECKILL_JWT_SECRET=")
	var admin string
	for _, line := range strings.Split(fi.logs.String(), "\n") {
		if rest, ok := strings.CutPrefix(line, "Admin token (user 1):"); ok {
			admin = strings.TrimSpace(rest)
		}
	}
	if admin == "" {
		t.Fatalf("no admin token printed:\n%s", fi.logs)
	}
	status, body := fi.call(http.MethodPost, "/api/v1/vouchers", admin, map[string]any{
		"title": "x", "stock": 1, "begins_at": time.Now().Add(-time.Minute), "ends_at": time.Now().Add(time.Hour),
	})
	if status != http.StatusCreated {
		t.Fatalf("create with the printed admin token: %d %v", status, body)
	}
	// The made-up secret is not the tests' one: their tokens are refused.
	if status, _ := fi.call(http.MethodPost, "/api/v1/vouchers", fi.token(1, true), map[string]any{"title": "y"}); status != http.StatusUnauthorized {
		t.Fatalf("a token signed with another secret: %d", status)
	}
	if !strings.Contains(fi.logs.String(), "not production") {
		t.Fatalf("no warning that this mode is not for production:\n%s", fi.logs)
	}
}
