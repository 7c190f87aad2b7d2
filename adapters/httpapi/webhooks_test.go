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
