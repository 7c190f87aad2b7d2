package httpapi_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/seckill/seckill/domain"
)

func TestOrders(t *testing.T) {
	t.Parallel()
	a := newAPI(t)
	id := a.createVoucher(10, 2)
	other := a.createVoucher(10, 1)
	alice, bob := a.token(10, false), a.token(11, false)
	grab := a.do(http.MethodPost, "/api/v1/vouchers/"+id+"/grab", alice, `{"quantity":2}`)
	if grab.Status != http.StatusAccepted {
		t.Fatalf("grab: %d %s", grab.Status, grab.Raw)
	}
	order := grab.Body["order_id"].(string)

	// Reserved, not yet persisted: it reads queued, from Redis.
	r := a.do(http.MethodGet, "/api/v1/orders/"+order, alice, "")
	if r.Status != http.StatusOK {
		t.Fatalf("get queued order: %d %s", r.Status, r.Raw)
	}
	createdAt := r.Body["created_at"]
	// An unpaid order says when it expires: created_at plus the payment window.
	created, err := time.Parse(time.RFC3339Nano, createdAt.(string))
	if err != nil {
		t.Fatal(err)
	}
	expiresAt := created.Add(time.Duration(paymentWindow)).UTC().Format(domain.StampLayout)
	assertJSON(t, r.Body, map[string]any{"order_id": order, "voucher_id": id, "user_id": "10", "quantity": 2.0,
		"status": "queued", "created_at": createdAt, "expires_at": expiresAt})
	if list := a.do(http.MethodGet, "/api/v1/orders", alice, ""); len(list.Body["orders"].([]any)) != 1 ||
		list.Body["orders"].([]any)[0].(map[string]any)["status"] != "queued" {
		t.Fatalf("the queued order is not listed: %s", list.Raw)
	}

	a.fulfillAll()
	r = a.do(http.MethodGet, "/api/v1/orders/"+order, alice, "")
	assertJSON(t, r.Body, map[string]any{"order_id": order, "voucher_id": id, "user_id": "10", "quantity": 2.0,
		"status": "awaiting_payment", "created_at": createdAt, "expires_at": expiresAt})
	if list := a.do(http.MethodGet, "/api/v1/orders", alice, ""); list.Body["orders"].([]any)[0].(map[string]any)["expires_at"] != expiresAt {
		t.Fatalf("the listed order does not say when it expires: %s", list.Raw)
	}
	if r := a.do(http.MethodGet, "/api/v1/orders/"+order, a.admin, ""); r.Status != http.StatusOK {
		t.Fatalf("admin reads an order: %d %s", r.Status, r.Raw)
	}
	if r := a.do(http.MethodGet, "/api/v1/orders/"+order, bob, ""); r.Status != http.StatusNotFound || r.code() != "not_found" {
		t.Fatalf("another user reads the order: %d %s", r.Status, r.Raw)
	}

	second := a.do(http.MethodPost, "/api/v1/vouchers/"+other+"/grab", alice, "")
	a.fulfillAll()
	list := a.do(http.MethodGet, "/api/v1/orders", alice, "")
	orders, _ := list.Body["orders"].([]any)
	if list.Status != http.StatusOK || len(orders) != 2 || orders[0].(map[string]any)["order_id"] != second.Body["order_id"] {
		t.Fatalf("list, newest first: %d %s", list.Status, list.Raw)
	}
	filtered := a.do(http.MethodGet, "/api/v1/orders?voucher_id="+id, alice, "")
	if orders, _ := filtered.Body["orders"].([]any); len(orders) != 1 || orders[0].(map[string]any)["order_id"] != order {
		t.Fatalf("list filtered by voucher: %s", filtered.Raw)
	}
	if empty := a.do(http.MethodGet, "/api/v1/orders", bob, ""); len(empty.Body["orders"].([]any)) != 0 {
		t.Fatalf("bob sees orders: %s", empty.Raw)
	}

	for _, tc := range []struct {
		name, path, token string
		status            int
		code              string
	}{
		{"malformed id", "/api/v1/orders/not-an-id", alice, 400, "invalid_request"},
		{"lowercase id", "/api/v1/orders/01kb0000000000000000000000", alice, 400, "invalid_request"},
		{"unknown id", "/api/v1/orders/01KB0000000000000000000000", alice, 404, "not_found"},
		{"no token", "/api/v1/orders/" + order, "", 401, "unauthorized"},
		{"list without token", "/api/v1/orders", "", 401, "unauthorized"},
		{"bad voucher filter", "/api/v1/orders?voucher_id=abc", alice, 400, "invalid_request"},
		{"stats as a user", "/api/v1/vouchers/" + id + "/stats", alice, 403, "forbidden"},
		{"stats of unknown voucher", "/api/v1/vouchers/424242/stats", a.admin, 404, "not_found"},
		{"stats bad id", "/api/v1/vouchers/x/stats", a.admin, 400, "invalid_request"},
	} {
		if r := a.do(http.MethodGet, tc.path, tc.token, ""); r.Status != tc.status || r.code() != tc.code {
			t.Errorf("%s: %d %s, want %d %s", tc.name, r.Status, r.Raw, tc.status, tc.code)
		}
	}
}

func TestVoucherStats(t *testing.T) {
	t.Parallel()
	a := newAPI(t)
	id := a.createVoucher(10, 2)
	a.do(http.MethodPost, "/api/v1/vouchers/"+id+"/grab", a.token(10, false), `{"quantity":2}`)
	a.do(http.MethodPost, "/api/v1/vouchers/"+id+"/grab", a.token(11, false), "")
	a.fulfillAll()
	a.do(http.MethodPost, "/api/v1/vouchers/"+id+"/grab", a.token(12, false), "")

	r := a.do(http.MethodGet, "/api/v1/vouchers/"+id+"/stats", a.admin, "")
	if r.Status != http.StatusOK {
		t.Fatalf("stats: %d %s", r.Status, r.Raw)
	}
	// The queued grab has waited since it was taken, a moment ago.
	if age, ok := r.Body["oldest_queued_ms"].(float64); !ok || age < 0 || age > 60_000 {
		t.Fatalf("oldest_queued_ms = %v, want the queued grab's age", r.Body["oldest_queued_ms"])
	}
	delete(r.Body, "oldest_queued_ms")
	assertJSON(t, r.Body, map[string]any{"stock": 10.0, "remaining": 6.0, "queued": 1.0, "awaiting_payment": 3.0,
		"paid": 0.0, "cancelled": 0.0, "expired": 0.0, "failed": 0.0, "pending": 1.0, "waitlist": 0.0})
}

func TestPayAndCancel(t *testing.T) {
	t.Parallel()
	a := newAPI(t)
	id := a.createVoucher(2, 1)
	alice, bob := a.token(10, false), a.token(11, false)
	grab := func(token string) string {
		r := a.do(http.MethodPost, "/api/v1/vouchers/"+id+"/grab", token, "")
		if r.Status != http.StatusAccepted {
			t.Fatalf("grab: %d %s", r.Status, r.Raw)
		}
		return r.Body["order_id"].(string)
	}
	aliceOrder, bobOrder := grab(alice), grab(bob)

	// Not yet persisted: nothing to pay or cancel yet.
	if r := a.do(http.MethodPost, "/api/v1/orders/"+aliceOrder+"/pay", alice, ""); r.Status != http.StatusConflict || r.code() != "invalid_state" {
		t.Fatalf("pay a queued order: %d %s", r.Status, r.Raw)
	}
	a.fulfillAll()

	for _, tc := range []struct {
		name, path, token string
		status            int
		code              string
	}{
		{"pay another's order", "/api/v1/orders/" + bobOrder + "/pay", alice, 404, "not_found"},
		{"cancel another's order", "/api/v1/orders/" + bobOrder + "/cancel", alice, 404, "not_found"},
		{"admin pays another's order", "/api/v1/orders/" + bobOrder + "/pay", a.admin, 404, "not_found"},
		{"pay malformed id", "/api/v1/orders/xyz/pay", alice, 400, "invalid_request"},
		{"cancel malformed id", "/api/v1/orders/xyz/cancel", alice, 400, "invalid_request"},
		{"pay unknown order", "/api/v1/orders/01KB0000000000000000000000/pay", alice, 404, "not_found"},
		{"pay without token", "/api/v1/orders/" + aliceOrder + "/pay", "", 401, "unauthorized"},
	} {
		if r := a.do(http.MethodPost, tc.path, tc.token, ""); r.Status != tc.status || r.code() != tc.code {
			t.Errorf("%s: %d %s, want %d %s", tc.name, r.Status, r.Raw, tc.status, tc.code)
		}
	}

	paid := a.do(http.MethodPost, "/api/v1/orders/"+aliceOrder+"/pay", alice, "")
	if _, expires := paid.Body["expires_at"]; paid.Status != http.StatusOK || paid.Body["status"] != "paid" || paid.Body["order_id"] != aliceOrder || expires {
		t.Fatalf("pay: %d %s, want paid with no expires_at", paid.Status, paid.Raw)
	}
	for _, action := range []string{"pay", "cancel"} {
		if r := a.do(http.MethodPost, "/api/v1/orders/"+aliceOrder+"/"+action, alice, ""); r.Status != http.StatusConflict || r.code() != "invalid_state" {
			t.Fatalf("%s a paid order: %d %s", action, r.Status, r.Raw)
		}
	}

	if got := a.remaining(id); got != 0 {
		t.Fatalf("remaining = %v before cancel, want 0", got)
	}
	cancelled := a.do(http.MethodPost, "/api/v1/orders/"+bobOrder+"/cancel", bob, "")
	if _, expires := cancelled.Body["expires_at"]; cancelled.Status != http.StatusOK || cancelled.Body["status"] != "cancelled" || expires {
		t.Fatalf("cancel: %d %s", cancelled.Status, cancelled.Raw)
	}
	if got := a.remaining(id); got != 1 {
		t.Fatalf("remaining = %v after cancel, want 1", got)
	}
	// The unit is back on sale, and Bob may grab again.
	again := grab(bob)
	if again == bobOrder {
		t.Fatal("the new grab reused the cancelled order's id")
	}
	a.fulfillAll()
	r := a.do(http.MethodGet, "/api/v1/vouchers/"+id+"/stats", a.admin, "")
	assertJSON(t, r.Body, map[string]any{"stock": 2.0, "remaining": 0.0, "queued": 0.0, "awaiting_payment": 1.0,
		"paid": 1.0, "cancelled": 1.0, "expired": 0.0, "failed": 0.0, "pending": 0.0, "oldest_queued_ms": 0.0, "waitlist": 0.0})
}
