package httpapi_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

// The fuzz targets send what a hostile client could to the API wired on real Redis
// and the database (the NUL title's 500 came from PostgreSQL, which no fake would
// have shown), and hold every answer to the contract: a success or a 4xx with the
// JSON error body — never a panic (the recover middleware would answer 500) nor a
// 500. A 503 is allowed: it says a dependency was slow under the fuzzer's load, not
// that an input was mishandled. Run one with, for example:
//
//	go test -run '^$' -fuzz '^FuzzCreateVoucherBody$' -fuzztime 30s ./adapters/httpapi
//
// The seed corpus is in testdata/fuzz; the seeds below are the well-formed cases.

// checkAnswer fails t unless rec is a success or a 4xx with the contract's error body.
func checkAnswer(t *testing.T, req *http.Request, rec *httptest.ResponseRecorder) {
	t.Helper()
	switch {
	case rec.Code == http.StatusServiceUnavailable:
		return
	case rec.Code >= 200 && rec.Code < 300:
		return
	case rec.Code >= 400 && rec.Code < 500:
		var body struct {
			Error struct{ Code, Message string }
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil || body.Error.Code == "" || body.Error.Message == "" {
			t.Fatalf("%s %s: %d with body %q, want the JSON error body", req.Method, req.URL, rec.Code, rec.Body)
		}
	default:
		t.Fatalf("%s %s: %d %s, want a success or a 4xx", req.Method, req.URL, rec.Code, rec.Body)
	}
}

// serveRaw sends req, with token when not empty, to the API in-process and checks
// the answer.
func (a *api) serveRaw(t *testing.T, req *http.Request, token string) *httptest.ResponseRecorder {
	t.Helper()
	req.RemoteAddr = "192.0.2.1:5000"
	if req.Body == nil {
		req.Body = http.NoBody // as the server gives every request
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	rec := httptest.NewRecorder()
	a.e.ServeHTTP(rec, req)
	checkAnswer(t, req, rec)
	return rec
}

func FuzzCreateVoucherBody(f *testing.F) {
	for _, seed := range []string{
		`{"title":"Coffee","stock":100,"begins_at":"2026-01-01T00:00:00Z","ends_at":"2099-01-01T00:00:00Z","per_user_limit":1}`,
		`{"title":"x","stock":1,"begins_at":"2026-01-01T00:00:00+02:00","ends_at":"2099-01-01T00:00:00.123Z"}`,
		`{}`, ``, `[]`,
	} {
		f.Add(seed)
	}
	a := newAPI(f)
	f.Fuzz(func(t *testing.T, body string) {
		req := httptest.NewRequest(http.MethodPost, "/api/v1/vouchers", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		a.serveRaw(t, req, a.admin)
	})
}

func FuzzEditVoucherBody(f *testing.F) {
	for _, seed := range []string{
		`{"add_units":5}`, `{"remove_units":1}`, `{"per_user_limit":2,"title":"Tea"}`,
		`{"ends_at":"2099-06-01T00:00:00Z"}`, `{"begins_at":"2026-01-01T00:00:00Z"}`,
		`{"add_units":null}`, `{}`, ``, `[]`,
	} {
		f.Add(seed)
	}
	a := newAPI(f)
	id := a.createVoucher(1_000_000, 1)
	f.Fuzz(func(t *testing.T, body string) {
		req := httptest.NewRequest(http.MethodPatch, "/api/v1/vouchers/"+id, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		a.serveRaw(t, req, a.admin)
	})
}

func FuzzGrabBody(f *testing.F) {
	for _, seed := range []string{`{"quantity":1}`, `{"quantity":2}`, ``, `{}`, `{"quantity":null}`} {
		f.Add(seed)
	}
	a := newAPI(f)
	path := "/api/v1/vouchers/" + a.createVoucher(1_000_000, 3) + "/grab"
	user := a.token(7, false)
	f.Fuzz(func(t *testing.T, body string) {
		req := httptest.NewRequest(http.MethodPost, path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		a.serveRaw(t, req, user)
	})
}

// FuzzOrderIDs sends an id to each route that takes an order id: read, pay, cancel.
func FuzzOrderIDs(f *testing.F) {
	a := newAPI(f)
	id := a.createVoucher(100, 1)
	user := a.token(7, false)
	grabbed := a.do(http.MethodPost, "/api/v1/vouchers/"+id+"/grab", user, "")
	order, _ := grabbed.Body["order_id"].(string)
	for _, seed := range []string{order, "01ARZ3NDEKTSV4RRFFQ69G5FAV", "0", "", "../vouchers", "01ARZ3NDEKTSV4RRFFQ69G5FA!"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, orderID string) {
		base := "/api/v1/orders/" + url.PathEscape(orderID)
		for _, route := range []struct{ method, path string }{
			{http.MethodGet, base}, {http.MethodPost, base + "/pay"}, {http.MethodPost, base + "/cancel"},
		} {
			req, err := http.NewRequest(route.method, route.path, nil)
			if err != nil {
				return // not a request a client could send
			}
			a.serveRaw(t, req, user)
		}
	})
}

// FuzzVoucherIDs sends an id to each route that takes a voucher id.
func FuzzVoucherIDs(f *testing.F) {
	for _, seed := range []string{"1", "0", "-1", "01", "99999999999999999999", "1;DROP", ""} {
		f.Add(seed)
	}
	a := newAPI(f)
	a.createVoucher(100, 1)
	user := a.token(8, false)
	f.Fuzz(func(t *testing.T, voucherID string) {
		base := "/api/v1/vouchers/" + url.PathEscape(voucherID)
		for _, route := range []struct{ method, path, token string }{
			{http.MethodGet, base, ""}, {http.MethodPost, base + "/grab", user},
			{http.MethodGet, base + "/stats", a.admin}, {http.MethodPost, base + "/pause", a.admin},
			{http.MethodPost, base + "/resume", a.admin}, {http.MethodGet, base + "/queue/stats", a.admin},
		} {
			req, err := http.NewRequest(route.method, route.path, nil)
			if err != nil {
				return
			}
			a.serveRaw(t, req, route.token)
		}
	})
}

// FuzzQueryStrings sends a raw query string, as the client wrote it, to the routes
// that read one (and to one that reads none).
func FuzzQueryStrings(f *testing.F) {
	for _, seed := range []string{"voucher_id=1", "voucher_id=", "voucher_id=1;DROP%20TABLE%20orders", "voucher_id=%zz", "voucher_id=1&voucher_id=2", "a=b&c", "", "limit=2", "limit=0", "limit=201", "limit=-1", "status=live&limit=1", "status=soon", "cursor=", "cursor=dnx8MQ", "cursor=bw", "voucher_id=1&cursor=b3wwfDF8WA"} {
		f.Add(seed)
	}
	a := newAPI(f)
	a.createVoucher(100, 1)
	user := a.token(9, false)
	f.Fuzz(func(t *testing.T, query string) {
		for _, path := range []string{"/api/v1/orders", "/api/v1/vouchers"} {
			req := httptest.NewRequest(http.MethodGet, path, nil)
			req.URL.RawQuery = query
			a.serveRaw(t, req, user)
		}
	})
}

// FuzzTokenClaims signs a payload with the right secret and presents it: a payload
// that is not a valid claim set must be refused with 401, never accepted by accident
// nor answered 500.
func FuzzTokenClaims(f *testing.F) {
	for _, seed := range []string{
		`{"sub":"42","exp":4102444800}`,
		`{"sub":"42","exp":4102444800,"role":"admin"}`,
		`{"sub":"42","exp":"4102444800"}`,
		`{"sub":"042","exp":4102444800}`,
		`{"sub":42,"exp":4102444800}`,
		`{"SUB":"42","exp":4102444800}`,
		`{"sub":"42","exp":1e400}`,
		`{"sub":"42","sub":"43","exp":4102444800}`,
	} {
		f.Add(seed)
	}
	a := newAPI(f)
	f.Fuzz(func(t *testing.T, payload string) {
		token := signRaw(t, payload)
		req := httptest.NewRequest(http.MethodGet, "/api/v1/orders", nil)
		rec := a.serveRaw(t, req, token)
		if rec.Code != http.StatusOK && rec.Code != http.StatusUnauthorized && rec.Code != http.StatusServiceUnavailable {
			t.Fatalf("payload %q: %d %s, want 200 or 401", payload, rec.Code, rec.Body)
		}
		if rec.Code == http.StatusOK {
			p, err := a.tokens.Parse(token)
			if err != nil || p.User <= 0 || p.User.String() == "" {
				t.Fatalf("payload %q accepted as %+v, %v", payload, p, err)
			}
		}
	})
}
