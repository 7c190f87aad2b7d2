package httpapi_test

import (
	"net/http"
	"testing"

	"github.com/seckill/seckill/domain"
)

// TestWaitlistRoutes: joining is refused while units are on sale (409 not_sold_out),
// to a holder of the voucher (409 already_purchased) and to a denied user (403
// denied); once sold out a user joins (202, position from 1, the same again), reads
// its place (200) and leaves (204, then 404). A cancelled order's unit becomes an
// awaiting_payment order of the first on the waitlist, listed in its orders; the
// stats count the waitlist; bad input is 400.
func TestWaitlistRoutes(t *testing.T) {
	t.Parallel()
	a := newAPI(t)
	id := a.createVoucher(1, 1)
	path := "/api/v1/vouchers/" + id + "/waitlist"
	user := func(u int64) string { return a.token(domain.UserID(u), false) }
	if r := a.do(http.MethodPost, path, user(2), ""); r.Status != http.StatusConflict || r.code() != "not_sold_out" {
		t.Fatalf("join while on sale: %d %s", r.Status, r.Raw)
	}
	held := a.grabOne(id, user(1))
	if r := a.do(http.MethodPost, path, user(1), ""); r.Status != http.StatusConflict || r.code() != "already_purchased" ||
		r.Body["error"].(map[string]any)["order_id"] != held {
		t.Fatalf("join of the holder: %d %s", r.Status, r.Raw)
	}
	for i, u := range []int64{2, 3, 2} {
		r := a.do(http.MethodPost, path, user(u), "{}")
		want := []float64{1, 2, 1}[i]
		if r.Status != http.StatusAccepted || r.Body["position"] != want {
			t.Fatalf("join of user %d: %d %s, want position %v", u, r.Status, r.Raw, want)
		}
	}
	if r := a.do(http.MethodGet, path, user(3), ""); r.Status != http.StatusOK || r.Body["position"] != 2.0 {
		t.Fatalf("GET: %d %s", r.Status, r.Raw)
	}
	if r := a.do(http.MethodPut, "/api/v1/denylist/4", a.admin, ""); r.Status != http.StatusNoContent {
		t.Fatalf("deny: %d %s", r.Status, r.Raw)
	}
	if r := a.do(http.MethodPost, path, user(4), ""); r.Status != http.StatusForbidden || r.code() != "denied" {
		t.Fatalf("join of a denied user: %d %s", r.Status, r.Raw)
	}
	for _, bad := range []struct{ method, path, body string }{
		{http.MethodPost, path, `{"quantity":1}`},
		{http.MethodPost, "/api/v1/vouchers/x/waitlist", ""},
		{http.MethodGet, "/api/v1/vouchers/0/waitlist", ""},
		{http.MethodDelete, "/api/v1/vouchers/-1/waitlist", ""},
	} {
		if r := a.do(bad.method, bad.path, user(2), bad.body); r.Status != http.StatusBadRequest {
			t.Fatalf("%s %s %s: %d %s", bad.method, bad.path, bad.body, r.Status, r.Raw)
		}
	}
	if r := a.do(http.MethodPost, path, "", ""); r.Status != http.StatusUnauthorized {
		t.Fatalf("join without a token: %d %s", r.Status, r.Raw)
	}
	if r := a.do(http.MethodGet, "/api/v1/vouchers/"+id+"/stats", a.admin, ""); r.Body["waitlist"] != 2.0 {
		t.Fatalf("stats: %s", r.Raw)
	}

	// The holder cancels: the unit goes to user 2, first on the waitlist.
	a.fulfillAll()
	if r := a.do(http.MethodPost, "/api/v1/orders/"+held+"/cancel", user(1), ""); r.Status != http.StatusOK {
		t.Fatalf("cancel: %d %s", r.Status, r.Raw)
	}
	a.fulfillAll()
	r := a.do(http.MethodGet, "/api/v1/orders", user(2), "")
	orders, _ := r.Body["orders"].([]any)
	if len(orders) != 1 || orders[0].(map[string]any)["status"] != "awaiting_payment" {
		t.Fatalf("orders of the first on the waitlist: %s", r.Raw)
	}
	if r := a.do(http.MethodGet, path, user(2), ""); r.Status != http.StatusNotFound || r.code() != "not_found" {
		t.Fatalf("GET of the user handed a unit: %d %s", r.Status, r.Raw)
	}
	if got := a.remaining(id); got != 0 {
		t.Fatalf("remaining %v after the hand-off, want 0", got)
	}
	if r := a.do(http.MethodGet, path, user(3), ""); r.Status != http.StatusOK || r.Body["position"] != 1.0 {
		t.Fatalf("GET of user 3: %d %s", r.Status, r.Raw)
	}
	for range 2 {
		if r := a.do(http.MethodDelete, path, user(3), ""); r.Status != http.StatusNoContent || r.Raw != "" {
			t.Fatalf("DELETE: %d %q", r.Status, r.Raw)
		}
	}
	if r := a.do(http.MethodGet, path, user(3), ""); r.Status != http.StatusNotFound {
		t.Fatalf("GET after leaving: %d %s", r.Status, r.Raw)
	}
}

// TestDenyingDropsFromTheWaitlist: a user on a waitlist who is denied leaves it.
func TestDenyingDropsFromTheWaitlist(t *testing.T) {
	t.Parallel()
	a := newAPI(t)
	id := a.createVoucher(1, 1)
	path := "/api/v1/vouchers/" + id + "/waitlist"
	a.grabOne(id, a.token(1, false))
	if r := a.do(http.MethodPost, path, a.token(5, false), ""); r.Status != http.StatusAccepted {
		t.Fatalf("join: %d %s", r.Status, r.Raw)
	}
	if r := a.do(http.MethodPut, "/api/v1/denylist/5", a.admin, ""); r.Status != http.StatusNoContent {
		t.Fatalf("deny: %d %s", r.Status, r.Raw)
	}
	if r := a.do(http.MethodGet, path, a.token(5, false), ""); r.Status != http.StatusNotFound {
		t.Fatalf("GET of a denied user: %d %s", r.Status, r.Raw)
	}
}
