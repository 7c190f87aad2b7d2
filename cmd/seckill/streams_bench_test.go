package main

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/seckill/seckill/adapters/httpapi"
	"github.com/seckill/seckill/adapters/testenv"
	"github.com/seckill/seckill/domain"
)

// benchServe is a `seckill serve` process for the stream benchmarks: a process of its
// own, so its memory is its own and each side of 10,000 connections has its own file
// descriptors. It is driven as the end-to-end tests drive theirs (instance).
type benchServe struct {
	*instance
	b *testing.B
}

// startBenchServes starts n `serve` processes on one Redis (and key prefix) and one
// PostgreSQL, stopped when the benchmark ends.
func startBenchServes(b *testing.B, n int, extraEnv ...string) []*benchServe {
	b.Helper()
	bin := seckillBinary(b)
	rdb := testenv.Redis(b)
	prefix := "b" + testenv.Unique()
	b.Cleanup(func() { _ = testenv.DeleteKeys(context.Background(), rdb, prefix+":*") })
	env := append(os.Environ(),
		"SECKILL_REDIS_URL="+testenv.RedisURL(b), "SECKILL_DATABASE_URL="+testenv.PostgresURL(b),
		"SECKILL_JWT_SECRET="+e2eSecret, "SECKILL_KEY_PREFIX="+prefix, "SECKILL_LOG_LEVEL=warn",
		"SECKILL_IP_RATE=0", "SECKILL_USER_RATE=0")
	env = append(env, extraEnv...)
	if out, err := runCmd(bin, env, "migrate", "up"); err != nil {
		b.Fatalf("migrate up: %v\n%s", err, out)
	}
	out := make([]*benchServe, n)
	for i := range out {
		addr := freeAddr(b)
		in := &instance{t: b, base: "http://" + addr, env: append(slices.Clone(env), "SECKILL_HTTP_ADDR="+addr),
			logs: &syncBuffer{}, tokens: httpapi.NewTokens([]byte(e2eSecret))}
		in.start()
		b.Cleanup(in.stop)
		out[i] = &benchServe{instance: in, b: b}
	}
	return out
}

func (s *benchServe) grab(voucher string, user domain.UserID) string {
	status, body := s.call(http.MethodPost, "/api/v1/vouchers/"+voucher+"/grab", s.token(user, false), nil)
	if status != http.StatusAccepted {
		s.b.Fatalf("grab: %d %v", status, body)
	}
	return body["order_id"].(string)
}

// openRaw opens an event stream on a bare connection and reads until its first
// event has arrived; the connection then idles, holding nothing in this process but
// itself.
func (s *benchServe) openRaw(path, token string) (net.Conn, *bufio.Reader) {
	conn, err := net.Dial("tcp", strings.TrimPrefix(s.base, "http://"))
	if err != nil {
		s.b.Fatal(err)
	}
	fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: bench\r\nAuthorization: Bearer %s\r\n\r\n", path, token)
	_ = conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	defer func() { _ = conn.SetReadDeadline(time.Time{}) }()
	r := bufio.NewReaderSize(conn, 1024)
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			s.b.Fatalf("GET %s: %v", path, err)
		}
		if strings.HasPrefix(line, "HTTP/1.1 ") && !strings.HasPrefix(line, "HTTP/1.1 200") {
			s.b.Fatalf("GET %s: %s", path, line)
		}
		if strings.HasPrefix(line, "data: ") {
			return conn, r
		}
	}
}

// memory is what the server process holds: its resident set (from /proc) and what its
// Go runtime says (from /metrics).
type memory struct {
	rss, heap, stack, goroutines float64
}

func (s *benchServe) memory() memory {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", s.cmd.Process.Pid))
	if err != nil {
		s.b.Fatal(err)
	}
	var m memory
	for line := range strings.Lines(string(raw)) {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, _ := strconv.ParseFloat(f[1], 64)
			m.rss = kb * 1024
		}
	}
	got := scrapeBench(s.b, s.base+"/metrics")
	m.heap, m.stack, m.goroutines = got["go_memstats_heap_inuse_bytes"], got["go_memstats_stack_inuse_bytes"], got["go_goroutines"]
	return m
}

// scrapeBench reads the unlabelled series of a Prometheus text page.
func scrapeBench(b *testing.B, url string) map[string]float64 {
	res, err := http.Get(url)
	if err != nil {
		b.Fatal(err)
	}
	defer res.Body.Close()
	out := map[string]float64{}
	sc := bufio.NewScanner(res.Body)
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) == 2 && !strings.HasPrefix(f[0], "#") {
			out[f[0]], _ = strconv.ParseFloat(f[1], 64)
		}
	}
	return out
}

// BenchmarkIdleStreams opens 10,000 event streams on one `seckill serve` (real Redis
// and PostgreSQL, in a process of its own) and reports what each costs the server:
// resident memory, Go heap and goroutine stacks, and goroutines, each the growth
// from before the streams opened to after, divided by their number. "order" streams
// all follow one order awaiting payment (each is a stream of its own: its goroutine,
// buffers and timers); "voucher" streams follow one voucher. Run it with
// -benchtime=1x: one measurement is one set of streams.
func BenchmarkIdleStreams(b *testing.B) {
	const streams = 10_000
	for _, kind := range []string{"order", "voucher"} {
		b.Run(kind, func(b *testing.B) {
			s := startBenchServes(b, 1, "SECKILL_MAX_STREAMS="+strconv.Itoa(streams+1))[0]
			voucher := s.createVoucher(10, 1)
			user := s.token(10, false)
			path := "/api/v1/vouchers/" + voucher + "/events"
			if kind == "order" {
				path = "/api/v1/orders/" + s.grab(voucher, 10) + "/events"
			}
			for range b.N {
				conns := make([]net.Conn, 0, streams)
				// One stream first, so the voucher's subscription is not counted.
				first, _ := s.openRaw(path, user)
				time.Sleep(time.Second) // let the start-up's garbage be collected
				before := s.memory()
				b.ResetTimer()
				for range streams {
					c, _ := s.openRaw(path, user)
					conns = append(conns, c)
				}
				b.StopTimer()
				time.Sleep(2 * time.Second) // a GC cycle or two, as an idle server would run
				after := s.memory()
				per := func(a, b float64) float64 { return (a - b) / streams }
				b.ReportMetric(per(after.rss, before.rss), "RSS-B/stream")
				b.ReportMetric(per(after.heap, before.heap), "heap-B/stream")
				b.ReportMetric(per(after.stack, before.stack), "stack-B/stream")
				b.ReportMetric(per(after.goroutines, before.goroutines), "goroutines/stream")
				for _, c := range conns {
					_ = c.Close()
				}
				_ = first.Close()
			}
		})
	}
}

// BenchmarkCommitToEvent runs two `seckill serve` processes on one Redis and
// PostgreSQL, opens 1,000 order streams on A (one per order, each awaiting payment),
// and pays the orders one at a time through B: it reports the median and 99th
// percentile of the time from sending the payment to its event arriving on A's stream
// (the payment's own work — authorization, the commit — included), and the median
// time the payment took to answer, for comparison. b.N payments, at most 1,000.
func BenchmarkCommitToEvent(b *testing.B) {
	const streams = 1000
	servers := startBenchServes(b, 2)
	a, via := servers[0], servers[1]
	voucher := a.createVoucher(streams, 1)
	orders := make([]string, streams)
	for i := range orders {
		orders[i] = via.grab(voucher, domain.UserID(1000+i))
	}
	paid := make([]chan time.Time, streams)
	for i, order := range orders {
		paid[i] = make(chan time.Time, 1)
		_, r := a.openRaw("/api/v1/orders/"+order+"/events", a.token(domain.UserID(1000+i), false))
		go func() {
			for {
				line, err := r.ReadString('\n')
				if err != nil {
					return
				}
				if strings.HasPrefix(line, "data: ") && strings.Contains(line, `"status":"paid"`) {
					paid[i] <- time.Now()
					return
				}
			}
		}()
	}
	// Every order is persisted before the payments start.
	testenv.Eventually(b, time.Minute, "every order awaiting payment", func() (bool, string) {
		_, body := a.call(http.MethodGet, "/api/v1/vouchers/"+voucher+"/stats", a.token(1, true), nil)
		return body["awaiting_payment"] == float64(streams), fmt.Sprint(body)
	})
	n := min(b.N, streams)
	latencies := make([]time.Duration, 0, n)
	answers := make([]time.Duration, 0, n)
	b.ResetTimer()
	for i := range n {
		start := time.Now()
		if status, body := via.call(http.MethodPost, "/api/v1/orders/"+orders[i]+"/pay", via.token(domain.UserID(1000+i), false), nil); status != http.StatusOK {
			b.Fatalf("pay: %d %v", status, body)
		}
		answers = append(answers, time.Since(start))
		select {
		case at := <-paid[i]:
			latencies = append(latencies, at.Sub(start))
		case <-time.After(30 * time.Second):
			b.Fatalf("no paid event for order %d", i)
		}
	}
	b.StopTimer()
	slices.Sort(latencies)
	slices.Sort(answers)
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	b.ReportMetric(ms(latencies[len(latencies)/2]), "p50-ms")
	b.ReportMetric(ms(latencies[len(latencies)*99/100]), "p99-ms")
	b.ReportMetric(ms(answers[len(answers)/2]), "pay-p50-ms")
}
