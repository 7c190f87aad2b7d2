package httpapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/seckill/seckill/domain"
)

func TestCreateAndReadVouchers(t *testing.T) {
	t.Parallel()
	a := newAPI(t)
	r := a.do(http.MethodPost, "/api/v1/vouchers", a.admin,
		`{"title":"Coffee","stock":100,"begins_at":"2026-01-01T00:00:00Z","ends_at":"2099-01-01T00:00:00+02:00"}`)
	if r.Status != http.StatusCreated {
		t.Fatalf("create: %d %s", r.Status, r.Raw)
	}
	want := map[string]any{
		"id": r.Body["id"], "title": "Coffee", "stock": 100.0, "remaining": 100.0,
		"begins_at": "2026-01-01T00:00:00.000Z", "ends_at": "2098-12-31T22:00:00.000Z", "per_user_limit": 1.0, "paused": false,
		"state": "live", "admission": "first_come", "challenge": "none",
	}
	if id, ok := r.Body["id"].(string); !ok || id == "" {
		t.Fatalf("id = %v, want a string", r.Body["id"])
	}
	assertJSON(t, r.Body, want)

	got := a.do(http.MethodGet, "/api/v1/vouchers/"+r.Body["id"].(string), "", "")
	if got.Status != http.StatusOK {
		t.Fatalf("get: %d %s", got.Status, got.Raw)
	}
	assertJSON(t, got.Body, want)

	second := a.createVoucher(5, 2)
	list := a.do(http.MethodGet, "/api/v1/vouchers", "", "")
	vs, _ := list.Body["vouchers"].([]any)
	if list.Status != http.StatusOK || len(vs) != 2 || vs[0].(map[string]any)["id"] != second {
		t.Fatalf("list: %d %s", list.Status, list.Raw)
	}
}

func TestCreateVouchersWithFairAdmission(t *testing.T) {
	t.Parallel()
	a := newAPI(t)
	r := a.do(http.MethodPost, "/api/v1/vouchers", a.admin, `{"title":"Room","stock":10,"begins_at":"2098-01-01T00:00:00Z",`+
		`"ends_at":"2099-01-01T00:00:00Z","admission":"waiting_room","queue_window":50,"challenge":"pow","pow_difficulty":12}`)
	if r.Status != http.StatusCreated {
		t.Fatalf("create a waiting room: %d %s", r.Status, r.Raw)
	}
	commitment, _ := r.Body["commitment"].(string)
	assertJSON(t, r.Body, map[string]any{"id": r.Body["id"], "title": "Room", "stock": 10.0, "remaining": 10.0,
		"begins_at": "2098-01-01T00:00:00.000Z", "ends_at": "2099-01-01T00:00:00.000Z", "per_user_limit": 1.0, "paused": false,
		"state": "upcoming", "admission": "waiting_room", "challenge": "pow", "queue_window": 50.0,
		"queue_opens_at": "2097-12-31T23:50:00.000Z", "pow_difficulty": 12.0, "commitment": commitment})
	if len(commitment) != 64 || r.Body["seed"] != nil || r.Body["entries_open_at"] != nil {
		t.Fatalf("a waiting room renders commitment %q, and no seed or entries_open_at: %s", commitment, r.Raw)
	}
	got := a.do(http.MethodGet, "/api/v1/vouchers/"+r.Body["id"].(string), "", "")
	if got.Body["commitment"] != commitment {
		t.Fatalf("read back: commitment %v, want %s", got.Body["commitment"], commitment)
	}

	d := a.do(http.MethodPost, "/api/v1/vouchers", a.admin, `{"title":"Draw","stock":10,"begins_at":"2098-01-01T00:00:00Z",`+
		`"ends_at":"2099-01-01T00:00:00Z","admission":"draw","entries_open_at":"2097-01-01T00:00:00Z"}`)
	if d.Status != http.StatusCreated || d.Body["entries_open_at"] != "2097-01-01T00:00:00.000Z" || d.Body["commitment"] == commitment ||
		d.Body["queue_window"] != nil || d.Body["pow_difficulty"] != nil {
		t.Fatalf("create a draw: %d %s", d.Status, d.Raw)
	}

	for body, field := range map[string]string{
		`"admission":"lottery"`:                                              "admission",
		`"admission":""`:                                                     "admission",
		`"challenge":"captcha"`:                                              "challenge",
		`"pow_difficulty":16`:                                                "pow_difficulty",
		`"challenge":"pow","pow_difficulty":0`:                               "pow_difficulty",
		`"challenge":"pow","pow_difficulty":33`:                              "pow_difficulty",
		`"queue_window":10`:                                                  "queue_window",
		`"admission":"waiting_room","queue_window":0`:                        "queue_window",
		`"admission":"waiting_room","queue_window":-1`:                       "queue_window",
		`"entries_open_at":"2097-01-01T00:00:00Z"`:                           "entries_open_at",
		`"admission":"draw","per_user_limit":2`:                              "per_user_limit",
		`"admission":"waiting_room","queue_opens_at":"2098-01-01T00:00:00Z"`: "queue_opens_at",
	} {
		r := a.do(http.MethodPost, "/api/v1/vouchers", a.admin, `{"title":"Bad","stock":10,"begins_at":"2098-01-01T00:00:00Z",`+
			`"ends_at":"2099-01-01T00:00:00Z",`+body+`}`)
		if r.Status != http.StatusBadRequest || r.code() != "invalid_request" || !strings.Contains(r.Raw, field) {
			t.Errorf("%s: %d %s, want 400 invalid_request naming %s", body, r.Status, r.Raw, field)
		}
	}
}

func TestGrab(t *testing.T) {
	t.Parallel()
	a := newAPI(t)
	id := a.createVoucher(3, 2)
	alice, bob, carol := a.token(10, false), a.token(11, false), a.token(12, false)

	r := a.do(http.MethodPost, "/api/v1/vouchers/"+id+"/grab", alice, "")
	if r.Status != http.StatusAccepted {
		t.Fatalf("grab: %d %s", r.Status, r.Raw)
	}
	order := r.Body["order_id"]
	assertJSON(t, r.Body, map[string]any{"order_id": order, "voucher_id": id, "quantity": 1.0, "status": "queued"})

	again := a.do(http.MethodPost, "/api/v1/vouchers/"+id+"/grab", alice, `{"quantity":1}`)
	if again.Status != http.StatusConflict || again.code() != "already_purchased" {
		t.Fatalf("repeat grab: %d %s", again.Status, again.Raw)
	}
	if got := again.Body["error"].(map[string]any)["order_id"]; got != order {
		t.Fatalf("repeat grab names order %v, want %v", got, order)
	}

	if r := a.do(http.MethodPost, "/api/v1/vouchers/"+id+"/grab", bob, `{"quantity":2}`); r.Status != http.StatusAccepted || r.Body["quantity"] != 2.0 {
		t.Fatalf("grab 2: %d %s", r.Status, r.Raw)
	}
	if r := a.do(http.MethodPost, "/api/v1/vouchers/"+id+"/grab", carol, ""); r.Status != http.StatusConflict || r.code() != "sold_out" {
		t.Fatalf("grab after sell-out: %d %s", r.Status, r.Raw)
	}
	if got := a.remaining(id); got != 0 {
		t.Fatalf("remaining = %v, want 0", got)
	}
	if got := a.streamLen(id); got != 2 {
		t.Fatalf("stream holds %d entries, want 2", got)
	}
}

func TestGrabOutsideTheWindow(t *testing.T) {
	t.Parallel()
	a := newAPI(t)
	now := time.Now().UTC()
	body, _ := json.Marshal(map[string]any{"title": "x", "stock": 1, "begins_at": now.Add(time.Hour), "ends_at": now.Add(2 * time.Hour)})
	c := a.do(http.MethodPost, "/api/v1/vouchers", a.admin, string(body))
	if c.Status != http.StatusCreated {
		t.Fatalf("create: %d %s", c.Status, c.Raw)
	}
	// A sale that has ended cannot be created through the API; this one was created
	// before it ended.
	ended := a.storeVoucher(domain.Voucher{Title: "x", Stock: 1, BeginsAt: now.Add(-2 * time.Hour), EndsAt: now.Add(-time.Hour), PerUserLimit: 1})
	for id, code := range map[string]string{c.Body["id"].(string): "not_started", ended: "ended"} {
		r := a.do(http.MethodPost, "/api/v1/vouchers/"+id+"/grab", a.token(5, false), "")
		if r.Status != http.StatusConflict || r.code() != code {
			t.Fatalf("grab: %d %s, want 409 %s", r.Status, r.Raw, code)
		}
	}
}

// TestBadInputChangesNothing sends every kind of bad request and checks each gets the
// contract's 4xx and code, and that stock, stream and the voucher list are untouched.
func TestBadInputChangesNothing(t *testing.T) {
	t.Parallel()
	a := newAPI(t)
	id := a.createVoucher(10, 2)
	user := a.token(20, false)
	grab := "/api/v1/vouchers/" + id + "/grab"
	expired, _ := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{"sub": "20", "exp": time.Now().Add(-time.Minute).Unix()}).SignedString([]byte(secret))
	noExp, _ := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{"sub": "20"}).SignedString([]byte(secret))
	forged, _ := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{"sub": "20", "role": "admin", "exp": time.Now().Add(time.Hour).Unix()}).SignedString([]byte("another-secret-entirely"))
	badSub, _ := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{"sub": "alice", "exp": time.Now().Add(time.Hour).Unix()}).SignedString([]byte(secret))
	hs512, _ := jwt.NewWithClaims(jwt.SigningMethodHS512, jwt.MapClaims{"sub": "20", "exp": time.Now().Add(time.Hour).Unix()}).SignedString([]byte(secret))
	none, _ := jwt.NewWithClaims(jwt.SigningMethodNone, jwt.MapClaims{"sub": "20", "exp": time.Now().Add(time.Hour).Unix()}).SignedString(jwt.UnsafeAllowNoneSignatureType)
	validVoucher := `{"title":"x","stock":5,"begins_at":"2026-01-01T00:00:00Z","ends_at":"2099-01-01T00:00:00Z"}`

	cases := []struct {
		name, method, path, token, body string
		status                          int
		code                            string
	}{
		{"grab malformed json", "POST", grab, user, `{"quantity":`, 400, "invalid_request"},
		{"grab wrong type", "POST", grab, user, `{"quantity":"2"}`, 400, "invalid_request"},
		{"grab fractional quantity", "POST", grab, user, `{"quantity":1.5}`, 400, "invalid_request"},
		{"grab quantity zero", "POST", grab, user, `{"quantity":0}`, 400, "invalid_request"},
		{"grab quantity negative", "POST", grab, user, `{"quantity":-3}`, 400, "invalid_request"},
		{"grab above per-user limit", "POST", grab, user, `{"quantity":3}`, 400, "invalid_request"},
		{"grab huge quantity", "POST", grab, user, `{"quantity":99999999999999999999}`, 400, "invalid_request"},
		{"grab unknown field", "POST", grab, user, `{"qty":1}`, 400, "invalid_request"},
		{"grab array body", "POST", grab, user, `[1]`, 400, "invalid_request"},
		{"grab two objects", "POST", grab, user, `{"quantity":1}{"quantity":1}`, 400, "invalid_request"},
		{"grab id not a number", "POST", "/api/v1/vouchers/abc/grab", user, "", 400, "invalid_request"},
		{"grab id zero", "POST", "/api/v1/vouchers/0/grab", user, "", 400, "invalid_request"},
		{"grab id negative", "POST", "/api/v1/vouchers/-1/grab", user, "", 400, "invalid_request"},
		{"grab id overflow", "POST", "/api/v1/vouchers/99999999999999999999/grab", user, "", 400, "invalid_request"},
		{"grab unknown voucher", "POST", "/api/v1/vouchers/424242/grab", user, "", 404, "not_found"},
		{"grab oversize body", "POST", grab, user, `{"quantity":1,"pad":"` + strings.Repeat("a", 8<<10) + `"}`, 413, "invalid_request"},
		{"grab no token", "POST", grab, "", "", 401, "unauthorized"},
		{"grab garbage token", "POST", grab, "not.a.jwt", "", 401, "unauthorized"},
		{"grab expired token", "POST", grab, expired, "", 401, "unauthorized"},
		{"grab token without exp", "POST", grab, noExp, "", 401, "unauthorized"},
		{"grab forged token", "POST", grab, forged, "", 401, "unauthorized"},
		{"grab non-numeric subject", "POST", grab, badSub, "", 401, "unauthorized"},
		{"grab other algorithm", "POST", grab, hs512, "", 401, "unauthorized"},
		{"grab alg none", "POST", grab, none, "", 401, "unauthorized"},
		{"create as a user", "POST", "/api/v1/vouchers", user, validVoucher, 403, "forbidden"},
		{"create without token", "POST", "/api/v1/vouchers", "", validVoucher, 401, "unauthorized"},
		{"create with forged admin", "POST", "/api/v1/vouchers", forged, validVoucher, 401, "unauthorized"},
		{"create empty body", "POST", "/api/v1/vouchers", a.admin, "", 400, "invalid_request"},
		{"create missing title", "POST", "/api/v1/vouchers", a.admin, `{"stock":5,"begins_at":"2026-01-01T00:00:00Z","ends_at":"2099-01-01T00:00:00Z"}`, 400, "invalid_request"},
		{"create zero stock", "POST", "/api/v1/vouchers", a.admin, `{"title":"x","stock":0,"begins_at":"2026-01-01T00:00:00Z","ends_at":"2099-01-01T00:00:00Z"}`, 400, "invalid_request"},
		{"create negative stock", "POST", "/api/v1/vouchers", a.admin, `{"title":"x","stock":-1,"begins_at":"2026-01-01T00:00:00Z","ends_at":"2099-01-01T00:00:00Z"}`, 400, "invalid_request"},
		{"create stock as string", "POST", "/api/v1/vouchers", a.admin, `{"title":"x","stock":"5","begins_at":"2026-01-01T00:00:00Z","ends_at":"2099-01-01T00:00:00Z"}`, 400, "invalid_request"},
		{"create reversed window", "POST", "/api/v1/vouchers", a.admin, `{"title":"x","stock":5,"begins_at":"2099-01-01T00:00:00Z","ends_at":"2026-01-01T00:00:00Z"}`, 400, "invalid_request"},
		{"create bad time", "POST", "/api/v1/vouchers", a.admin, `{"title":"x","stock":5,"begins_at":"tomorrow","ends_at":"2099-01-01T00:00:00Z"}`, 400, "invalid_request"},
		{"create limit zero", "POST", "/api/v1/vouchers", a.admin, `{"title":"x","stock":5,"per_user_limit":0,"begins_at":"2026-01-01T00:00:00Z","ends_at":"2099-01-01T00:00:00Z"}`, 400, "invalid_request"},
		{"create title null", "POST", "/api/v1/vouchers", a.admin, `{"title":null,"stock":5,"begins_at":"2026-01-01T00:00:00Z","ends_at":"2099-01-01T00:00:00Z"}`, 400, "invalid_request"},
		{"get id not a number", "GET", "/api/v1/vouchers/x1", "", "", 400, "invalid_request"},
		{"get unknown voucher", "GET", "/api/v1/vouchers/424242", "", "", 404, "not_found"},
		{"unknown route", "GET", "/api/v1/nothing", "", "", 404, "not_found"},
		{"wrong method", "DELETE", "/api/v1/vouchers/" + id, a.admin, "", 405, "method_not_allowed"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := a.do(tc.method, tc.path, tc.token, tc.body)
			if r.Status != tc.status || r.code() != tc.code {
				t.Fatalf("got %d %s, want %d %s", r.Status, r.Raw, tc.status, tc.code)
			}
			if msg, _ := r.Body["error"].(map[string]any)["message"].(string); msg == "" {
				t.Fatalf("error without a message: %s", r.Raw)
			}
		})
	}
	if got := a.remaining(id); got != 10 {
		t.Fatalf("remaining = %v after bad requests, want 10", got)
	}
	if got := a.streamLen(id); got != 0 {
		t.Fatalf("stream holds %d entries after bad requests, want 0", got)
	}
	list := a.do(http.MethodGet, "/api/v1/vouchers", "", "")
	if vs, _ := list.Body["vouchers"].([]any); len(vs) != 1 {
		t.Fatalf("bad creates stored vouchers: %s", list.Raw)
	}
}

func TestHealthAndReadiness(t *testing.T) {
	t.Parallel()
	a := newAPI(t)
	if r := a.do(http.MethodGet, "/healthz", "", ""); r.Status != http.StatusOK {
		t.Fatalf("healthz: %d %s", r.Status, r.Raw)
	}
	r := a.do(http.MethodGet, "/readyz", "", "")
	if r.Status != http.StatusOK {
		t.Fatalf("readyz: %d %s", r.Status, r.Raw)
	}
	assertJSON(t, r.Body["checks"].(map[string]any), map[string]any{"redis": "ok", "database": "ok"})
	// A dependency that stops answering makes the instance not ready.
	if err := a.redis.Close(); err != nil {
		t.Fatal(err)
	}
	r = a.do(http.MethodGet, "/readyz", "", "")
	if r.Status != http.StatusServiceUnavailable || r.code() != "unavailable" || r.Header.Get("Retry-After") == "" {
		t.Fatalf("readyz with redis closed: %d %s", r.Status, r.Raw)
	}
	assertJSON(t, r.Body["checks"].(map[string]any), map[string]any{"redis": "down", "database": "ok"})
}

func assertJSON(t *testing.T, got, want map[string]any) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Fatalf("%s = %v, want %v (in %v)", k, got[k], v, got)
		}
	}
}

// A stalled fulfillment shows on /readyz, which still answers 200: the API can serve.
func TestReadinessShowsAStalledFulfillment(t *testing.T) {
	t.Parallel()
	var stalled atomic.Bool
	a := newAPI(t, func(s *setup) {
		s.http.Fulfillment = func(context.Context) (bool, error) { return stalled.Load(), nil }
	})
	for _, tc := range []struct {
		stalled bool
		want    string
	}{{false, "ok"}, {true, "stalled"}, {false, "ok"}} {
		stalled.Store(tc.stalled)
		r := a.do(http.MethodGet, "/readyz", "", "")
		if r.Status != http.StatusOK || r.Body["fulfilment"] != tc.want {
			t.Fatalf("readyz with fulfillment stalled %v: %d %s, want 200 and %q", tc.stalled, r.Status, r.Raw, tc.want)
		}
	}
}
