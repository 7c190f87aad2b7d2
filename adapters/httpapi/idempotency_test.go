package httpapi_test

import (
	"net/http"
	"strings"
	"testing"
)

// TestIdempotentCreateVoucher: a create repeated with its Idempotency-Key answers the
// first 201 again and stores one voucher; the key with another body is a conflict;
// another admin's same key is theirs; a malformed key is a 400.
func TestIdempotentCreateVoucher(t *testing.T) {
	a := newAPI(t)
	body := `{"title":"once","stock":5,"begins_at":"2026-01-01T00:00:00Z","ends_at":"2099-01-01T00:00:00Z"}`
	first := a.serveFrom(http.MethodPost, "/api/v1/vouchers", a.admin, body, "192.0.2.1:1", "Idempotency-Key", "create-1")
	if first.Status != http.StatusCreated {
		t.Fatalf("first create: %d %s", first.Status, first.Raw)
	}
	again := a.serveFrom(http.MethodPost, "/api/v1/vouchers", a.admin, body, "192.0.2.1:1", "Idempotency-Key", "create-1")
	if again.Status != http.StatusCreated || again.Raw != first.Raw || again.Header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("repeat: %d %q (replayed %q), want the first answer %q", again.Status, again.Raw, again.Header.Get("Idempotent-Replayed"), first.Raw)
	}
	list := a.do(http.MethodGet, "/api/v1/vouchers", "", "")
	if vs, _ := list.Body["vouchers"].([]any); len(vs) != 1 {
		t.Fatalf("vouchers after a repeated create: %s, want one", list.Raw)
	}
	other := strings.Replace(body, `"stock":5`, `"stock":6`, 1)
	conflict := a.serveFrom(http.MethodPost, "/api/v1/vouchers", a.admin, other, "192.0.2.1:1", "Idempotency-Key", "create-1")
	if conflict.Status != http.StatusConflict || conflict.code() != "idempotency_conflict" {
		t.Fatalf("same key, another body: %d %s, want 409 idempotency_conflict", conflict.Status, conflict.Raw)
	}
	theirs := a.serveFrom(http.MethodPost, "/api/v1/vouchers", a.token(2, true), body, "192.0.2.1:1", "Idempotency-Key", "create-1")
	if theirs.Status != http.StatusCreated || theirs.Raw == first.Raw {
		t.Fatalf("another admin's same key: %d %s, want a voucher of their own", theirs.Status, theirs.Raw)
	}
	bad := a.serveFrom(http.MethodPost, "/api/v1/vouchers", a.admin, body, "192.0.2.1:1", "Idempotency-Key", "tab\there")
	if bad.Status != http.StatusBadRequest || bad.code() != "invalid_request" {
		t.Fatalf("a key with a control character: %d %s, want 400", bad.Status, bad.Raw)
	}
}

// TestIdempotentPayAndCancel: a repeated pay answers the first 200 again; a cancel
// with a key that paid is a conflict (another request), and a client error is kept
// and answered again too.
func TestIdempotentPayAndCancel(t *testing.T) {
	a := newAPI(t)
	id := a.createVoucher(5, 1)
	user := a.token(7, false)
	grab := a.do(http.MethodPost, "/api/v1/vouchers/"+id+"/grab", user, "")
	order, _ := grab.Body["order_id"].(string)
	a.fulfillAll()

	pay := func(key string) response {
		return a.serveFrom(http.MethodPost, "/api/v1/orders/"+order+"/pay", user, "", "192.0.2.1:1", "Idempotency-Key", key)
	}
	first := pay("pay-1")
	if first.Status != http.StatusOK {
		t.Fatalf("pay: %d %s", first.Status, first.Raw)
	}
	if again := pay("pay-1"); again.Status != http.StatusOK || again.Raw != first.Raw {
		t.Fatalf("repeated pay: %d %s, want the first answer", again.Status, again.Raw)
	}
	// A new key is a new request: the order is paid already.
	if second := pay("pay-2"); second.Status != http.StatusConflict || second.code() != "invalid_state" {
		t.Fatalf("pay with a new key: %d %s, want 409 invalid_state", second.Status, second.Raw)
	}
	if again := pay("pay-2"); again.Status != http.StatusConflict || again.code() != "invalid_state" {
		t.Fatalf("its repeat: %d %s, want the same 409", again.Status, again.Raw)
	}
	cancel := a.serveFrom(http.MethodPost, "/api/v1/orders/"+order+"/cancel", user, "", "192.0.2.1:1", "Idempotency-Key", "pay-1")
	if cancel.Status != http.StatusConflict || cancel.code() != "idempotency_conflict" {
		t.Fatalf("cancel under the pay's key: %d %s, want 409 idempotency_conflict", cancel.Status, cancel.Raw)
	}
}
