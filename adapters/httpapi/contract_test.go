package httpapi_test

import (
	"net/http"
	"testing"
)

// Every error names the request it answers, as the X-Request-ID header does, so a
// client's report can be matched with the server's log line.
func TestErrorsCarryTheRequestID(t *testing.T) {
	t.Parallel()
	a := newAPI(t)
	for _, tc := range []struct{ method, path, token string }{
		{http.MethodGet, "/api/v1/orders", ""},
		{http.MethodGet, "/api/v1/vouchers/424242", ""},
		{http.MethodGet, "/api/v1/vouchers/x", ""},
		{http.MethodGet, "/no/such/path", ""},
		{http.MethodPost, "/api/v1/vouchers", a.token(3, false)},
	} {
		r := a.do(tc.method, tc.path, tc.token, "")
		e, _ := r.Body["error"].(map[string]any)
		id := r.Header.Get("X-Request-ID")
		if r.Status < 400 || id == "" || e["request_id"] != id {
			t.Errorf("%s %s: %d %s with X-Request-ID %q: want the error to carry it", tc.method, tc.path, r.Status, r.Raw, id)
		}
	}
}

// A voucher says whether its sale is paused.
func TestVouchersSayWhetherTheyArePaused(t *testing.T) {
	t.Parallel()
	a := newAPI(t)
	id := a.createVoucher(3, 1)
	if r := a.do(http.MethodGet, "/api/v1/vouchers/"+id, "", ""); r.Body["paused"] != false {
		t.Fatalf("new voucher: %s, want paused false", r.Raw)
	}
	if r := a.do(http.MethodPost, "/api/v1/vouchers/"+id+"/pause", a.admin, ""); r.Status != http.StatusOK || r.Body["paused"] != true {
		t.Fatalf("pause: %d %s, want paused true", r.Status, r.Raw)
	}
	list := a.do(http.MethodGet, "/api/v1/vouchers", "", "")
	vs, _ := list.Body["vouchers"].([]any)
	if len(vs) != 1 || vs[0].(map[string]any)["paused"] != true {
		t.Fatalf("list while paused: %s", list.Raw)
	}
	if r := a.do(http.MethodPost, "/api/v1/vouchers/"+id+"/resume", a.admin, ""); r.Body["paused"] != false {
		t.Fatalf("resume: %d %s, want paused false", r.Status, r.Raw)
	}
}
