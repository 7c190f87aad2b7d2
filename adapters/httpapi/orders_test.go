package httpapi_test

import (
	"net/http"
	"testing"
)

func TestOrders(t *testing.T) {
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
	assertJSON(t, r.Body, map[string]any{"order_id": order, "voucher_id": id, "user_id": "10", "quantity": 2.0,
		"status": "queued", "created_at": createdAt})
	if list := a.do(http.MethodGet, "/api/v1/orders", alice, ""); len(list.Body["orders"].([]any)) != 1 ||
		list.Body["orders"].([]any)[0].(map[string]any)["status"] != "queued" {
		t.Fatalf("the queued order is not listed: %s", list.Raw)
	}

	a.fulfilAll()
	r = a.do(http.MethodGet, "/api/v1/orders/"+order, alice, "")
	assertJSON(t, r.Body, map[string]any{"order_id": order, "voucher_id": id, "user_id": "10", "quantity": 2.0,
		"status": "awaiting_payment", "created_at": createdAt})
	if r := a.do(http.MethodGet, "/api/v1/orders/"+order, a.admin, ""); r.Status != http.StatusOK {
		t.Fatalf("admin reads an order: %d %s", r.Status, r.Raw)
	}
	if r := a.do(http.MethodGet, "/api/v1/orders/"+order, bob, ""); r.Status != http.StatusNotFound || r.code() != "not_found" {
		t.Fatalf("another user reads the order: %d %s", r.Status, r.Raw)
	}

	second := a.do(http.MethodPost, "/api/v1/vouchers/"+other+"/grab", alice, "")
	a.fulfilAll()
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
	a := newAPI(t)
	id := a.createVoucher(10, 2)
	a.do(http.MethodPost, "/api/v1/vouchers/"+id+"/grab", a.token(10, false), `{"quantity":2}`)
	a.do(http.MethodPost, "/api/v1/vouchers/"+id+"/grab", a.token(11, false), "")
	a.fulfilAll()
	a.do(http.MethodPost, "/api/v1/vouchers/"+id+"/grab", a.token(12, false), "")

	r := a.do(http.MethodGet, "/api/v1/vouchers/"+id+"/stats", a.admin, "")
	if r.Status != http.StatusOK {
		t.Fatalf("stats: %d %s", r.Status, r.Raw)
	}
	assertJSON(t, r.Body, map[string]any{"stock": 10.0, "remaining": 6.0, "queued": 1.0, "awaiting_payment": 3.0,
		"paid": 0.0, "cancelled": 0.0, "expired": 0.0, "failed": 0.0, "pending": 1.0})
}
