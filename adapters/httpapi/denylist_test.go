package httpapi_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/seckill/seckill/domain"
)

// TestDeniedUserGrabsAreRefused: a user put on the deny list is answered 403 denied
// with nothing reserved, other users are not, and once allowed again the user grabs.
func TestDeniedUserGrabsAreRefused(t *testing.T) {
	t.Parallel()
	a := newAPI(t)
	id := a.createVoucher(5, 1)
	grab := func(u int64) response {
		return a.do(http.MethodPost, "/api/v1/vouchers/"+id+"/grab", a.token(domain.UserID(u), false), "")
	}
	if r := a.do(http.MethodPut, "/api/v1/denylist/7", a.admin, `{"reason":"scripted grabs"}`); r.Status != http.StatusNoContent || r.Raw != "" {
		t.Fatalf("PUT: %d %q", r.Status, r.Raw)
	}
	r := grab(7)
	if r.Status != http.StatusForbidden || r.code() != "denied" {
		t.Fatalf("grab of a denied user: %d %s", r.Status, r.Raw)
	}
	if e, _ := r.Body["error"].(map[string]any); e["request_id"] == "" || e["request_id"] == nil {
		t.Fatalf("a denied answer without request_id: %s", r.Raw)
	}
	if n := a.streamLen(id); n != 0 {
		t.Fatalf("a denied grab queued %d entries", n)
	}
	if got := a.remaining(id); got != 5 {
		t.Fatalf("remaining %v after a denied grab, want 5", got)
	}
	if r := grab(8); r.Status != http.StatusAccepted {
		t.Fatalf("grab of another user: %d %s", r.Status, r.Raw)
	}
	if r := a.do(http.MethodDelete, "/api/v1/denylist/7", a.admin, ""); r.Status != http.StatusNoContent {
		t.Fatalf("DELETE: %d %s", r.Status, r.Raw)
	}
	if r := grab(7); r.Status != http.StatusAccepted {
		t.Fatalf("grab once allowed again: %d %s", r.Status, r.Raw)
	}
}

// TestDenyListRoutes: the list pages by user id; a reason changes with a second PUT
// and not with the same; DELETE of a user not listed is 204; each change is one audit
// entry with no voucher; bad input is 400 and a user's token 403.
func TestDenyListRoutes(t *testing.T) {
	t.Parallel()
	a := newAPI(t)
	for _, u := range []string{"30", "10", "20"} {
		if r := a.do(http.MethodPut, "/api/v1/denylist/"+u, a.admin, ""); r.Status != http.StatusNoContent {
			t.Fatalf("PUT %s: %d %s", u, r.Status, r.Raw)
		}
	}
	a.do(http.MethodPut, "/api/v1/denylist/20", a.admin, `{"reason":"bot"}`)
	a.do(http.MethodPut, "/api/v1/denylist/20", a.admin, `{"reason":"bot"}`) // the same: no entry
	first := a.do(http.MethodGet, "/api/v1/denylist?limit=2", a.admin, "")
	users, _ := first.Body["users"].([]any)
	cursor, _ := first.Body["next_cursor"].(string)
	if first.Status != http.StatusOK || len(users) != 2 || cursor == "" {
		t.Fatalf("first page: %d %s", first.Status, first.Raw)
	}
	u0, _ := users[0].(map[string]any)
	u1, _ := users[1].(map[string]any)
	if u0["user_id"] != "10" || u0["reason"] != "" || u1["user_id"] != "20" || u1["reason"] != "bot" || u1["at"] == nil {
		t.Fatalf("first page: %s", first.Raw)
	}
	second := a.do(http.MethodGet, "/api/v1/denylist?limit=2&cursor="+cursor, a.admin, "")
	if users, _ := second.Body["users"].([]any); len(users) != 1 || second.Body["next_cursor"] != nil {
		t.Fatalf("second page: %s", second.Raw)
	}
	for _, path := range []string{"/api/v1/denylist/30", "/api/v1/denylist/30", "/api/v1/denylist/999"} {
		if r := a.do(http.MethodDelete, path, a.admin, ""); r.Status != http.StatusNoContent {
			t.Fatalf("DELETE %s: %d %s", path, r.Status, r.Raw)
		}
	}
	var actions []string
	for _, e := range a.audit("") {
		if e["voucher_id"] != nil {
			t.Errorf("entry %v: want voucher_id null", e)
		}
		actions = append(actions, fmt.Sprint(e["action"]))
	}
	if got := strings.Join(actions, " "); got != "denylist.remove denylist.add denylist.add denylist.add denylist.add" {
		t.Fatalf("audit actions, newest first: %s", got)
	}

	user := a.token(5, false)
	for _, tc := range []struct {
		method, path, token, body string
		status                    int
		code                      string
	}{
		{"PUT", "/api/v1/denylist/0", a.admin, "", 400, "invalid_request"},
		{"PUT", "/api/v1/denylist/-1", a.admin, "", 400, "invalid_request"},
		{"PUT", "/api/v1/denylist/abc", a.admin, "", 400, "invalid_request"},
		{"PUT", "/api/v1/denylist/007", a.admin, "", 400, "invalid_request"},
		{"PUT", "/api/v1/denylist/1", a.admin, `{"reason":"` + strings.Repeat("x", 501) + `"}`, 400, "invalid_request"},
		{"PUT", "/api/v1/denylist/1", a.admin, `{"reason":"a\u0007b"}`, 400, "invalid_request"},
		{"PUT", "/api/v1/denylist/1", a.admin, `{"reason":7}`, 400, "invalid_request"},
		{"PUT", "/api/v1/denylist/1", a.admin, `{"why":"x"}`, 400, "invalid_request"},
		{"DELETE", "/api/v1/denylist/x", a.admin, "", 400, "invalid_request"},
		{"GET", "/api/v1/denylist?limit=0", a.admin, "", 400, "invalid_request"},
		{"GET", "/api/v1/denylist?cursor=bogus", a.admin, "", 400, "invalid_request"},
		{"PUT", "/api/v1/denylist/1", user, "", 403, "forbidden"},
		{"DELETE", "/api/v1/denylist/1", user, "", 403, "forbidden"},
		{"GET", "/api/v1/denylist", user, "", 403, "forbidden"},
		{"GET", "/api/v1/denylist", "", "", 401, "unauthorized"},
	} {
		if r := a.do(tc.method, tc.path, tc.token, tc.body); r.Status != tc.status || r.code() != tc.code {
			t.Errorf("%s %s %s: %d %s, want %d %s", tc.method, tc.path, tc.body, r.Status, r.Raw, tc.status, tc.code)
		}
	}
	if r := a.do(http.MethodGet, "/api/v1/denylist", a.admin, ""); len(r.Body["users"].([]any)) != 2 {
		t.Fatalf("bad input changed the list: %s", r.Raw)
	}
}

// TestDenyListIdempotencyKey: a PUT or DELETE repeated with its Idempotency-Key is
// answered as the first was, without a second change (no second audit entry); the
// same key on another request is 422 idempotency_key_mismatch.
func TestDenyListIdempotencyKey(t *testing.T) {
	t.Parallel()
	a := newAPI(t)
	const addr = "192.0.2.1:1"
	put := func(key, body string) response {
		return a.serveFrom(http.MethodPut, "/api/v1/denylist/4", a.admin, body, addr, "Idempotency-Key", key)
	}
	if r := put("deny-1", `{"reason":"a"}`); r.Status != http.StatusNoContent {
		t.Fatalf("PUT: %d %s", r.Status, r.Raw)
	}
	// Changed meanwhile: the replay must not change it back.
	a.do(http.MethodPut, "/api/v1/denylist/4", a.admin, `{"reason":"b"}`)
	again := put("deny-1", `{"reason":"a"}`)
	if again.Status != http.StatusNoContent || again.Header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("replayed PUT: %d %v %s", again.Status, again.Header, again.Raw)
	}
	if r := put("deny-1", `{"reason":"c"}`); r.Status != http.StatusUnprocessableEntity || r.code() != "idempotency_key_mismatch" {
		t.Fatalf("the key on another body: %d %s", r.Status, r.Raw)
	}
	list := a.do(http.MethodGet, "/api/v1/denylist", a.admin, "")
	if u, _ := list.Body["users"].([]any)[0].(map[string]any); u["reason"] != "b" {
		t.Fatalf("the replay changed the reason: %s", list.Raw)
	}
	del := func() response {
		return a.serveFrom(http.MethodDelete, "/api/v1/denylist/4", a.admin, "", addr, "Idempotency-Key", "allow-1")
	}
	if r := del(); r.Status != http.StatusNoContent {
		t.Fatalf("DELETE: %d %s", r.Status, r.Raw)
	}
	if r := del(); r.Status != http.StatusNoContent || r.Header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("replayed DELETE: %d %s", r.Status, r.Raw)
	}
	if n := len(a.audit("")); n != 3 {
		t.Fatalf("%d audit entries, want 3 (add, change, remove)", n)
	}
}

// TestDeniedGrabsAreCounted: a denied grab is counted under outcome denied.
func TestDeniedGrabsAreCounted(t *testing.T) {
	t.Parallel()
	a := newAPI(t)
	id := a.createVoucher(5, 1)
	a.do(http.MethodPut, "/api/v1/denylist/9", a.admin, "")
	a.do(http.MethodPost, "/api/v1/vouchers/"+id+"/grab", a.token(9, false), "")
	if v := a.scrape()[grabSeries("denied")]; v != 1 {
		t.Fatalf("%s = %v, want 1", grabSeries("denied"), v)
	}
}
