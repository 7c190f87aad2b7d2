package main

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/adapters/testenv"
	"github.com/seckill/seckill/domain"
)

// TestDenyListReachesEveryInstance: a user denied through instance A is refused (403
// denied) on instance B, told by the change announced on Redis Pub/Sub, and allowed
// again through B is served on A. A voucher whose sale has not started tells the two
// apart without reserving anything (denied comes before not_started); the delay from
// the admin's answer to the other instance's first refusal is logged. The contract
// says within a second; the assertion waits with the tests' usual patience, so a slow
// machine does not fail it.
func TestDenyListReachesEveryInstance(t *testing.T) {
	a := startFulfillInstance(t)
	b := a.another()
	now := time.Now().UTC()
	later := a.createSale(5, 1, now.Add(time.Hour), now.Add(2*time.Hour))
	live := a.createVoucher(5, 1)
	const user = domain.UserID(5)
	grab := func(in *fulfillInstance, voucher string) (int, string) {
		status, body := in.call(http.MethodPost, "/api/v1/vouchers/"+voucher+"/grab", in.token(user, false), nil)
		e, _ := body["error"].(map[string]any)
		code, _ := e["code"].(string)
		return status, code
	}
	a.waitDenialSubscribers(2)
	admin := a.token(1, true)

	if status, body := a.call(http.MethodPut, "/api/v1/denylist/5", admin, map[string]any{"reason": "scripted"}); status != http.StatusNoContent {
		t.Fatalf("deny through A: %d %v", status, body)
	}
	took := testenv.Eventually(t, testenv.Patience, "instance B refuses the denied user", func() (bool, string) {
		status, code := grab(b, later)
		return status == http.StatusForbidden && code == "denied", fmt.Sprintf("%d %s", status, code)
	})
	t.Logf("instance B refused the denied user %v after A answered the PUT (at most: polled)", took)
	if status, code := grab(a, live); status != http.StatusForbidden || code != "denied" {
		t.Fatalf("grab through A of the denied user: %d %s", status, code)
	}

	if status, body := b.call(http.MethodDelete, "/api/v1/denylist/5", admin, nil); status != http.StatusNoContent {
		t.Fatalf("allow through B: %d %v", status, body)
	}
	took = testenv.Eventually(t, testenv.Patience, "instance A serves the user again", func() (bool, string) {
		status, code := grab(a, later)
		return code == "not_started", fmt.Sprintf("%d %s", status, code)
	})
	t.Logf("instance A served the allowed user %v after B answered the DELETE (at most: polled)", took)
	if status, code := grab(a, live); status != http.StatusAccepted {
		t.Fatalf("grab through A once allowed: %d %s", status, code)
	}
	if got := scrapeURL(t, b.base+"/metrics")[`seckill_grab_requests_total{outcome="denied"}`]; got < 1 {
		t.Fatalf("instance B counted %v denied grabs, want at least 1", got)
	}
}

// waitDenialSubscribers waits until n connections subscribe to the deny list's
// channel: on a Redis Cluster, on the node that owns the channel's slot, to which
// go-redis subscribes.
func (fi *fulfillInstance) waitDenialSubscribers(n int64) {
	fi.t.Helper()
	ctx := context.Background()
	channel := fi.keys.Denials()
	testenv.Eventually(fi.t, testenv.Patience, "the instances subscribed to the deny list's changes", func() (bool, string) {
		var got map[string]int64
		var err error
		if cc, ok := fi.redis.(*redis.ClusterClient); ok {
			var node *redis.Client
			if node, err = cc.MasterForKey(ctx, channel); err == nil {
				got, err = node.PubSubNumSub(ctx, channel).Result()
			}
		} else {
			got, err = fi.redis.PubSubNumSub(ctx, channel).Result()
		}
		return err == nil && got[channel] >= n, fmt.Sprintf("%v, %v", got, err)
	})
}
