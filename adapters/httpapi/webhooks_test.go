package httpapi_test

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/seckill/seckill/adapters/httpapi"
	"github.com/seckill/seckill/domain"
)

// TestWebhookDeliveriesListed grabs the last unit and pays for it: the outbox holds
// order.awaiting_payment, voucher.sold_out and order.paid, listed newest first, each
// with its order or voucher as the API renders it.
func TestWebhookDeliveriesListed(t *testing.T) {
	a := newAPI(t)
	id := a.createVoucher(1, 1)
	user := a.token(7, false)
	g := a.do(http.MethodPost, "/api/v1/vouchers/"+id+"/grab", user, `{"quantity":1}`)
	if g.Status != http.StatusAccepted {
		t.Fatalf("grab: %d %s", g.Status, g.Raw)
	}
	a.fulfillAll()
	order := g.Body["order_id"].(string)
	if r := a.do(http.MethodPost, "/api/v1/orders/"+order+"/pay", user, ""); r.Status != http.StatusOK {
		t.Fatalf("pay: %d %s", r.Status, r.Raw)
	}
	paid := a.do(http.MethodGet, "/api/v1/orders/"+order, user, "")

	if r := a.do(http.MethodGet, "/api/v1/webhooks/deliveries", user, ""); r.Status != http.StatusForbidden {
		t.Fatalf("a user's list: %d, want 403", r.Status)
	}
	r := a.do(http.MethodGet, "/api/v1/webhooks/deliveries?status=pending&limit=2", a.admin, "")
	if r.Status != http.StatusOK {
		t.Fatalf("list: %d %s", r.Status, r.Raw)
	}
	var page struct {
		Deliveries []struct {
			ID        string          `json:"id"`
			Type      string          `json:"type"`
			Status    string          `json:"status"`
			Attempts  int             `json:"attempts"`
			CreatedAt time.Time       `json:"created_at"`
			Next      *time.Time      `json:"next_attempt_at"`
			Data      json.RawMessage `json:"data"`
		} `json:"deliveries"`
		NextCursor string `json:"next_cursor"`
	}
	if err := json.Unmarshal([]byte(r.Raw), &page); err != nil {
		t.Fatal(err)
	}
	if len(page.Deliveries) != 2 || page.NextCursor == "" || page.Deliveries[0].Type != "order.paid" {
		t.Fatalf("first page = %s", r.Raw)
	}
	first := page.Deliveries[0]
	if first.Status != "pending" || first.Attempts != 0 || first.Next == nil || first.CreatedAt.IsZero() {
		t.Fatalf("order.paid delivery = %+v", first)
	}
	if !sameJSON(t, first.Data, paid.Raw) {
		t.Fatalf("order.paid data = %s, want the order as GET answers it: %s", first.Data, paid.Raw)
	}
	if page.Deliveries[1].Type != "voucher.sold_out" {
		t.Fatalf("second delivery = %+v, want voucher.sold_out", page.Deliveries[1])
	}
	var v httpapi.VoucherJSON
	if err := json.Unmarshal(page.Deliveries[1].Data, &v); err != nil || v.ID != id || v.Remaining != 0 || v.State != domain.StateSoldOut {
		t.Fatalf("voucher.sold_out data = %s (%v)", page.Deliveries[1].Data, err)
	}
	next := a.do(http.MethodGet, "/api/v1/webhooks/deliveries?status=pending&limit=2&cursor="+page.NextCursor, a.admin, "")
	if next.Status != http.StatusOK || len(next.Body["deliveries"].([]any)) != 1 || next.Body["next_cursor"] != nil {
		t.Fatalf("second page: %d %s", next.Status, next.Raw)
	}
	for _, q := range []string{"?status=sent", "?status=", "?limit=0", "?limit=201", "?cursor=bogus",
		"?status=failed&cursor=" + page.NextCursor} {
		if r := a.do(http.MethodGet, "/api/v1/webhooks/deliveries"+q, a.admin, ""); r.Status != http.StatusBadRequest || r.code() != "invalid_request" {
			t.Errorf("%s: %d %s, want 400 invalid_request", q, r.Status, r.Raw)
		}
	}
}

// TestWebhookDeliveryRetried checks POST …/deliveries/{id}/retry: an admin's retry of
// a delivery answers 202 with it pending and due, appends the audit entry
// webhook.retry; an unknown id is 404 not_found, a user 403, no token 401.
func TestWebhookDeliveryRetried(t *testing.T) {
	a := newAPI(t)
	id := a.createVoucher(1, 1)
	if g := a.do(http.MethodPost, "/api/v1/vouchers/"+id+"/grab", a.token(7, false), `{"quantity":1}`); g.Status != http.StatusAccepted {
		t.Fatalf("grab: %d %s", g.Status, g.Raw)
	}
	a.fulfillAll()
	list := a.do(http.MethodGet, "/api/v1/webhooks/deliveries?limit=1", a.admin, "")
	ds, _ := list.Body["deliveries"].([]any)
	if list.Status != http.StatusOK || len(ds) != 1 {
		t.Fatalf("list: %d %s", list.Status, list.Raw)
	}
	delivery := ds[0].(map[string]any)["id"].(string)
	path := "/api/v1/webhooks/deliveries/" + delivery + "/retry"

	if r := a.do(http.MethodPost, path, a.token(7, false), ""); r.Status != http.StatusForbidden {
		t.Fatalf("a user's retry: %d %s, want 403", r.Status, r.Raw)
	}
	if r := a.do(http.MethodPost, path, "", ""); r.Status != http.StatusUnauthorized {
		t.Fatalf("a retry without a token: %d %s, want 401", r.Status, r.Raw)
	}
	r := a.do(http.MethodPost, path, a.admin, "")
	if r.Status != http.StatusAccepted || r.Body["id"] != delivery || r.Body["status"] != "pending" || r.Body["next_attempt_at"] == nil {
		t.Fatalf("retry: %d %s, want 202 with the delivery pending and due", r.Status, r.Raw)
	}
	if r := a.do(http.MethodPost, "/api/v1/webhooks/deliveries/01KB0000000000000000000000/retry", a.admin, ""); r.Status != http.StatusNotFound || r.code() != "not_found" {
		t.Fatalf("retry of an unknown delivery: %d %s, want 404 not_found", r.Status, r.Raw)
	}
	audit := a.do(http.MethodGet, "/api/v1/audit?limit=1", a.admin, "")
	entries, _ := audit.Body["entries"].([]any)
	if len(entries) != 1 {
		t.Fatalf("audit: %d %s", audit.Status, audit.Raw)
	}
	e := entries[0].(map[string]any)
	after, _ := e["after"].(map[string]any)
	if e["action"] != "webhook.retry" || e["voucher_id"] != nil || after["delivery_id"] != delivery || after["status"] != "pending" {
		t.Fatalf("the retry's audit entry = %s", audit.Raw)
	}
}

// sameJSON reports whether a and b hold the same JSON value.
func sameJSON(t *testing.T, a json.RawMessage, b string) bool {
	t.Helper()
	var x, y any
	if err := json.Unmarshal(a, &x); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(b), &y); err != nil {
		t.Fatal(err)
	}
	xb, _ := json.Marshal(x)
	yb, _ := json.Marshal(y)
	return string(xb) == string(yb)
}
