package httpapi_test

import (
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/seckill/seckill/adapters/httpapi"
	"github.com/seckill/seckill/domain"
)

// scrape reads GET /metrics and returns each sample line's value by its series
// ("name{label="value",…}" as exposed).
func (a *api) scrape() map[string]float64 {
	a.t.Helper()
	res, err := http.Get(a.url + "/metrics")
	if err != nil {
		a.t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusOK {
		a.t.Fatalf("GET /metrics: %d %s", res.StatusCode, raw)
	}
	checkResponse(a.t, http.MethodGet, "/metrics", res.StatusCode, res.Header, raw)
	out := make(map[string]float64)
	for _, line := range strings.Split(string(raw), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			a.t.Fatalf("metrics line %q: %v", line, err)
		}
		out[line[:i]] = v
	}
	return out
}

func grabSeries(outcome string) string {
	return `seckill_grab_requests_total{outcome="` + outcome + `"}`
}

// Every outcome is exposed from the start, at zero, so a dashboard sees zeros, not gaps.
func TestMetricsExposeEveryOutcomeFromTheStart(t *testing.T) {
	t.Parallel()
	a := newAPI(t)
	m := a.scrape()
	for _, o := range httpapi.GrabOutcomes {
		v, ok := m[grabSeries(o)]
		if !ok || v != 0 {
			t.Errorf("%s = %v (present %v), want 0", grabSeries(o), v, ok)
		}
	}
	route := `seckill_http_request_duration_seconds_count{code="202",method="POST",route="/api/v1/vouchers/:id/grab"}`
	if v, ok := m[route]; !ok || v != 0 {
		t.Errorf("%s = %v (present %v), want 0", route, v, ok)
	}
}

// The grab door's bound on grabs in flight is exposed: SECKILL_MAX_INFLIGHT until the
// door backs off, 0 when there is no bound.
func TestMetricsExposeTheDoorsLimit(t *testing.T) {
	t.Parallel()
	const series = "seckill_grab_inflight_limit"
	for _, limit := range []int{0, 77} {
		a := newAPI(t, func(s *setup) { s.http.MaxInflight = limit })
		if v, ok := a.scrape()[series]; !ok || v != float64(limit) {
			t.Errorf("MaxInflight %d: %s = %v (present %v), want %d", limit, series, v, ok, limit)
		}
	}
}

// A burst moves the grab counters exactly: reserved by the units sold, the refusals by
// theirs, and the duration histogram counts the grabs under the route's pattern, never
// a raw path.
func TestBurstMovesTheGrabCountersExactly(t *testing.T) {
	t.Parallel()
	a := newAPI(t)
	const stock, users = 25, 120
	id := a.createVoucher(stock, 1)
	before := a.scrape()

	var mu sync.Mutex
	answers := map[string]int{}
	var wg sync.WaitGroup
	for u := 1; u <= users; u++ {
		tok := a.token(domain.UserID(1000+u), false)
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := a.do(http.MethodPost, "/api/v1/vouchers/"+id+"/grab", tok, "")
			key := r.code()
			if r.Status == http.StatusAccepted {
				key = "reserved"
			}
			mu.Lock()
			answers[key]++
			mu.Unlock()
		}()
	}
	wg.Wait()
	// Refusals of other kinds, one each.
	a.do(http.MethodPost, "/api/v1/vouchers/"+id+"/grab", "", "")                       // unauthorized
	a.do(http.MethodPost, "/api/v1/vouchers/"+id+"/grab", a.token(5, false), `{"x":1}`) // invalid
	a.do(http.MethodPost, "/api/v1/vouchers/424242/grab", a.token(5, false), "")        // not_found
	answers["unauthorized"]++
	answers["invalid"]++
	answers["not_found"]++

	if answers["reserved"] != stock {
		t.Fatalf("answers %v: want %d reserved", answers, stock)
	}
	after := a.scrape()
	for _, o := range httpapi.GrabOutcomes {
		if got, want := after[grabSeries(o)]-before[grabSeries(o)], float64(answers[o]); got != want {
			t.Errorf("%s moved by %v, want %v (answers %v)", grabSeries(o), got, want, answers)
		}
	}
	route := `seckill_http_request_duration_seconds_count{code="202",method="POST",route="/api/v1/vouchers/:id/grab"}`
	if got := after[route] - before[route]; got != stock {
		t.Errorf("%s moved by %v, want %d", route, got, stock)
	}
	for series := range after {
		if strings.Contains(series, "/api/v1/vouchers/"+id) || strings.Contains(series, "424242") {
			t.Errorf("a raw path made a series: %s", series)
		}
	}
	unmatched := `seckill_http_request_duration_seconds_count{code="404",method="GET",route="unmatched"}`
	a.do(http.MethodGet, "/no/such/path", "", "")
	if got := a.scrape()[unmatched]; got != 1 {
		t.Errorf("%s = %v, want 1", unmatched, got)
	}
}
