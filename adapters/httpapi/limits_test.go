package httpapi_test

import (
	"net/http"
	"strconv"
	"testing"

	"github.com/seckill/seckill/adapters/redisstore"
)

func TestPauseAndResume(t *testing.T) {
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
	a := newAPI(t, func(o *redisstore.Options) { o.UserRate, o.UserBurst = 1, 3 })
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
