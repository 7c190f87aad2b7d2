package httpapi_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/redis/go-redis/v9"
	"github.com/uptrace/bun"

	"github.com/seckill/seckill/adapters/breaker"
	"github.com/seckill/seckill/adapters/httpapi"
	"github.com/seckill/seckill/adapters/redisstore"
	"github.com/seckill/seckill/domain"
)

// benchParallelism is how many requests each benchmark keeps in flight per CPU: a
// service under a flood has many, and with only one per CPU the grab, which waits on
// Redis, would measure latency instead of throughput. The baseline uses the same.
const benchParallelism = 32

// benchClient keeps enough idle connections for every parallel benchmark goroutine.
func benchClient() *http.Client {
	return &http.Client{Transport: &http.Transport{MaxIdleConns: 512, MaxIdleConnsPerHost: 512}}
}

// post sends a POST with token and header's name, value pairs, and checks the status.
func post(b *testing.B, c *http.Client, url, token string, want int, header ...string) {
	req, _ := http.NewRequest(http.MethodPost, url, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	res, err := c.Do(req)
	if err != nil {
		b.Error(err)
		return
	}
	_, _ = io.Copy(io.Discard, res.Body)
	_ = res.Body.Close()
	if res.StatusCode != want {
		b.Errorf("status %d, want %d", res.StatusCode, want)
	}
}

// BenchmarkHelloWorld is the baseline: a bare Echo handler on the same client and
// loopback, answering a small JSON body.
func BenchmarkHelloWorld(b *testing.B) {
	e := echo.New()
	e.POST("/hello", func(c echo.Context) error {
		return c.JSON(http.StatusOK, map[string]string{"hello": "world"})
	})
	srv := httptest.NewServer(e)
	defer srv.Close()
	c := benchClient()
	b.SetParallelism(benchParallelism)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			post(b, c, srv.URL+"/hello", "", http.StatusOK)
		}
	})
}

// BenchmarkGrab measures the whole grab endpoint on real Redis: token check, request
// id, log line, validation and the reservation script. Every operation is a fresh
// user's successful reservation.
func BenchmarkGrab(b *testing.B) {
	benchGrab(b, http.StatusAccepted, 10_000_000)
}

// BenchmarkGrabLimited is BenchmarkGrab with every limit on, as serve's defaults set
// them: the in-flight bound, the per-user rate and the backlog bound (both checked in
// the reserve script), and the circuit breaker on every Redis call. Each operation is
// still a fresh user's successful reservation, so the limits cost but never refuse.
func BenchmarkGrabLimited(b *testing.B) {
	benchGrab(b, http.StatusAccepted, 10_000_000, func(s *setup) {
		s.http.MaxInflight = 10_000
		s.stock.UserRate, s.stock.UserBurst, s.stock.MaxBacklog = 5, 5, 100_000_000
	})
}

// BenchmarkGrabSoldOut measures the flood after a sell-out: 1,000 users pressing grab
// again and again, answered from the instance's sold-out flag.
func BenchmarkGrabSoldOut(b *testing.B) {
	benchGrab(b, http.StatusConflict, 1)
}

func benchGrab(b *testing.B, want, stock int, opts ...func(*setup)) {
	a := newAPI(b, opts...)
	if len(opts) > 0 {
		a.redis.AddHook(redisstore.NewBreakerHook("redis", breaker.Settings{}))
	}
	id := a.createVoucher(stock, 1)
	users := b.N
	if stock == 1 {
		post(b, benchClient(), a.url+"/api/v1/vouchers/"+id+"/grab", a.token(2, false), http.StatusAccepted)
		users = 1000
	}
	// Minting is the client's work, not the server's: do it before the clock starts.
	tokens := make([]string, users)
	for i := range tokens {
		tokens[i] = a.token(domain.UserID(1000+i), false)
	}
	url := a.url + "/api/v1/vouchers/" + id + "/grab"
	c := benchClient()
	var next atomic.Int64
	b.SetParallelism(benchParallelism)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			post(b, c, url, tokens[int(next.Add(1)-1)%len(tokens)], want)
		}
	})
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "grabs/s")
}

// BenchmarkGrabWithPass measures, in one run, BenchmarkGrab's plain grab ("plain": a
// first-come voucher) against a waiting room's grab that carries its pass ("pass"):
// the pass's signature checked on the instance, and in the reserve script its member
// of the passes set read and, with the reservation, removed. Every operation is a
// fresh user's successful reservation; the passes are issued before the clock starts,
// as the waiting room issues them ahead of the grabs.
func BenchmarkGrabWithPass(b *testing.B) {
	for _, bc := range []struct {
		name      string
		admission domain.Admission
	}{{"plain", domain.AdmissionFirstCome}, {"pass", domain.AdmissionWaitingRoom}} {
		b.Run(bc.name, func(b *testing.B) {
			a := newAPI(b)
			id := a.createGated(b.N, bc.admission, domain.ChallengeNone)
			tokens, passes := make([]string, b.N), make([]string, b.N)
			expires := time.Now().Add(time.Hour)
			pipe := a.redis.Pipeline()
			for i := range tokens {
				user := domain.UserID(1000 + i)
				tokens[i] = a.token(user, false)
				if bc.admission == domain.AdmissionWaitingRoom {
					passes[i] = domain.SignPass(a.passKey, domain.Pass{Voucher: id, User: user, Expires: expires})
					pipe.ZAdd(context.Background(), a.stock.Keys().Passes(id), redis.Z{Score: float64(expires.UnixMilli()), Member: user.String()})
				}
			}
			if _, err := pipe.Exec(context.Background()); err != nil {
				b.Fatal(err)
			}
			url := a.url + "/api/v1/vouchers/" + id.String() + "/grab"
			c := benchClient()
			var next atomic.Int64
			b.SetParallelism(benchParallelism)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					i := int(next.Add(1) - 1)
					if passes[i] == "" {
						post(b, c, url, tokens[i], http.StatusAccepted)
					} else {
						post(b, c, url, tokens[i], http.StatusAccepted, httpapi.PassHeader, passes[i])
					}
				}
			})
			b.StopTimer()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "grabs/s")
		})
	}
}

// handlerTokens is the fewest tokens the in-process grab benchmarks mint, whatever
// b.N, so that runs of different lengths do the same set-up work: the difference of
// two runs' instruction counts (valgrind --tool=callgrind) is then the requests' own.
const handlerTokens = 10_000

// BenchmarkGrabHandler drives the whole Echo stack of the grab route in-process — the
// middleware chain, the token check, the use case and the reservation on real Redis —
// with no network and no HTTP client, one request at a time, so that its allocations
// and instruction counts per request are the service's own. Every request is a fresh
// user's successful reservation.
func BenchmarkGrabHandler(b *testing.B) {
	benchGrabHandler(b, http.StatusAccepted, 10_000_000, max(b.N, handlerTokens))
}

// BenchmarkGrabHandlerSoldOut is BenchmarkGrabHandler for the flood after a sell-out:
// 1,000 users pressing grab again and again, answered from the sold-out flag; each
// has pressed once before the clock starts.
func BenchmarkGrabHandlerSoldOut(b *testing.B) {
	benchGrabHandler(b, http.StatusConflict, 1, 1000)
}

// BenchmarkGrabHandlerDenyCheck is BenchmarkGrabHandlerSoldOut (the cheapest grab:
// no Redis call) without a deny list and with one of 10,000 users the grabbing users
// are not on, in one run: what the check costs an unlisted user's grab.
func BenchmarkGrabHandlerDenyCheck(b *testing.B) {
	for _, bc := range []struct {
		name   string
		listed int
	}{{"without", 0}, {"with10000", 10_000}} {
		b.Run(bc.name, func(b *testing.B) {
			a := newAPI(b, func(s *setup) { s.noDenyList = bc.listed == 0 })
			if bc.listed > 0 {
				a.denyMany(bc.listed)
			}
			id := a.createVoucher(1, 1)
			post(b, benchClient(), a.url+"/api/v1/vouchers/"+id+"/grab", a.token(50_000, false), http.StatusAccepted)
			auth := make([]string, 1000)
			for i := range auth {
				auth[i] = "Bearer " + a.token(domain.UserID(100_000+i), false)
			}
			serveInProcess(b, a.e, "/api/v1/vouchers/"+id+"/grab", auth, http.StatusConflict, true)
		})
	}
}

// denyMany lists users 1 to n in one statement and reloads the grab path's copy.
func (a *api) denyMany(n int) {
	a.t.Helper()
	type row struct {
		bun.BaseModel `bun:"table:denylist"`
		UserID        int64     `bun:"user_id"`
		Reason        string    `bun:"reason"`
		At            time.Time `bun:"at"`
	}
	rows := make([]row, n)
	for i := range rows {
		rows[i] = row{UserID: int64(i + 1), At: time.Now().UTC()}
	}
	ctx := context.Background()
	if _, err := a.db.NewInsert().Model(&rows).Exec(ctx); err != nil {
		a.t.Fatalf("deny %d users: %v", n, err)
	}
	if err := a.denied.Reload(ctx); err != nil || a.denied.Len() != n {
		a.t.Fatalf("reload: %v, %d listed, want %d", err, a.denied.Len(), n)
	}
}

// BenchmarkHelloWorldHandler is the in-process baseline of the two above: a bare Echo
// handler answering a small JSON body, on the same request and response writer.
func BenchmarkHelloWorldHandler(b *testing.B) {
	e := echo.New()
	e.POST("/hello", func(c echo.Context) error {
		return c.JSON(http.StatusOK, map[string]string{"hello": "world"})
	})
	serveInProcess(b, e, "/hello", []string{""}, http.StatusOK, false)
}

func benchGrabHandler(b *testing.B, want, stock, users int) {
	a := newAPI(b)
	id := a.createVoucher(stock, 1)
	if stock == 1 {
		post(b, benchClient(), a.url+"/api/v1/vouchers/"+id+"/grab", a.token(2, false), http.StatusAccepted)
	}
	auth := make([]string, users)
	for i := range auth {
		auth[i] = "Bearer " + a.token(domain.UserID(1000+i), false)
	}
	serveInProcess(b, a.e, "/api/v1/vouchers/"+id+"/grab", auth, want, stock == 1)
}

// serveInProcess sends b.N POST requests to path straight into h, the i-th with the
// Authorization header auth[i % len(auth)] (none when empty), and checks each status;
// with warm, one request with each header goes first, before the clock starts. The
// request and the response writer are reused, so that the allocations counted are the
// handler's.
func serveInProcess(b *testing.B, h http.Handler, path string, auth []string, want int, warm bool) {
	tmpl := httptest.NewRequest(http.MethodPost, path, nil)
	tmpl.Body = http.NoBody
	w := &discardWriter{header: make(http.Header)}
	header := make(http.Header)
	serve := func(i int) {
		req := *tmpl
		clear(header)
		if v := auth[i%len(auth)]; v != "" {
			header["Authorization"] = []string{v}
		}
		req.Header = header
		clear(w.header)
		w.status = 0
		h.ServeHTTP(w, &req)
		if w.status != want {
			b.Fatalf("request %d: status %d, want %d", i, w.status, want)
		}
	}
	if warm {
		for i := range auth {
			serve(i)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		serve(i)
	}
}

// discardWriter is a reusable http.ResponseWriter that keeps the status and drops the body.
type discardWriter struct {
	header http.Header
	status int
}

func (w *discardWriter) Header() http.Header { return w.header }

func (w *discardWriter) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
	}
}

func (w *discardWriter) Write(p []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	return len(p), nil
}
