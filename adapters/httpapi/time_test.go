package httpapi_test

import (
	"encoding/json"
	"net/http"
	"regexp"
	"testing"
	"time"

	"github.com/seckill/seckill/domain"
)

// GET /api/v1/time tells the sale's clock — here an hour ahead of the host's — to
// anyone, in RFC 3339 with three digits of milliseconds and in Unix milliseconds,
// the same instant, never cached.
func TestTimeTellsTheSaleClock(t *testing.T) {
	t.Parallel()
	clock := &shiftedClock{}
	clock.set(time.Hour)
	a := newAPI(t, withClock(clock))
	before := time.Now().Add(time.Hour).Truncate(time.Millisecond)
	r := a.do(http.MethodGet, "/api/v1/time", "", "")
	after := time.Now().Add(time.Hour)
	if r.Status != http.StatusOK || r.Header.Get("Cache-Control") != "no-store" {
		t.Fatalf("GET /api/v1/time: %d %q %s", r.Status, r.Header.Get("Cache-Control"), r.Raw)
	}
	now, _ := r.Body["now"].(string)
	ms, _ := r.Body["unix_ms"].(float64)
	if !regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$`).MatchString(now) {
		t.Fatalf("now = %q, want RFC 3339 UTC with milliseconds", now)
	}
	parsed, err := time.Parse(time.RFC3339Nano, now)
	if err != nil || parsed.UnixMilli() != int64(ms) {
		t.Fatalf("now %q and unix_ms %v are not one instant (%v)", now, ms, err)
	}
	if parsed.Before(before) || parsed.After(after) {
		t.Fatalf("the time told, %s, is not the sale's clock: between %s and %s", now, before, after)
	}
}

// stateOf reads the state the API says a voucher's sale is in.
func (a *api) stateOf(id string) string {
	a.t.Helper()
	r := a.do(http.MethodGet, "/api/v1/vouchers/"+id, "", "")
	if r.Status != http.StatusOK {
		a.t.Fatalf("get voucher %s: %d %s", id, r.Status, r.Raw)
	}
	return r.Body["state"].(string)
}

// Every voucher answer says its sale's state — upcoming, live, paused, sold_out,
// ended — the pause and resume answers included, and the list says the same.
func TestVoucherStates(t *testing.T) {
	t.Parallel()
	a := newAPI(t)
	now := time.Now()
	live := a.createVoucher(1, 1)
	upcoming := a.storeVoucher(domain.Voucher{Title: "soon", Stock: 5, PerUserLimit: 1,
		BeginsAt: now.Add(time.Hour), EndsAt: now.Add(2 * time.Hour)})
	ended := a.storeVoucher(domain.Voucher{Title: "gone", Stock: 5, PerUserLimit: 1,
		BeginsAt: now.Add(-2 * time.Hour), EndsAt: now.Add(-time.Hour)})
	for id, want := range map[string]string{live: "live", upcoming: "upcoming", ended: "ended"} {
		if got := a.stateOf(id); got != want {
			t.Errorf("voucher %s: state %s, want %s", id, got, want)
		}
	}
	if r := a.do(http.MethodPost, "/api/v1/vouchers/"+live+"/grab", a.token(5, false), ""); r.Status != http.StatusAccepted {
		t.Fatalf("grab: %d %s", r.Status, r.Raw)
	}
	if got := a.stateOf(live); got != "sold_out" {
		t.Fatalf("after its last unit: %s, want sold_out", got)
	}
	if r := a.do(http.MethodPost, "/api/v1/vouchers/"+live+"/pause", a.admin, ""); r.Body["state"] != "paused" {
		t.Fatalf("pause answers %s, want state paused", r.Raw)
	}
	if r := a.do(http.MethodPost, "/api/v1/vouchers/"+live+"/pause", a.admin, ""); r.Body["state"] != "paused" {
		t.Fatalf("pause again answers %s, want state paused", r.Raw)
	}
	if r := a.do(http.MethodPost, "/api/v1/vouchers/"+upcoming+"/pause", a.admin, ""); r.Body["state"] != "upcoming" {
		t.Fatalf("pausing an upcoming sale answers %s, want it still upcoming", r.Raw)
	}
	if r := a.do(http.MethodPost, "/api/v1/vouchers/"+live+"/resume", a.admin, ""); r.Body["state"] != "sold_out" {
		t.Fatalf("resume answers %s, want state sold_out", r.Raw)
	}
	list := a.do(http.MethodGet, "/api/v1/vouchers", "", "")
	var page struct {
		Vouchers []struct{ ID, State string }
	}
	if err := json.Unmarshal([]byte(list.Raw), &page); err != nil {
		t.Fatal(err)
	}
	states := map[string]string{}
	for _, v := range page.Vouchers {
		states[v.ID] = v.State
	}
	if states[live] != "sold_out" || states[upcoming] != "upcoming" || states[ended] != "ended" {
		t.Fatalf("the list says %v", states)
	}
}

// A voucher's state is judged by the sale's clock, not the window alone: with the
// sale's clock an hour ahead of the host's, a sale that begins in half an hour by the
// host is live, and one that begins in two hours is upcoming.
func TestVoucherStateByTheSaleClock(t *testing.T) {
	t.Parallel()
	clock := &shiftedClock{}
	clock.set(time.Hour)
	a := newAPI(t, withClock(clock))
	now := time.Now()
	soon := a.storeVoucher(domain.Voucher{Title: "soon", Stock: 5, PerUserLimit: 1,
		BeginsAt: now.Add(30 * time.Minute), EndsAt: now.Add(3 * time.Hour)})
	later := a.storeVoucher(domain.Voucher{Title: "later", Stock: 5, PerUserLimit: 1,
		BeginsAt: now.Add(2 * time.Hour), EndsAt: now.Add(3 * time.Hour)})
	if got := a.stateOf(soon); got != "live" {
		t.Fatalf("a sale that began by the sale's clock: %s, want live", got)
	}
	if got := a.stateOf(later); got != "upcoming" {
		t.Fatalf("a sale still to begin by the sale's clock: %s, want upcoming", got)
	}
}

// A payment that arrives after the order's expires_at — by the sale's clock — is
// refused 409 invalid_state, though the sweeper has not expired the order yet; one
// that arrives before it is taken.
func TestPaymentAfterExpiresAtIsRefused(t *testing.T) {
	t.Parallel()
	clock := &shiftedClock{}
	a := newAPI(t, withClock(clock))
	id := a.createVoucher(5, 1)
	alice, bob := a.token(10, false), a.token(11, false)
	var orders []string
	for _, tok := range []string{alice, bob} {
		r := a.do(http.MethodPost, "/api/v1/vouchers/"+id+"/grab", tok, "")
		if r.Status != http.StatusAccepted {
			t.Fatalf("grab: %d %s", r.Status, r.Raw)
		}
		orders = append(orders, r.Body["order_id"].(string))
	}
	a.fulfillAll()
	order := a.do(http.MethodGet, "/api/v1/orders/"+orders[0], alice, "")
	expiresAt, err := time.Parse(time.RFC3339Nano, order.Body["expires_at"].(string))
	if err != nil {
		t.Fatalf("expires_at of %s: %v", order.Raw, err)
	}
	if r := a.do(http.MethodPost, "/api/v1/orders/"+orders[1]+"/pay", bob, ""); r.Status != http.StatusOK {
		t.Fatalf("pay in time: %d %s", r.Status, r.Raw)
	}
	clock.set(time.Until(expiresAt) + time.Second)
	if r := a.do(http.MethodPost, "/api/v1/orders/"+orders[0]+"/pay", alice, ""); r.Status != http.StatusConflict || r.code() != "invalid_state" {
		t.Fatalf("pay after expires_at: %d %s, want 409 invalid_state", r.Status, r.Raw)
	}
	if r := a.do(http.MethodGet, "/api/v1/orders/"+orders[0], alice, ""); r.Body["status"] != "awaiting_payment" {
		t.Fatalf("the order refused payment is %s, want it left to the sweeper", r.Raw)
	}
}
