package httpapi_test

import (
	"net"
	"net/http"
	"strconv"
	"testing"

	"github.com/labstack/echo/v4"
	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/adapters/httpapi"
	"github.com/seckill/seckill/adapters/redisstore"
)

// limits sets the admission and rate-limit options of the API newAPI wires; an
// IPLimit without a limiter gets a redisstore.RateLimiter on the test server.
func limits(o httpapi.Options) func(*setup) {
	return func(s *setup) {
		s.http.MaxInflight, s.http.GrabRate, s.http.GrabBurst = o.MaxInflight, o.GrabRate, o.GrabBurst
		s.http.IPLimit, s.http.IPBurst, s.http.IPLimiter = o.IPLimit, o.IPBurst, o.IPLimiter
	}
}

// TestIPLimitOnPublicReads: past its allowance a client address gets 429 with
// Retry-After on the voucher reads, whatever X-Forwarded-For says; other addresses,
// health checks and authenticated calls are not affected.
func TestIPLimitOnPublicReads(t *testing.T) {
	a := newAPI(t, limits(httpapi.Options{IPLimit: 1, IPBurst: 2}))
	const hammer, other, other6 = "192.0.2.1:5000", "192.0.2.2:5000", "[2001:db8::1]:5000"
	id := a.createVoucher(10, 1)

	for i := range 2 {
		if r := a.serveFrom(http.MethodGet, "/api/v1/vouchers", "", "", hammer); r.Status != http.StatusOK {
			t.Fatalf("read %d within the burst: %d %s", i+1, r.Status, r.Raw)
		}
	}
	// One request a second refills the allowance: within a few more, one is refused.
	var limited response
	for i := 0; i < 10 && limited.Status != http.StatusTooManyRequests; i++ {
		limited = a.serveFrom(http.MethodGet, "/api/v1/vouchers/"+id, "", "", hammer)
	}
	if limited.Status != http.StatusTooManyRequests || limited.code() != "rate_limited" {
		t.Fatalf("read over the limit: %d %s", limited.Status, limited.Raw)
	}
	if secs, err := strconv.Atoi(limited.Header.Get("Retry-After")); err != nil || secs < 1 {
		t.Fatalf("Retry-After = %q, want whole seconds, at least 1", limited.Header.Get("Retry-After"))
	}
	// A forged header does not make the client someone else.
	if r := a.serveFrom(http.MethodGet, "/api/v1/vouchers", "", "", hammer, "X-Forwarded-For", "198.51.100.7", "X-Real-Ip", "198.51.100.8"); r.Status != http.StatusTooManyRequests {
		t.Fatalf("read with a forged X-Forwarded-For: %d %s", r.Status, r.Raw)
	}
	for _, addr := range []string{other, other6} {
		if r := a.serveFrom(http.MethodGet, "/api/v1/vouchers/"+id, "", "", addr); r.Status != http.StatusOK {
			t.Fatalf("read from %s: %d %s", addr, r.Status, r.Raw)
		}
	}
	for range 5 {
		if r := a.serveFrom(http.MethodGet, "/healthz", "", "", hammer); r.Status != http.StatusOK {
			t.Fatalf("healthz from a limited client: %d %s", r.Status, r.Raw)
		}
	}
	if r := a.serveFrom(http.MethodPost, "/api/v1/vouchers/"+id+"/grab", a.token(7, false), "", hammer); r.Status != http.StatusAccepted {
		t.Fatalf("grab from a limited client: %d %s", r.Status, r.Raw)
	}
}

// TestIPLimitTrustsAConfiguredExtractor: behind a proxy, the wiring sets an
// IPExtractor and the client is whom the proxy names.
func TestIPLimitTrustsAConfiguredExtractor(t *testing.T) {
	a := newAPI(t, limits(httpapi.Options{IPLimit: 1, IPBurst: 1}))
	a.e.IPExtractor = echo.ExtractIPFromXFFHeader(echo.TrustIPRange(mustCIDR(t, "192.0.2.0/24")))
	const proxy = "192.0.2.10:443"
	xff := func(client string) []string { return []string{"X-Forwarded-For", client} }
	if r := a.serveFrom(http.MethodGet, "/api/v1/vouchers", "", "", proxy, xff("198.51.100.1")...); r.Status != http.StatusOK {
		t.Fatalf("first read: %d %s", r.Status, r.Raw)
	}
	var limited response
	for i := 0; i < 10 && limited.Status != http.StatusTooManyRequests; i++ {
		limited = a.serveFrom(http.MethodGet, "/api/v1/vouchers", "", "", proxy, xff("198.51.100.1")...)
	}
	if limited.Status != http.StatusTooManyRequests {
		t.Fatalf("client behind the proxy over its limit: %d %s", limited.Status, limited.Raw)
	}
	if r := a.serveFrom(http.MethodGet, "/api/v1/vouchers", "", "", proxy, xff("198.51.100.2")...); r.Status != http.StatusOK {
		t.Fatalf("another client behind the same proxy: %d %s", r.Status, r.Raw)
	}
}

func mustCIDR(t *testing.T, s string) *net.IPNet {
	t.Helper()
	_, n, err := net.ParseCIDR(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestIPLimitFailsOpen: with the limiter's Redis unreachable, reads still answer.
func TestIPLimitFailsOpen(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := l.Addr().String()
	_ = l.Close() // nothing listens there now: every call is refused
	opts := &redis.Options{Addr: dead}
	redisstore.TuneClientOptions(opts)
	client := redis.NewClient(opts)
	t.Cleanup(func() { _ = client.Close() })
	a := newAPI(t, limits(httpapi.Options{IPLimit: 1, IPBurst: 1,
		IPLimiter: redisstore.NewRateLimiter(client, redisstore.Options{})}))
	for i := range 5 {
		if r := a.serveFrom(http.MethodGet, "/api/v1/vouchers", "", "", "192.0.2.1:5000"); r.Status != http.StatusOK {
			t.Fatalf("read %d with the limiter down: %d %s", i+1, r.Status, r.Raw)
		}
	}
}

// TestGrabAdmission: New puts the instance's gate on the grab route after
// authentication, so an anonymous request spends nothing, and beyond it a grab gets
// 503 with Retry-After while the reads are not affected.
func TestGrabAdmission(t *testing.T) {
	// One token every 1000 s: nothing refills while the test runs.
	a := newAPI(t, limits(httpapi.Options{MaxInflight: 100, GrabRate: 0.001, GrabBurst: 1}))
	const addr = "192.0.2.1:5000"
	id := a.createVoucher(10, 1)
	grab := "/api/v1/vouchers/" + id + "/grab"
	if r := a.serveFrom(http.MethodPost, grab, "", "", addr); r.Status != http.StatusUnauthorized {
		t.Fatalf("anonymous grab: %d %s", r.Status, r.Raw)
	}
	if r := a.serveFrom(http.MethodPost, grab, a.token(10, false), "", addr); r.Status != http.StatusAccepted {
		t.Fatalf("grab within the instance's rate: %d %s", r.Status, r.Raw)
	}
	r := a.serveFrom(http.MethodPost, grab, a.token(11, false), "", addr)
	if r.Status != http.StatusServiceUnavailable || r.code() != "unavailable" || r.Header.Get("Retry-After") != "1" {
		t.Fatalf("grab beyond the instance's rate: %d %s (Retry-After %q)", r.Status, r.Raw, r.Header.Get("Retry-After"))
	}
	if r := a.serveFrom(http.MethodGet, "/api/v1/vouchers/"+id, "", "", addr); r.Status != http.StatusOK {
		t.Fatalf("read while grabs are refused: %d %s", r.Status, r.Raw)
	}
}
