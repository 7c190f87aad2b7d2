package httpapi

import (
	"encoding/base64"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/labstack/echo/v4"
)

// Every token Mint signs takes the fast path.
func TestMintedTokensAreVerifiedFast(t *testing.T) {
	tokens := NewTokens([]byte("secret"))
	for _, admin := range []bool{false, true} {
		tok, err := tokens.Mint(42, admin, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		c, ok := tokens.verifyMinted(tok, time.Now())
		if !ok || c.subject != "42" || (c.role == roleAdmin) != admin {
			t.Fatalf("admin %v: fast path gave %+v, %v", admin, c, ok)
		}
	}
}

// FuzzVerifyMinted: the fast path accepts only what the general parser accepts, and
// reads the same claims from it.
func FuzzVerifyMinted(f *testing.F) {
	head := base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"HS256","typ":"JWT"}`))
	for _, seed := range []struct {
		header, payload string
		sigFlip         int
	}{
		{head, `{"sub":"42","exp":4102444800}`, -1},
		{head, `{"sub":"42","exp":4102444800.75,"role":"admin","nbf":1}`, -1},
		{head, `{"sub":"42","exp":4102444800,"nbf":4102444000}`, -1},
		{head, `{"sub":"42","exp":1}`, -1},
		{head, `{"sub":"42","exp":"4102444800"}`, -1},
		{head, `{"sub":"42","exp":4102444800}`, 0},
		{head, `{"sub":"42","exp":4102444800}`, 42},
		{head, ` {"sub":"42","exp":4102444800} `, -1},
		{head, `{"sub":"42","exp":4102444800}x`, -1},
		{head, "{\"sub\":\"4\xff\",\"exp\":4102444800}", -1},
		{base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"HS256"}`)), `{"sub":"42","exp":4102444800}`, -1},
		{base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"none","typ":"JWT"}`)), `{"sub":"42","exp":4102444800}`, -1},
	} {
		f.Add(seed.header, seed.payload, seed.sigFlip)
	}
	secret := []byte("secret")
	tokens := NewTokens(secret)
	f.Fuzz(func(t *testing.T, header, payload string, sigFlip int) {
		unsigned := header + "." + base64.RawURLEncoding.EncodeToString([]byte(payload))
		sig, err := jwt.SigningMethodHS256.Sign(unsigned, secret)
		if err != nil {
			t.Fatal(err)
		}
		enc := []byte(base64.RawURLEncoding.EncodeToString(sig))
		if sigFlip >= 0 && len(enc) > 0 {
			i := sigFlip % len(enc)
			if enc[i] == 'A' {
				enc[i] = 'B'
			} else {
				enc[i] = 'A'
			}
		}
		token := unsigned + "." + string(enc)
		now := time.Now()
		fast, ok := tokens.verifyMinted(token, now)
		if !ok {
			return
		}
		var slow claims
		if _, err := tokens.parser.ParseWithClaims(token, &slow, func(*jwt.Token) (any, error) { return secret, nil }); err != nil {
			t.Fatalf("%q: the fast path accepts what the general parser refuses: %v", token, err)
		}
		if fast != slow {
			t.Fatalf("%q: fast path read %+v, general parser %+v", token, fast, slow)
		}
	})
}

// authenticate reads the Authorization header as echo-jwt's middleware did: any case
// of "Bearer ", each value tried in turn, up to the first at or after the twentieth.
func TestAuthorizationHeaderForms(t *testing.T) {
	tokens := NewTokens([]byte("secret"))
	good, err := tokens.Mint(7, false, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	bad := good[:len(good)-2] + "xx"
	repeat := func(v string, n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = v
		}
		return out
	}
	e := echo.New()
	h := authenticate(tokens)(func(c echo.Context) error {
		if p := principal(c); p.User != 7 || p.Admin {
			t.Errorf("principal %+v", p)
		}
		return nil
	})
	for _, tc := range []struct {
		name   string
		values []string
		ok     bool
	}{
		{"none", nil, false},
		{"bearer", []string{"Bearer " + good}, true},
		{"lower-case scheme", []string{"bearer " + good}, true},
		{"scheme alone", []string{"Bearer "}, false},
		{"another scheme", []string{"Basic " + good}, false},
		{"no space", []string{"Bearer" + good}, false},
		{"forged", []string{"Bearer " + bad}, false},
		{"forged, then good", []string{"Bearer " + bad, "Bearer " + good}, true},
		{"other schemes, then good", append(repeat("Basic x", 30), "Bearer "+good), true},
		{"good as the twentieth", append(repeat("Bearer "+bad, 19), "Bearer "+good), true},
		{"good after twenty", append(repeat("Bearer "+bad, 20), "Bearer "+good), false},
	} {
		req := httptest.NewRequest(http.MethodGet, "/", nil)
		req.Header["Authorization"] = tc.values
		err := h(e.NewContext(req, httptest.NewRecorder()))
		if got := err == nil; got != tc.ok {
			t.Errorf("%s: authenticated %v (%v), want %v", tc.name, got, err, tc.ok)
		}
		if err != nil && !errors.Is(err, errUnauthorized) {
			t.Errorf("%s: %v, want errUnauthorized", tc.name, err)
		}
	}
}
