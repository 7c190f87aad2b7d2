package httpapi_test

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/adapters/httpapi"
	"github.com/seckill/seckill/adapters/pgstore"
	"github.com/seckill/seckill/adapters/redisstore"
	"github.com/seckill/seckill/adapters/system"
	"github.com/seckill/seckill/adapters/testenv"
	"github.com/seckill/seckill/application"
	"github.com/seckill/seckill/domain"
)

// limitedAPI is the voucher part of the API on real Redis and PostgreSQL, with the
// limits of opts, served in-process so each request can come from an address of the
// test's choosing.
type limitedAPI struct {
	t      *testing.T
	e      *echo.Echo
	tokens *httpapi.Tokens
	admin  string
}

// newLimitedAPI wires the API; when opts.IPLimit is set without a limiter, it gets a
// redisstore.RateLimiter on the test server under a prefix of its own.
func newLimitedAPI(t *testing.T, opts httpapi.Options) *limitedAPI {
	t.Helper()
	ctx := context.Background()
	rdb := testenv.Redis(t)
	db, err := pgstore.Open(ctx, testenv.PostgresURL(t))
	if err != nil {
		t.Fatalf("open database: %v", err)
	}
	t.Cleanup(func() { _ = db.Close() })
	if _, err := pgstore.MigrateUp(ctx, db); err != nil {
		t.Fatalf("migrate: %v", err)
	}
	prefix := "t" + testenv.Unique()
	t.Cleanup(func() {
		deleteKeys(rdb, prefix)
		deleteKeys(rdb, "rate:"+prefix) // redis_rate's own prefix
	})
	if opts.IPLimit > 0 && opts.IPLimiter == nil {
		opts.IPLimiter = redisstore.NewRateLimiter(rdb, redisstore.Options{Prefix: prefix})
	}
	opts.BodyLimit, opts.RequestTimeout = "4K", 2*time.Second
	stock := redisstore.NewStock(rdb, redisstore.Options{Prefix: prefix})
	vouchers := pgstore.NewVouchers(db)
	tokens := httpapi.NewTokens([]byte(secret))
	e := httpapi.New(opts, httpapi.UseCases{
		CreateVoucher: application.NewCreateVoucher(vouchers, stock),
		GetVoucher:    application.NewGetVoucher(vouchers, stock),
		ListVouchers:  application.NewListVouchers(vouchers, stock),
		GrabVoucher:   application.NewGrabVoucher(stock, system.Clock{}, system.ULIDs{}, application.GrabOptions{}),
	}, tokens, nil, testLogger(t))
	a := &limitedAPI{t: t, e: e, tokens: tokens}
	a.admin = a.token(1, true)
	return a
}

func (a *limitedAPI) token(user domain.UserID, admin bool) string {
	a.t.Helper()
	tok, err := a.tokens.Mint(user, admin, time.Hour)
	if err != nil {
		a.t.Fatal(err)
	}
	return tok
}

// serve sends one request from addr (host:port) and decodes the answer.
func (a *limitedAPI) serve(method, path, token, body, addr string, header ...string) response {
	a.t.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	req.RemoteAddr = addr
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	rec := httptest.NewRecorder()
	a.e.ServeHTTP(rec, req)
	out := response{Status: rec.Code, Header: rec.Header(), Raw: rec.Body.String()}
	if rec.Body.Len() > 0 {
		if err := json.Unmarshal(rec.Body.Bytes(), &out.Body); err != nil {
			a.t.Fatalf("%s %s: body is not a JSON object: %q", method, path, rec.Body)
		}
	}
	return out
}

// createVoucher makes a voucher on sale now, from addr, and returns its id.
func (a *limitedAPI) createVoucher(addr string) string {
	a.t.Helper()
	now := time.Now().UTC()
	body, _ := json.Marshal(map[string]any{
		"title": "Coffee", "stock": 10, "per_user_limit": 1,
		"begins_at": now.Add(-time.Minute), "ends_at": now.Add(time.Hour),
	})
	r := a.serve(http.MethodPost, "/api/v1/vouchers", a.admin, string(body), addr)
	if r.Status != http.StatusCreated {
		a.t.Fatalf("create voucher: %d %s", r.Status, r.Raw)
	}
	return r.Body["id"].(string)
}

// TestIPLimitOnPublicReads: past its allowance a client address gets 429 with
// Retry-After on the voucher reads, whatever X-Forwarded-For says; other addresses,
// health checks and authenticated calls are not affected.
func TestIPLimitOnPublicReads(t *testing.T) {
	a := newLimitedAPI(t, httpapi.Options{IPLimit: 1, IPBurst: 2})
	const hammer, other, other6 = "192.0.2.1:5000", "192.0.2.2:5000", "[2001:db8::1]:5000"
	id := a.createVoucher(hammer)

	for i := range 2 {
		if r := a.serve(http.MethodGet, "/api/v1/vouchers", "", "", hammer); r.Status != http.StatusOK {
			t.Fatalf("read %d within the burst: %d %s", i+1, r.Status, r.Raw)
		}
	}
	// One request a second refills the allowance: within a few more, one is refused.
	var limited response
	for i := 0; i < 10 && limited.Status != http.StatusTooManyRequests; i++ {
		limited = a.serve(http.MethodGet, "/api/v1/vouchers/"+id, "", "", hammer)
	}
	if limited.Status != http.StatusTooManyRequests || limited.code() != "rate_limited" {
		t.Fatalf("read over the limit: %d %s", limited.Status, limited.Raw)
	}
	if secs, err := strconv.Atoi(limited.Header.Get("Retry-After")); err != nil || secs < 1 {
		t.Fatalf("Retry-After = %q, want whole seconds, at least 1", limited.Header.Get("Retry-After"))
	}
	// A forged header does not make the client someone else.
	if r := a.serve(http.MethodGet, "/api/v1/vouchers", "", "", hammer, "X-Forwarded-For", "198.51.100.7", "X-Real-Ip", "198.51.100.8"); r.Status != http.StatusTooManyRequests {
		t.Fatalf("read with a forged X-Forwarded-For: %d %s", r.Status, r.Raw)
	}
	for _, addr := range []string{other, other6} {
		if r := a.serve(http.MethodGet, "/api/v1/vouchers/"+id, "", "", addr); r.Status != http.StatusOK {
			t.Fatalf("read from %s: %d %s", addr, r.Status, r.Raw)
		}
	}
	for range 5 {
		if r := a.serve(http.MethodGet, "/healthz", "", "", hammer); r.Status != http.StatusOK {
			t.Fatalf("healthz from a limited client: %d %s", r.Status, r.Raw)
		}
	}
	if r := a.serve(http.MethodPost, "/api/v1/vouchers/"+id+"/grab", a.token(7, false), "", hammer); r.Status != http.StatusAccepted {
		t.Fatalf("grab from a limited client: %d %s", r.Status, r.Raw)
	}
}

// TestIPLimitTrustsAConfiguredExtractor: behind a proxy, the wiring sets an
// IPExtractor and the client is whom the proxy names.
func TestIPLimitTrustsAConfiguredExtractor(t *testing.T) {
	a := newLimitedAPI(t, httpapi.Options{IPLimit: 1, IPBurst: 1})
	a.e.IPExtractor = echo.ExtractIPFromXFFHeader(echo.TrustIPRange(mustCIDR(t, "192.0.2.0/24")))
	const proxy = "192.0.2.10:443"
	xff := func(client string) []string { return []string{"X-Forwarded-For", client} }
	if r := a.serve(http.MethodGet, "/api/v1/vouchers", "", "", proxy, xff("198.51.100.1")...); r.Status != http.StatusOK {
		t.Fatalf("first read: %d %s", r.Status, r.Raw)
	}
	var limited response
	for i := 0; i < 10 && limited.Status != http.StatusTooManyRequests; i++ {
		limited = a.serve(http.MethodGet, "/api/v1/vouchers", "", "", proxy, xff("198.51.100.1")...)
	}
	if limited.Status != http.StatusTooManyRequests {
		t.Fatalf("client behind the proxy over its limit: %d %s", limited.Status, limited.Raw)
	}
	if r := a.serve(http.MethodGet, "/api/v1/vouchers", "", "", proxy, xff("198.51.100.2")...); r.Status != http.StatusOK {
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
	a := newLimitedAPI(t, httpapi.Options{IPLimit: 1, IPBurst: 1,
		IPLimiter: redisstore.NewRateLimiter(client, redisstore.Options{})})
	for i := range 5 {
		if r := a.serve(http.MethodGet, "/api/v1/vouchers", "", "", "192.0.2.1:5000"); r.Status != http.StatusOK {
			t.Fatalf("read %d with the limiter down: %d %s", i+1, r.Status, r.Raw)
		}
	}
}

// TestGrabAdmission: New puts the instance's gate on the grab route after
// authentication, so an anonymous request spends nothing, and beyond it a grab gets
// 503 with Retry-After while the reads are not affected.
func TestGrabAdmission(t *testing.T) {
	// One token every 1000 s: nothing refills while the test runs.
	a := newLimitedAPI(t, httpapi.Options{MaxInflight: 100, GrabRate: 0.001, GrabBurst: 1})
	const addr = "192.0.2.1:5000"
	id := a.createVoucher(addr)
	grab := "/api/v1/vouchers/" + id + "/grab"
	if r := a.serve(http.MethodPost, grab, "", "", addr); r.Status != http.StatusUnauthorized {
		t.Fatalf("anonymous grab: %d %s", r.Status, r.Raw)
	}
	if r := a.serve(http.MethodPost, grab, a.token(10, false), "", addr); r.Status != http.StatusAccepted {
		t.Fatalf("grab within the instance's rate: %d %s", r.Status, r.Raw)
	}
	r := a.serve(http.MethodPost, grab, a.token(11, false), "", addr)
	if r.Status != http.StatusServiceUnavailable || r.code() != "unavailable" || r.Header.Get("Retry-After") != "1" {
		t.Fatalf("grab beyond the instance's rate: %d %s (Retry-After %q)", r.Status, r.Raw, r.Header.Get("Retry-After"))
	}
	if r := a.serve(http.MethodGet, "/api/v1/vouchers/"+id, "", "", addr); r.Status != http.StatusOK {
		t.Fatalf("read while grabs are refused: %d %s", r.Status, r.Raw)
	}
}
