package httpapi_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

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
		s.http.TrustedProxies = o.TrustedProxies
	}
}

// TestIPLimitOnPublicReads: past its allowance a client address gets 429 with
// Retry-After on the voucher reads, whatever X-Forwarded-For says; other addresses,
// health checks and authenticated calls are not affected.
func TestIPLimitOnPublicReads(t *testing.T) {
	t.Parallel()
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

// TestIPLimitBehindTrustedProxies: a request from a trusted proxy is counted against
// the client X-Forwarded-For names (the right-most untrusted hop); the same header
// from any other address — a private one included — is ignored.
func TestIPLimitBehindTrustedProxies(t *testing.T) {
	t.Parallel()
	a := newAPI(t, limits(httpapi.Options{IPLimit: 1, IPBurst: 1,
		TrustedProxies: []*net.IPNet{mustCIDR(t, "192.0.2.0/24"), mustCIDR(t, "2001:db8::/32")}}))
	const proxy, proxy6, untrusted, private = "192.0.2.10:443", "[2001:db8::10]:443", "203.0.113.9:5000", "10.0.0.1:5000"
	xff := func(hops string) []string { return []string{"X-Forwarded-For", hops} }
	// exhaust spends addr's allowance (one a second, one at once) as hops, and checks
	// the limit was reached.
	exhaust := func(addr string, hops ...string) {
		t.Helper()
		var limited response
		for i := 0; i < 10 && limited.Status != http.StatusTooManyRequests; i++ {
			limited = a.serveFrom(http.MethodGet, "/api/v1/vouchers", "", "", addr, hops...)
		}
		if limited.Status != http.StatusTooManyRequests {
			t.Fatalf("from %s %v: never limited: %d %s", addr, hops, limited.Status, limited.Raw)
		}
	}
	ok := func(addr string, hops ...string) {
		t.Helper()
		if r := a.serveFrom(http.MethodGet, "/api/v1/vouchers", "", "", addr, hops...); r.Status != http.StatusOK {
			t.Fatalf("from %s %v: %d %s, want 200", addr, hops, r.Status, r.Raw)
		}
	}

	// Through the proxy, the client is the one it names: one client over its limit
	// leaves the others, and the proxy's own address, alone.
	exhaust(proxy, xff("198.51.100.1")...)
	ok(proxy, xff("198.51.100.2")...)
	ok(proxy6, xff("198.51.100.3")...)
	// The right-most untrusted hop counts, not what the client put in front of it.
	exhaust(proxy, xff("6.6.6.6, 198.51.100.4")...)
	if r := a.serveFrom(http.MethodGet, "/api/v1/vouchers", "", "", proxy, xff("7.7.7.7, 198.51.100.4")...); r.Status != http.StatusTooManyRequests {
		t.Fatalf("a limited client naming another first hop: %d %s, want 429", r.Status, r.Raw)
	}
	// Hops that are proxies themselves are skipped.
	ok(proxy, xff("198.51.100.6, 192.0.2.11")...)

	// From an untrusted address a forged header changes nothing: the connection is
	// the client, whatever it claims, and once limited it stays limited.
	exhaust(untrusted, xff("198.51.100.7")...)
	if r := a.serveFrom(http.MethodGet, "/api/v1/vouchers", "", "", untrusted, xff("198.51.100.8")...); r.Status != http.StatusTooManyRequests {
		t.Fatalf("untrusted client with a new forged X-Forwarded-For: %d %s, want 429", r.Status, r.Raw)
	}
	// Echo would trust private ranges by default; only the configured ones are.
	exhaust(private, xff("198.51.100.9")...)
	if r := a.serveFrom(http.MethodGet, "/api/v1/vouchers", "", "", private, xff("198.51.100.10")...); r.Status != http.StatusTooManyRequests {
		t.Fatalf("private, unconfigured proxy with a new X-Forwarded-For: %d %s, want 429", r.Status, r.Raw)
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
	t.Parallel()
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

// TestIPLimitDoesNotWaitOutRedis: the limit's decision is bounded well within one
// Redis timeout: a limiter that does not answer is given up on (its context has a
// deadline under redisstore.TunedTimeout/2) and the read goes through, so a read that
// needs a Redis that does not answer waits out one timeout, not the limiter's first.
func TestIPLimitDoesNotWaitOutRedis(t *testing.T) {
	t.Parallel()
	hung := &hungLimiter{}
	a := newAPI(t, limits(httpapi.Options{IPLimit: 1, IPBurst: 1, IPLimiter: hung}))
	began := time.Now()
	if r := a.serveFrom(http.MethodGet, "/api/v1/vouchers", "", "", "192.0.2.1:5000"); r.Status != http.StatusOK {
		t.Fatalf("read with the limiter hung: %d %s", r.Status, r.Raw)
	}
	deadline, ok := hung.deadline.Load().(time.Time)
	if !ok {
		t.Fatal("the limiter was asked without a deadline: it would wait out Redis's own timeout")
	}
	if left := deadline.Sub(began); left > redisstore.TunedTimeout/2 {
		t.Fatalf("the limiter was given %v to decide, over half the %v Redis timeout", left, redisstore.TunedTimeout)
	}
}

// hungLimiter is a limiter whose Redis does not answer: it waits for its caller to
// give up, remembering the deadline it was given.
type hungLimiter struct{ deadline atomic.Value }

func (h *hungLimiter) Allow(ctx context.Context, _ string, _, _ int) (bool, time.Duration, error) {
	d, ok := ctx.Deadline()
	if !ok {
		return false, 0, errors.New("no deadline: a real client would wait out its own timeout")
	}
	h.deadline.Store(d)
	<-ctx.Done()
	return false, 0, ctx.Err()
}

// TestGrabAdmission: New puts the instance's gate on the grab route after
// authentication, so an anonymous request spends nothing, and beyond it a grab gets
// 503 with Retry-After while the reads are not affected.
func TestGrabAdmission(t *testing.T) {
	t.Parallel()
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
