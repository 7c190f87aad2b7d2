package httpapi_test

import (
	"encoding/base64"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// TestStrictInput sends the requests a lenient decoder would accept, or answer 500,
// and checks each is refused with the contract's 4xx, changing nothing.
func TestStrictInput(t *testing.T) {
	t.Parallel()
	a := newAPI(t)
	id := a.createVoucher(10, 2)
	user := a.token(20, false)
	grab := "/api/v1/vouchers/" + id + "/grab"
	future := time.Now().Add(time.Hour).Unix()
	sign := func(claims jwt.MapClaims) string {
		s, err := jwt.NewWithClaims(jwt.SigningMethodHS256, claims).SignedString([]byte(secret))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	const window = `"begins_at":"2026-01-01T00:00:00Z","ends_at":"2099-01-01T00:00:00Z"`
	past := time.Now().Add(-time.Minute).UTC().Format(time.RFC3339)

	cases := []struct {
		name, method, path, token, body string
		status                          int
		code                            string
	}{
		{"title with NUL", "POST", "/api/v1/vouchers", a.admin, `{"title":"a\u0000b","stock":5,` + window + `}`, 400, "invalid_request"},
		{"title with a newline", "POST", "/api/v1/vouchers", a.admin, `{"title":"a\nb","stock":5,` + window + `}`, 400, "invalid_request"},
		{"title with invalid UTF-8", "POST", "/api/v1/vouchers", a.admin, "{\"title\":\"a\xffb\",\"stock\":5," + window + "}", 400, "invalid_request"},
		{"upper-case key", "POST", "/api/v1/vouchers", a.admin, `{"title":"x","STOCK":7,` + window + `}`, 400, "invalid_request"},
		{"mixed-case key", "POST", "/api/v1/vouchers", a.admin, `{"Title":"x","stock":7,` + window + `}`, 400, "invalid_request"},
		{"repeated key", "POST", "/api/v1/vouchers", a.admin, `{"title":"x","stock":7,"stock":8,` + window + `}`, 400, "invalid_request"},
		{"ends_at in the past", "POST", "/api/v1/vouchers", a.admin, `{"title":"x","stock":7,"begins_at":"2026-01-01T00:00:00Z","ends_at":"` + past + `"}`, 400, "invalid_request"},
		{"begins_at in year 0", "POST", "/api/v1/vouchers", a.admin, `{"title":"x","stock":7,"begins_at":"0000-01-01T00:00:00Z","ends_at":"2099-01-01T00:00:00Z"}`, 400, "invalid_request"},
		{"stock not integral", "POST", "/api/v1/vouchers", a.admin, `{"title":"x","stock":7.0,` + window + `}`, 400, "invalid_request"},
		{"stock in exponent form", "POST", "/api/v1/vouchers", a.admin, `{"title":"x","stock":7e0,` + window + `}`, 400, "invalid_request"},
		{"stock out of range", "POST", "/api/v1/vouchers", a.admin, `{"title":"x","stock":1e30,` + window + `}`, 400, "invalid_request"},
		{"body null", "POST", "/api/v1/vouchers", a.admin, `null`, 400, "invalid_request"},
		{"trailing data", "POST", "/api/v1/vouchers", a.admin, `{"title":"x","stock":7,` + window + `} x`, 400, "invalid_request"},
		{"grab upper-case key", "POST", grab, user, `{"QUANTITY":1}`, 400, "invalid_request"},
		{"grab repeated key", "POST", grab, user, `{"quantity":1,"quantity":2}`, 400, "invalid_request"},
		{"grab trailing garbage", "POST", grab, user, `{"quantity":1}]`, 400, "invalid_request"},
		{"grab body null", "POST", grab, user, `null`, 400, "invalid_request"},
		{"voucher id with leading zero", "GET", "/api/v1/vouchers/0" + id, "", "", 400, "invalid_request"},
		{"voucher_id with SQL", "GET", "/api/v1/orders?voucher_id=1;DROP%20TABLE%20orders", user, "", 400, "invalid_request"},
		{"voucher_id empty", "GET", "/api/v1/orders?voucher_id=", user, "", 400, "invalid_request"},
		{"voucher_id repeated", "GET", "/api/v1/orders?voucher_id=1&voucher_id=2", user, "", 400, "invalid_request"},
		{"voucher_id signed", "GET", "/api/v1/orders?voucher_id=%2B1", user, "", 400, "invalid_request"},
		{"query bad escape", "GET", "/api/v1/orders?voucher_id=%zz", user, "", 400, "invalid_request"},
		{"exp a string", "POST", grab, sign(jwt.MapClaims{"sub": "20", "exp": "9999999999"}), "", 401, "unauthorized"},
		{"exp null", "POST", grab, sign(jwt.MapClaims{"sub": "20", "exp": nil}), "", 401, "unauthorized"},
		{"exp absurd", "POST", grab, sign(jwt.MapClaims{"sub": "20", "exp": 1e300}), "", 401, "unauthorized"},
		{"sub with leading zero", "POST", grab, sign(jwt.MapClaims{"sub": "020", "exp": future}), "", 401, "unauthorized"},
		{"sub with sign", "POST", grab, sign(jwt.MapClaims{"sub": "+20", "exp": future}), "", 401, "unauthorized"},
		{"sub a number", "POST", grab, sign(jwt.MapClaims{"sub": 20, "exp": future}), "", 401, "unauthorized"},
		{"sub upper-case key", "POST", grab, sign(jwt.MapClaims{"SUB": "20", "exp": future}), "", 401, "unauthorized"},
		{"sub repeated", "POST", grab, signRaw(t, `{"sub":"20","sub":"21","exp":`+jsonNumber(future)+`}`), "", 401, "unauthorized"},
		{"role not a string", "POST", "/api/v1/vouchers", sign(jwt.MapClaims{"sub": "1", "role": []string{"admin"}, "exp": future}), `{}`, 401, "unauthorized"},
		{"nbf in the future", "POST", grab, sign(jwt.MapClaims{"sub": "20", "exp": future, "nbf": future}), "", 401, "unauthorized"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := a.do(tc.method, tc.path, tc.token, tc.body)
			if r.Status != tc.status || r.code() != tc.code {
				t.Fatalf("got %d %s, want %d %s", r.Status, r.Raw, tc.status, tc.code)
			}
		})
	}
	if got := a.remaining(id); got != 10 {
		t.Fatalf("remaining = %v after bad requests, want 10", got)
	}
	list := a.do(http.MethodGet, "/api/v1/vouchers", "", "")
	if vs, _ := list.Body["vouchers"].([]any); len(vs) != 1 {
		t.Fatalf("bad creates stored vouchers: %s", list.Raw)
	}

	// The strict decoder still takes what the contract allows.
	good := []struct{ name, method, path, token, body string }{
		{"fractional exp", "GET", "/api/v1/orders?voucher_id=" + id, sign(jwt.MapClaims{"sub": "20", "exp": float64(future) + 0.5}), ""},
		{"unknown claims ignored", "GET", "/api/v1/orders", sign(jwt.MapClaims{"sub": "20", "exp": future, "iat": time.Now().Unix(), "jti": "x"}), ""},
		{"emoji title", "POST", "/api/v1/vouchers", a.admin, `{"title":"☕ Café \u200d","stock":1,` + window + `}`},
		{"explicit null limit", "POST", "/api/v1/vouchers", a.admin, `{"title":"x","stock":1,"per_user_limit":null,` + window + `}`},
		{"unknown query parameter", "GET", "/api/v1/vouchers?cachebust=1", "", ""},
	}
	for _, tc := range good {
		t.Run(tc.name, func(t *testing.T) {
			if r := a.do(tc.method, tc.path, tc.token, tc.body); r.Status >= 300 {
				t.Fatalf("got %d %s, want success", r.Status, r.Raw)
			}
		})
	}
}

// signRaw signs payload as it is, byte for byte, with the test secret.
func signRaw(t testing.TB, payload string) string {
	t.Helper()
	enc := base64.RawURLEncoding.EncodeToString
	head := enc([]byte(`{"alg":"HS256","typ":"JWT"}`))
	unsigned := head + "." + enc([]byte(payload))
	sig, err := jwt.SigningMethodHS256.Sign(unsigned, []byte(secret))
	if err != nil {
		t.Fatal(err)
	}
	return unsigned + "." + enc(sig)
}

func jsonNumber(n int64) string { return strconv.FormatInt(n, 10) }
