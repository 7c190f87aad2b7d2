package httpapi_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/seckill/seckill/adapters/httpapi"
	"github.com/seckill/seckill/domain"
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
	t.Parallel()
	const bound = 2
	entered, release := make(chan struct{}), make(chan struct{})
	e := gated(httpapi.NewAdmission(httpapi.AdmissionOptions{MaxInflight: bound}), func(c echo.Context) error {
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
	t.Parallel()
	// One token every 1000 s: nothing refills while the test runs.
	e := gated(httpapi.NewAdmission(httpapi.AdmissionOptions{PerSecond: 0.001, Burst: 2}), func(c echo.Context) error {
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
	t.Parallel()
	entered, release := make(chan struct{}), make(chan struct{})
	e := gated(httpapi.NewAdmission(httpapi.AdmissionOptions{MaxInflight: 1, PerSecond: 0.001, Burst: 2}), func(c echo.Context) error {
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
	t.Parallel()
	a := httpapi.NewAdmission(httpapi.AdmissionOptions{})
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

// TestAdmissionLimitAdapts: requests slower than the target back the limit off by a
// tenth — once for all those that end within one target of each other, never below the
// floor — and each request answered in time gives one slot back, up to the maximum.
func TestAdmissionLimitAdapts(t *testing.T) {
	t.Parallel()
	var clock atomic.Int64 // ns
	a := httpapi.NewAdmission(httpapi.AdmissionOptions{
		MaxInflight: 100, MinInflight: 80, Target: time.Second,
		Now: func() time.Time { return time.Unix(0, clock.Load()) },
	})
	var hold atomic.Bool
	entered, release := make(chan struct{}), make(chan struct{})
	e := gated(a, func(c echo.Context) error {
		if hold.Load() {
			entered <- struct{}{}
			<-release
		}
		return c.NoContent(http.StatusNoContent)
	})
	// slow runs three requests at once that all take two seconds.
	slow := func() {
		hold.Store(true)
		var wg sync.WaitGroup
		for range 3 {
			wg.Go(func() { gatedPost(e) })
			<-entered
		}
		clock.Add(int64(2 * time.Second))
		close(release)
		wg.Wait()
		hold.Store(false)
		release = make(chan struct{})
	}
	slow()
	if got, want := a.Limit(), 90; got != want {
		t.Fatalf("limit after three slow requests at once = %d, want %d (one cut)", got, want)
	}
	slow()
	if got, want := a.Limit(), 81; got != want {
		t.Fatalf("limit after three more = %d, want %d", got, want)
	}
	slow()
	if got, want := a.Limit(), 80; got != want {
		t.Fatalf("limit after three more = %d, want the floor %d", got, want)
	}
	for range 5 {
		gatedPost(e)
	}
	if got, want := a.Limit(), 85; got != want {
		t.Fatalf("limit after 5 requests in time = %d, want %d", got, want)
	}
	for range 50 {
		gatedPost(e)
	}
	if got, want := a.Limit(), 100; got != want {
		t.Fatalf("limit after many requests in time = %d, want the maximum %d", got, want)
	}
}

// A grab answered unavailable past the door — it waited too long for its turn, under
// the Target — backs the limit off as a slow answer does: the instance is past what it
// can serve, and the door should refuse the excess at once rather than let it wait.
func TestAdmissionBacksOffOnUnavailable(t *testing.T) {
	var clock atomic.Int64 // ns; it never moves: every answer comes in time
	clock.Store(int64(time.Hour))
	a := httpapi.NewAdmission(httpapi.AdmissionOptions{
		MaxInflight: 100, MinInflight: 10, Target: time.Second,
		Now: func() time.Time { return time.Unix(0, clock.Load()) },
	})
	unavailable := true
	e := gated(a, func(c echo.Context) error {
		if unavailable {
			return fmt.Errorf("reserve stock: waited 800ms for redis: %w", domain.ErrUnavailable)
		}
		return c.NoContent(http.StatusNoContent)
	})
	gatedPost(e)
	if got, want := a.Limit(), 90; got != want {
		t.Fatalf("limit after a grab answered unavailable = %d, want %d (one cut)", got, want)
	}
	unavailable = false
	gatedPost(e)
	if got, want := a.Limit(), 91; got != want {
		t.Fatalf("limit after a grab answered in time = %d, want %d", got, want)
	}
}

// TestSlowBodyHoldsNoSlot: a client that trickles its body in holds no slot — another
// grab is admitted meanwhile — and the server's read deadline ends it with a 4xx.
func TestSlowBodyHoldsNoSlot(t *testing.T) {
	t.Parallel()
	e := echo.New()
	e.POST("/grab", func(c echo.Context) error {
		body, _ := io.ReadAll(c.Request().Body)
		return c.String(http.StatusOK, string(body))
	}, httpapi.NewAdmission(httpapi.AdmissionOptions{MaxInflight: 1}).Middleware())
	srv := httptest.NewUnstartedServer(e)
	srv.Config.ReadTimeout = time.Second
	srv.Start()
	t.Cleanup(srv.Close)

	slow, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Close()
	if _, err := io.WriteString(slow, "POST /grab HTTP/1.1\r\nHost: x\r\nContent-Length: 20\r\n\r\n{"); err != nil {
		t.Fatal(err)
	}
	// The slow request is inside the server, reading its body; the only slot is free.
	res, err := http.Post(srv.URL+"/grab", "application/json", strings.NewReader(`{"quantity":1}`))
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(res.Body)
	_ = res.Body.Close()
	if res.StatusCode != http.StatusOK || string(got) != `{"quantity":1}` {
		t.Fatalf("a grab beside a slow client: %d %q, want 200 and its body", res.StatusCode, got)
	}
	// The slow one is ended by the read deadline, with a client error or a closed
	// connection, never a 5xx.
	_ = slow.SetReadDeadline(time.Now().Add(30 * time.Second))
	line, _ := bufio.NewReader(slow).ReadString('\n')
	if strings.HasPrefix(line, "HTTP/1.1 5") {
		t.Fatalf("the slow client was answered %q", line)
	}
}
