package httpapi_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/labstack/echo/v4"

	"github.com/seckill/seckill/adapters/httpapi"
)

// gated serves POST /grab behind a's middleware with a handler that answers 204.
func gated(a *httpapi.Admission, handler echo.HandlerFunc) *echo.Echo {
	e := echo.New()
	e.POST("/grab", handler, a.Middleware())
	return e
}

func gatedPost(e *echo.Echo) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	e.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/grab", nil))
	return rec
}

// assertOverloaded checks the contract's 503: code unavailable, Retry-After 1.
func assertOverloaded(t *testing.T, rec *httptest.ResponseRecorder) {
	t.Helper()
	if got, want := rec.Code, http.StatusServiceUnavailable; got != want {
		t.Fatalf("status = %d, want %d (%s)", got, want, rec.Body)
	}
	if got, want := rec.Header().Get("Retry-After"), "1"; got != want {
		t.Fatalf("Retry-After = %q, want %q", got, want)
	}
	var body struct {
		Error struct{ Code, Message string } `json:"error"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
		t.Fatalf("body %q: %v", rec.Body, err)
	}
	if got, want := body.Error.Code, "unavailable"; got != want || body.Error.Message == "" {
		t.Fatalf("error = %+v, want code %q and a message", body.Error, want)
	}
}

// TestAdmissionBoundsInflight holds requests in the handler: beyond the bound the
// next is refused at once, and a slot given back admits the next one.
func TestAdmissionBoundsInflight(t *testing.T) {
	const bound = 2
	entered, release := make(chan struct{}), make(chan struct{})
	e := gated(httpapi.NewAdmission(bound, 0, 0), func(c echo.Context) error {
		entered <- struct{}{}
		<-release
		return c.NoContent(http.StatusNoContent)
	})
	done := make(chan int, bound+1)
	hold := func() {
		go func() { done <- gatedPost(e).Code }()
		<-entered
	}
	for range bound {
		hold()
	}
	assertOverloaded(t, gatedPost(e))

	release <- struct{}{}
	if got, want := <-done, http.StatusNoContent; got != want {
		t.Fatalf("held request = %d, want %d", got, want)
	}
	hold() // admitted into the freed slot, or it would never enter
	assertOverloaded(t, gatedPost(e))

	for range bound {
		release <- struct{}{}
		if got, want := <-done, http.StatusNoContent; got != want {
			t.Fatalf("held request = %d, want %d", got, want)
		}
	}
}

func TestAdmissionTokenBucket(t *testing.T) {
	// One token every 1000 s: nothing refills while the test runs.
	e := gated(httpapi.NewAdmission(0, 0.001, 2), func(c echo.Context) error {
		return c.NoContent(http.StatusNoContent)
	})
	for i := range 2 {
		if got, want := gatedPost(e).Code, http.StatusNoContent; got != want {
			t.Fatalf("request %d within the burst = %d, want %d", i+1, got, want)
		}
	}
	assertOverloaded(t, gatedPost(e))
}

// TestAdmissionRefusalSpendsNoToken: a request refused for want of a slot leaves the
// bucket as it was.
func TestAdmissionRefusalSpendsNoToken(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	e := gated(httpapi.NewAdmission(1, 0.001, 2), func(c echo.Context) error {
		if c.QueryParam("hold") != "" {
			entered <- struct{}{}
			<-release
		}
		return c.NoContent(http.StatusNoContent)
	})
	done := make(chan int)
	go func() {
		rec := httptest.NewRecorder()
		e.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/grab?hold=1", nil))
		done <- rec.Code
	}()
	<-entered // holds the slot and the first token
	for range 3 {
		assertOverloaded(t, gatedPost(e))
	}
	release <- struct{}{}
	if got, want := <-done, http.StatusNoContent; got != want {
		t.Fatalf("held request = %d, want %d", got, want)
	}
	if got, want := gatedPost(e).Code, http.StatusNoContent; got != want {
		t.Fatalf("second token = %d, want %d", got, want)
	}
	assertOverloaded(t, gatedPost(e))
}

func TestAdmissionOff(t *testing.T) {
	a := httpapi.NewAdmission(0, 0, 0)
	if a.Enabled() {
		t.Fatal("an admission without bounds says it is enabled")
	}
	e := gated(a, func(c echo.Context) error { return c.NoContent(http.StatusNoContent) })
	for range 100 {
		if got, want := gatedPost(e).Code, http.StatusNoContent; got != want {
			t.Fatalf("status = %d, want %d", got, want)
		}
	}
}
