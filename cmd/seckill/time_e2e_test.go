package main

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/seckill/seckill/adapters/testenv"
)

// TestTimeAndStateByTheSaleClock: an instance whose host clock is an hour fast (the
// test build shifts it) tells Redis's time on GET /api/v1/time, judges a voucher's
// state by it — upcoming until begins_at by Redis, though its host thinks the sale
// began long ago — and answers an unpaid order with expires_at, created_at plus the
// payment timeout.
func TestTimeAndStateByTheSaleClock(t *testing.T) {
	fi := startFulfillInstance(t, "SECKILL_TEST_CLOCK_SKEW=1h", "SECKILL_PAYMENT_TIMEOUT=10m")
	ctx := context.Background()
	redisNow := func() time.Time {
		now, err := fi.redis.Time(ctx).Result()
		if err != nil {
			t.Fatal(err)
		}
		return now
	}
	testenv.Eventually(t, 30*time.Second, "GET /api/v1/time tells Redis's time", func() (bool, string) {
		before := redisNow()
		status, body := fi.call(http.MethodGet, "/api/v1/time", "", nil)
		after := redisNow()
		ms, _ := body["unix_ms"].(float64)
		told := time.UnixMilli(int64(ms))
		// A second either way: the instance carries Redis's time forward between
		// measurements, and Redis's TIME is read around the request.
		ok := status == http.StatusOK && !told.Before(before.Add(-time.Second)) && !told.After(after.Add(time.Second))
		return ok, fmt.Sprintf("%d %v, Redis between %s and %s", status, body, before, after)
	})

	begins := redisNow().Add(10 * time.Second)
	id := fi.createSale(10, 1, begins, begins.Add(time.Hour))
	if status, v := fi.call(http.MethodGet, "/api/v1/vouchers/"+id, "", nil); status != http.StatusOK || v["state"] != "upcoming" {
		t.Fatalf("before begins_at by Redis: %d %v, want upcoming (the host, an hour fast, would say live)", status, v)
	}
	testenv.Eventually(t, 30*time.Second, "the sale live from begins_at", func() (bool, string) {
		status, v := fi.call(http.MethodGet, "/api/v1/vouchers/"+id, "", nil)
		return status == http.StatusOK && v["state"] == "live", fmt.Sprint(status, v)
	})

	user := fi.token(7, false)
	status, grab := fi.call(http.MethodPost, "/api/v1/vouchers/"+id+"/grab", user, nil)
	if status != http.StatusAccepted {
		t.Fatalf("grab: %d %v", status, grab)
	}
	order := grab["order_id"].(string)
	testenv.Eventually(t, 30*time.Second, "the order persisted, with its deadline", func() (bool, string) {
		status, o := fi.call(http.MethodGet, "/api/v1/orders/"+order, user, nil)
		if status != http.StatusOK || o["status"] != "awaiting_payment" {
			return false, fmt.Sprint(status, o)
		}
		created, err1 := time.Parse(time.RFC3339Nano, fmt.Sprint(o["created_at"]))
		expires, err2 := time.Parse(time.RFC3339Nano, fmt.Sprint(o["expires_at"]))
		if err1 != nil || err2 != nil || !expires.Equal(created.Add(10*time.Minute)) {
			t.Fatalf("order %v: expires_at is not created_at plus the payment timeout", o)
		}
		return true, ""
	})
}
