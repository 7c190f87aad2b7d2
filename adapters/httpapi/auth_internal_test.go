package httpapi

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/labstack/echo/v4"
)

// authenticate reads the Authorization header as echo-jwt's middleware did: any case
// of "Bearer ", each value tried in turn, up to the first at or after the twentieth.
func TestAuthorizationHeaderForms(t *testing.T) {
	t.Parallel()
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
