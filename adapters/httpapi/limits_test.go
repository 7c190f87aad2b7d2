package httpapi_test

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/adapters/testenv"
	"github.com/seckill/seckill/domain"
)

func TestPauseAndResume(t *testing.T) {
	t.Parallel()
	a := newAPI(t)
	id := a.createVoucher(5, 1)
	user := a.token(10, false)
	for _, tc := range []struct {
		name, path, token string
		status            int
		code              string
	}{
		{"pause as a user", "/api/v1/vouchers/" + id + "/pause", user, 403, "forbidden"},
		{"pause without token", "/api/v1/vouchers/" + id + "/pause", "", 401, "unauthorized"},
		{"pause unknown voucher", "/api/v1/vouchers/424242/pause", a.admin, 404, "not_found"},
		{"pause bad id", "/api/v1/vouchers/x/pause", a.admin, 400, "invalid_request"},
	} {
		if r := a.do(http.MethodPost, tc.path, tc.token, ""); r.Status != tc.status || r.code() != tc.code {
			t.Errorf("%s: %d %s, want %d %s", tc.name, r.Status, r.Raw, tc.status, tc.code)
		}
	}
	r := a.do(http.MethodPost, "/api/v1/vouchers/"+id+"/pause", a.admin, "")
	if r.Status != http.StatusOK || r.Body["id"] != id || r.Body["remaining"] != 5.0 {
		t.Fatalf("pause: %d %s", r.Status, r.Raw)
	}
	if r := a.do(http.MethodPost, "/api/v1/vouchers/"+id+"/grab", user, ""); r.Status != http.StatusConflict || r.code() != "paused" {
		t.Fatalf("grab while paused: %d %s", r.Status, r.Raw)
	}
	if got := a.streamLen(id); got != 0 {
		t.Fatalf("a paused grab queued %d entries", got)
	}
	if r := a.do(http.MethodPost, "/api/v1/vouchers/"+id+"/resume", a.admin, ""); r.Status != http.StatusOK {
		t.Fatalf("resume: %d %s", r.Status, r.Raw)
	}
	if r := a.do(http.MethodPost, "/api/v1/vouchers/"+id+"/grab", user, ""); r.Status != http.StatusAccepted {
		t.Fatalf("grab after resume: %d %s", r.Status, r.Raw)
	}
}

func TestUserRateLimit(t *testing.T) {
	t.Parallel()
	a := newAPI(t, func(s *setup) { s.stock.UserRate, s.stock.UserBurst = 1, 3 })
	id := a.createVoucher(5, 1)
	hammer, other := a.token(10, false), a.token(11, false)
	// The burst answers normally (one reservation, then already_purchased) ...
	for i := 0; i < 3; i++ {
		if r := a.do(http.MethodPost, "/api/v1/vouchers/"+id+"/grab", hammer, ""); r.Status == http.StatusTooManyRequests {
			t.Fatalf("grab %d within the burst: %d %s", i+1, r.Status, r.Raw)
		}
	}
	// ... the next is over the limit, with a Retry-After in whole seconds.
	r := a.do(http.MethodPost, "/api/v1/vouchers/"+id+"/grab", hammer, "")
	if r.Status != http.StatusTooManyRequests || r.code() != "rate_limited" {
		t.Fatalf("grab over the limit: %d %s", r.Status, r.Raw)
	}
	if secs, err := strconv.Atoi(r.Header.Get("Retry-After")); err != nil || secs < 1 {
		t.Fatalf("Retry-After = %q", r.Header.Get("Retry-After"))
	}
	// Another user is not affected.
	if r := a.do(http.MethodPost, "/api/v1/vouchers/"+id+"/grab", other, ""); r.Status != http.StatusAccepted {
		t.Fatalf("another user's grab: %d %s", r.Status, r.Raw)
	}
	if got := a.remaining(id); got != 3 {
		t.Fatalf("remaining = %v, want 3", got)
	}
}

// commandCounter counts the commands a Redis client sends.
type commandCounter struct{ n atomic.Int64 }

func (c *commandCounter) DialHook(next redis.DialHook) redis.DialHook { return next }

func (c *commandCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		c.n.Add(1)
		return next(ctx, cmd)
	}
}

func (c *commandCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		c.n.Add(int64(len(cmds)))
		return next(ctx, cmds)
	}
}

// TestSoldOutShortCut: once Redis said a voucher is sold out, grabs are answered
// without a single Redis call, until units come back and the restock signal clears
// the flag.
func TestSoldOutShortCut(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	a := newAPI(t)
	subscribed := make(chan error, 1)
	go func() { subscribed <- a.stock.SubscribeRestocks(ctx, a.grab.Restocked) }()
	id := a.createVoucher(1, 1)
	winner := a.do(http.MethodPost, "/api/v1/vouchers/"+id+"/grab", a.token(10, false), "")
	if winner.Status != http.StatusAccepted {
		t.Fatalf("grab: %d %s", winner.Status, winner.Raw)
	}
	if r := a.do(http.MethodPost, "/api/v1/vouchers/"+id+"/grab", a.token(11, false), ""); r.code() != "sold_out" {
		t.Fatalf("first sold-out answer: %d %s", r.Status, r.Raw)
	}
	counter := &commandCounter{}
	a.redis.AddHook(counter)
	for u := 12; u < 212; u++ {
		if r := a.do(http.MethodPost, "/api/v1/vouchers/"+id+"/grab", a.token(domain.UserID(u), false), ""); r.Status != http.StatusConflict || r.code() != "sold_out" {
			t.Fatalf("grab after the sell-out: %d %s", r.Status, r.Raw)
		}
	}
	if got := counter.n.Load(); got != 0 {
		t.Fatalf("200 sold-out answers made %d Redis calls, want 0", got)
	}
	// The winner cancels: the unit comes back and every instance hears of it.
	a.fulfillAll()
	if r := a.do(http.MethodPost, "/api/v1/orders/"+winner.Body["order_id"].(string)+"/cancel", a.token(10, false), ""); r.Status != http.StatusOK {
		t.Fatalf("cancel: %d %s", r.Status, r.Raw)
	}
	testenv.Eventually(t, testenv.Patience, "a grab reserved after the restock", func() (bool, string) {
		r := a.do(http.MethodPost, "/api/v1/vouchers/"+id+"/grab", a.token(500, false), "")
		if r.Status != http.StatusAccepted && r.code() != "sold_out" {
			t.Fatalf("grab after the restock: %d %s", r.Status, r.Raw)
		}
		return r.Status == http.StatusAccepted, fmt.Sprintf("%d %s", r.Status, r.Raw)
	})
	cancel()
	if err := <-subscribed; err != nil {
		t.Fatal(err)
	}
}

// TestMalformedGrabsNeverReachRedis: a burst of bad grabs is refused by the cheapest
// layer that can, without a single Redis call.
func TestMalformedGrabsNeverReachRedis(t *testing.T) {
	t.Parallel()
	a := newAPI(t)
	id := a.createVoucher(5, 1)
	counter := &commandCounter{}
	a.redis.AddHook(counter)
	user := a.token(10, false)
	for i := 0; i < 50; i++ {
		for _, tc := range []struct{ path, token, body string }{
			{"/api/v1/vouchers/" + id + "/grab", "", ""},
			{"/api/v1/vouchers/" + id + "/grab", "forged.token.here", ""},
			{"/api/v1/vouchers/abc/grab", user, ""},
			{"/api/v1/vouchers/" + id + "/grab", user, `{"quantity":0}`},
			{"/api/v1/vouchers/" + id + "/grab", user, `{"quantity":"x"}`},
			{"/api/v1/vouchers/" + id + "/grab", user, `{`},
		} {
			if r := a.do(http.MethodPost, tc.path, tc.token, tc.body); r.Status < 400 || r.Status >= 500 {
				t.Fatalf("%s %q: %d %s", tc.path, tc.body, r.Status, r.Raw)
			}
		}
	}
	if got := counter.n.Load(); got != 0 {
		t.Fatalf("300 malformed grabs made %d Redis calls, want 0", got)
	}
}
