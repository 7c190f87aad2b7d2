package load

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// fakeSeckill is a stand-in of the seckill HTTP endpoints the load tool calls. It is
// honest unless told otherwise; it tests the load tool, not the service.
type fakeSeckill struct {
	mu        sync.Mutex
	stock     int
	orders    map[int64]string // user -> order
	reserved  int
	statCalls int
	// persistPerCall is how many reserved orders each stats call finds persisted more.
	persistPerCall int
	// oversell ignores the stock; duplicate hands out a new order to a repeat.
	oversell, duplicate bool
	// fail answers 500 for these users; drop closes their connection unanswered.
	fail, drop map[int64]bool
	// dieAfter, when set, makes the service stop answering (every request's
	// connection closed unanswered) once it reserved that many; downAfterStats closes
	// its listener, refusing every new connection, after the first stats call, and
	// answers 503 to stats from then on; others are orders another seller persisted
	// for the same voucher, which the stats count once this one reserved any.
	dieAfter       int
	dead           atomic.Bool
	downAfterStats bool
	listener       net.Listener
	others         int
	// lostAck takes these users' grabs but closes the connection instead of answering
	// (an acknowledgement lost, as under a kill -9); takeBack leaves out of the store
	// the first orders it answered 202 for (202s taken back).
	lostAck  map[int64]bool
	takeBack int
	// store is every order taken, as the CSV export lists them.
	store []StoreOrder

	inFlight, maxInFlight atomic.Int64
	conns                 atomic.Int64
}

func newFake(t *testing.T, stock int) (*fakeSeckill, *httptest.Server) {
	t.Helper()
	f := &fakeSeckill{stock: stock, orders: map[int64]string{}, persistPerCall: 1 << 30}
	srv := httptest.NewUnstartedServer(f)
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			f.conns.Add(1)
		}
	}
	srv.Start()
	f.listener = srv.Listener
	t.Cleanup(srv.Close)
	return f, srv
}

// tokens are "user-N" and "admin"; the fake trusts them.
func tokens(user int64, admin bool) (string, error) {
	if admin {
		return "admin", nil
	}
	return "user-" + strconv.FormatInt(user, 10), nil
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func conflict(w http.ResponseWriter, code, order string) {
	writeJSON(w, http.StatusConflict, map[string]any{"error": map[string]any{"code": code, "message": code, "order_id": order}})
}

// hangUp closes the request's connection unanswered.
func hangUp(w http.ResponseWriter) {
	conn, _, err := w.(http.Hijacker).Hijack()
	if err == nil {
		_ = conn.Close()
	}
}

func (f *fakeSeckill) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	auth := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
	if f.dead.Load() {
		hangUp(w)
		return
	}
	switch {
	case r.Method == http.MethodGet && r.URL.Path == "/healthz":
		w.WriteHeader(http.StatusOK)
	case r.Method == http.MethodPost && r.URL.Path == "/api/v1/vouchers":
		writeJSON(w, http.StatusCreated, map[string]any{"id": "7", "stock": f.stock, "remaining": f.stock, "per_user_limit": 1})
	case r.Method == http.MethodGet && r.URL.Path == "/api/v1/vouchers/7":
		f.mu.Lock()
		remaining := f.stock - f.reserved
		f.mu.Unlock()
		writeJSON(w, http.StatusOK, map[string]any{"id": "7", "stock": f.stock, "remaining": remaining, "per_user_limit": 1})
	case r.Method == http.MethodPost && r.URL.Path == "/api/v1/vouchers/7/grab":
		n := f.inFlight.Add(1)
		defer f.inFlight.Add(-1)
		for {
			m := f.maxInFlight.Load()
			if n <= m || f.maxInFlight.CompareAndSwap(m, n) {
				break
			}
		}
		time.Sleep(time.Millisecond) // let requests overlap
		user, err := strconv.ParseInt(strings.TrimPrefix(auth, "user-"), 10, 64)
		if err != nil || !strings.HasPrefix(auth, "user-") {
			writeJSON(w, http.StatusUnauthorized, map[string]any{"error": map[string]any{"code": "unauthorized"}})
			return
		}
		f.grab(w, user)
	case r.Method == http.MethodGet && r.URL.Path == "/api/v1/vouchers/7/stats":
		if auth != "admin" {
			writeJSON(w, http.StatusForbidden, map[string]any{"error": map[string]any{"code": "forbidden", "message": "admin role required"}})
			return
		}
		f.mu.Lock()
		f.statCalls++
		calls := f.statCalls
		persisted := min(f.reserved, f.statCalls*f.persistPerCall)
		queued := f.reserved - persisted
		if f.reserved > 0 {
			persisted += f.others
		}
		stock, reserved := f.stock, f.reserved
		f.mu.Unlock()
		if f.downAfterStats && calls > 1 {
			writeJSON(w, http.StatusServiceUnavailable, map[string]any{"error": map[string]any{"code": "unavailable"}})
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"stock": stock, "remaining": stock - reserved, "awaiting_payment": persisted, "queued": queued, "pending": queued})
		if f.downAfterStats {
			_ = f.listener.Close()
		}
	case r.Method == http.MethodGet && r.URL.Path == "/api/v1/vouchers/7/orders" && auth == "admin":
		f.mu.Lock()
		defer f.mu.Unlock()
		w.Header().Set("Content-Type", "text/csv")
		fmt.Fprint(w, "order_id,voucher_id,user_id,quantity,status,created_at\r\n")
		for i, o := range f.store {
			if i >= f.takeBack {
				fmt.Fprintf(w, "%s,7,%d,%d,%s,2026-01-01T00:00:00.000Z\r\n", o.ID, o.User, o.Quantity, o.Status)
			}
		}
		for i := range f.others {
			if len(f.store) > 0 {
				fmt.Fprintf(w, "x%d,7,%d,1,awaiting_payment,2026-01-01T00:00:00.000Z\r\n", i, 1_000_000+i)
			}
		}
	default:
		writeJSON(w, http.StatusNotFound, map[string]any{"error": map[string]any{"code": "not_found"}})
	}
}

func (f *fakeSeckill) grab(w http.ResponseWriter, user int64) {
	if f.drop[user] {
		hangUp(w)
		return
	}
	if f.fail[user] {
		writeJSON(w, http.StatusInternalServerError, map[string]any{"error": map[string]any{"code": "internal"}})
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.dead.Load() {
		hangUp(w)
		return
	}
	if order, ok := f.orders[user]; ok && !f.duplicate {
		conflict(w, "already_purchased", order)
		return
	}
	if f.reserved >= f.stock && !f.oversell {
		conflict(w, "sold_out", "")
		return
	}
	f.reserved++
	order := fmt.Sprintf("o%d", f.reserved)
	f.orders[user] = order
	f.store = append(f.store, StoreOrder{ID: order, User: user, Quantity: 1, Status: "awaiting_payment"})
	if f.lostAck[user] {
		hangUp(w)
		return
	}
	writeJSON(w, http.StatusAccepted, map[string]any{"order_id": order, "voucher_id": "7", "quantity": 1, "status": "queued"})
	if f.dieAfter > 0 && f.reserved >= f.dieAfter {
		f.dead.Store(true)
	}
}

func TestPlanRepeatsAFractionOfUsersInterleaved(t *testing.T) {
	plan := Plan(5000, 0.01, 42, 1)
	if got, want := len(plan), 5050; got != want {
		t.Fatalf("requests = %d, want %d", got, want)
	}
	seen := map[int64]int{}
	lastRepeat := 0
	firstRepeat := len(plan)
	for i, u := range plan {
		seen[u]++
		if seen[u] == 2 {
			lastRepeat = max(lastRepeat, i)
			firstRepeat = min(firstRepeat, i)
		}
	}
	twice := 0
	for u, n := range seen {
		if u < 1 || u > 5000 || n > 2 {
			t.Fatalf("user %d sent %d times", u, n)
		}
		if n == 2 {
			twice++
		}
	}
	if got, want := len(seen), 5000; got != want {
		t.Fatalf("distinct users = %d, want %d", got, want)
	}
	if got, want := twice, 50; got != want {
		t.Fatalf("users sending twice = %d, want %d", got, want)
	}
	if firstRepeat > len(plan)/2 {
		t.Fatalf("the first repeat is at %d of %d: repeats are not interleaved", firstRepeat, len(plan))
	}
	if got, want := slices.Equal(plan, Plan(5000, 0.01, 42, 1)), true; got != want {
		t.Fatalf("same seed, same plan = %v", got)
	}
	if got, want := slices.Equal(plan, Plan(5000, 0.01, 43, 1)), false; got != want {
		t.Fatalf("another seed, same plan = %v", got)
	}
	if got, want := len(Plan(10, 1, 1, 100)), 20; got != want {
		t.Fatalf("dup 1: requests = %d, want %d", got, want)
	}
	if got, want := len(Plan(10, 0, 1, 100)), 10; got != want {
		t.Fatalf("dup 0: requests = %d, want %d", got, want)
	}
	if got, want := slices.Min(Plan(10, 0, 1, 100)), int64(100); got != want {
		t.Fatalf("first user = %d, want %d", got, want)
	}
}

func TestPercentileIsNearestRank(t *testing.T) {
	var lat []time.Duration
	for i := 1; i <= 100; i++ {
		lat = append(lat, time.Duration(i)*time.Millisecond)
	}
	for _, c := range []struct {
		p    float64
		want time.Duration
	}{{50, 50 * time.Millisecond}, {99, 99 * time.Millisecond}, {100, 100 * time.Millisecond}, {0.1, time.Millisecond}} {
		if got := Percentile(lat, c.p); got != c.want {
			t.Fatalf("p%v = %v, want %v", c.p, got, c.want)
		}
	}
	if got, want := Percentile(nil, 50), time.Duration(0); got != want {
		t.Fatalf("p50 of nothing = %v, want %v", got, want)
	}
	if got, want := Percentile([]time.Duration{7}, 99), time.Duration(7); got != want {
		t.Fatalf("p99 of one = %v, want %v", got, want)
	}
}

func TestSummarizeTalliesEveryAnswer(t *testing.T) {
	grabs := []Grab{
		{User: 1, Status: 202, OrderID: "a", Latency: 1 * time.Millisecond},
		{User: 2, Status: 202, OrderID: "b", Latency: 2 * time.Millisecond},
		{User: 3, Status: 409, Code: "sold_out", Latency: 3 * time.Millisecond},
		{User: 1, Status: 409, Code: "already_purchased", OrderID: "a", Latency: 4 * time.Millisecond},
		{User: 4, Status: 409, Code: "paused", Latency: 5 * time.Millisecond},
		{User: 5, Status: 500, Latency: 6 * time.Millisecond},
		{User: 6, Status: 500, Latency: 7 * time.Millisecond},
		{User: 7, Err: errors.New("connection reset"), Latency: time.Second},
	}
	for i := range 10 {
		grabs = append(grabs, Grab{User: int64(100 + i), Status: 503, Code: fmt.Sprintf("unavailable-%d", i), Latency: 8 * time.Millisecond})
	}
	res := Summarize(grabs, 2*time.Second)
	for _, c := range []struct {
		name      string
		got, want int
	}{
		{"requests", res.Requests, 18}, {"reserved", res.Reserved, 2}, {"sold_out", res.SoldOut, 1},
		{"already_purchased", res.AlreadyPurchased, 1}, {"other", res.Other, 14},
		{"examples", len(res.OtherExamples), maxExamples}, {"reservations", len(res.Reservations), 2},
	} {
		if c.got != c.want {
			t.Fatalf("%s = %d, want %d", c.name, c.got, c.want)
		}
	}
	if got, want := strings.Join(res.OtherExamples[:4], "|"), "409 paused|500 Internal Server Error|transport error: connection reset|503 unavailable-0"; got != want {
		t.Fatalf("examples = %q, want %q", got, want)
	}
	// Latencies count only answered requests: 17 of them, 1..8 ms.
	if got, want := res.P50, 8*time.Millisecond; got != want {
		t.Fatalf("p50 = %v, want %v", got, want)
	}
	if got, want := res.Max, 8*time.Millisecond; got != want {
		t.Fatalf("max = %v, want %v", got, want)
	}
	if got, want := res.RPS, 9.0; got != want {
		t.Fatalf("rps = %v, want %v", got, want)
	}
}

func TestOversoldAndDuplicates(t *testing.T) {
	res := Result{Reserved: 5, Reservations: []Reservation{
		{1, "a"}, {2, "b"}, {2, "c"}, {3, "d"}, {3, "d"},
	}}
	if got, want := res.Duplicates(), 1; got != want {
		t.Fatalf("duplicates = %d, want %d (user 2 holds two orders; user 3 one order named twice)", got, want)
	}
	if got, want := res.Oversold(3), 2; got != want {
		t.Fatalf("oversold of 3 = %d, want %d", got, want)
	}
	if got, want := res.Oversold(10), 0; got != want {
		t.Fatalf("oversold of 10 = %d, want %d", got, want)
	}
}

func TestRunSellsExactlyTheStockOfAnHonestService(t *testing.T) {
	f, srv := newFake(t, 50)
	var progress bytes.Buffer
	res, err := Run(context.Background(), Options{Base: srv.URL, Voucher: "7", Tokens: tokens,
		Users: 500, Dup: 0.1, Concurrency: 16, Seed: 1, Progress: &progress})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name      string
		got, want int
	}{
		{"requests", res.Requests, 550}, {"reserved", res.Reserved, 50}, {"other", res.Other, 0},
		{"sold_out+already_purchased", res.SoldOut + res.AlreadyPurchased, 500},
		{"oversold", res.Oversold(50), 0}, {"duplicates", res.Duplicates(), 0},
		{"reservations", len(res.Reservations), 50},
	} {
		if c.got != c.want {
			t.Fatalf("%s = %d, want %d (examples %v)", c.name, c.got, c.want, res.OtherExamples)
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, r := range res.Reservations {
		if got, want := f.orders[r.User], r.OrderID; got != want {
			t.Fatalf("user %d: reservation names %q, service gave %q", r.User, want, got)
		}
	}
	if res.P50 <= 0 || res.P99 < res.P50 || res.Max < res.P99 || res.RPS <= 0 {
		t.Fatalf("latency p50 %v p99 %v max %v, rps %v", res.P50, res.P99, res.Max, res.RPS)
	}
	if got, want := f.maxInFlight.Load(), int64(16); got > want {
		t.Fatalf("requests in flight = %d, want at most %d", got, want)
	}
	// Keep-alive: the pool opens about one connection per worker, not one per request.
	if got, want := f.conns.Load(), int64(2*16); got > want {
		t.Fatalf("connections opened = %d, want at most %d", got, want)
	}
	out := progress.String()
	if !strings.Contains(out, "\r  550/550 requests  100%\n") || !strings.HasSuffix(out, "\n") {
		t.Fatalf("progress = %q", out)
	}
}

func TestRunDetectsOversellAndDuplicates(t *testing.T) {
	f, srv := newFake(t, 10)
	f.oversell, f.duplicate = true, true
	res, err := Run(context.Background(), Options{Base: srv.URL, Voucher: "7", Tokens: tokens,
		Users: 100, Dup: 0.05, Concurrency: 8, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := res.Reserved, 105; got != want {
		t.Fatalf("reserved = %d, want %d", got, want)
	}
	if got, want := res.Oversold(10), 95; got != want {
		t.Fatalf("oversold = %d, want %d", got, want)
	}
	if got, want := res.Duplicates(), 5; got != want {
		t.Fatalf("duplicates = %d, want %d", got, want)
	}
	rep := NewReport(Sale{Voucher: "7", Stock: 10, Users: 100, Concurrency: 8}, res, 105, time.Millisecond, nil)
	if got, want := rep.Broken(), true; got != want {
		t.Fatalf("broken = %v, want %v", got, want)
	}
}

func TestRunCountsFailuresAsOther(t *testing.T) {
	f, srv := newFake(t, 1000)
	f.fail = map[int64]bool{3: true, 4: true}
	f.drop = map[int64]bool{5: true}
	res, err := Run(context.Background(), Options{Base: srv.URL, Voucher: "7", Tokens: tokens,
		Users: 20, Concurrency: 4, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := res.Other, 3; got != want {
		t.Fatalf("other = %d, want %d (%v)", got, want, res.OtherExamples)
	}
	if got, want := res.Reserved, 17; got != want {
		t.Fatalf("reserved = %d, want %d", got, want)
	}
	if got, want := len(res.OtherExamples), 2; got != want {
		t.Fatalf("examples = %q, want %d distinct", res.OtherExamples, want)
	}
	joined := strings.Join(res.OtherExamples, "|")
	if !strings.Contains(joined, "500 internal") || !strings.Contains(joined, "transport error") {
		t.Fatalf("examples = %q", joined)
	}
}

func TestRunRejectsBadOptions(t *testing.T) {
	good := Options{Base: "http://127.0.0.1:1", Voucher: "7", Tokens: tokens, Users: 1, Concurrency: 1}
	for name, mutate := range map[string]func(*Options){
		"no users":       func(o *Options) { o.Users = 0 },
		"dup above 1":    func(o *Options) { o.Dup = 2 },
		"dup below 0":    func(o *Options) { o.Dup = -0.1 },
		"no concurrency": func(o *Options) { o.Concurrency = 0 },
		"no voucher":     func(o *Options) { o.Voucher = "" },
		"no tokens":      func(o *Options) { o.Tokens = nil },
	} {
		o := good
		mutate(&o)
		if _, err := Run(context.Background(), o); err == nil {
			t.Fatalf("%s: no error", name)
		}
	}
}

func TestRunStopsWhenCancelled(t *testing.T) {
	_, srv := newFake(t, 10)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	res, err := Run(ctx, Options{Base: srv.URL, Voucher: "7", Tokens: tokens, Users: 100_000, Concurrency: 2})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want deadline exceeded", err)
	}
	if res.Requests >= 100_000 {
		t.Fatalf("requests = %d: the run did not stop", res.Requests)
	}
}

func TestWaitPersistedPollsUntilEveryOrderIsPersisted(t *testing.T) {
	f, srv := newFake(t, 30)
	f.persistPerCall = 10
	if _, err := Run(context.Background(), Options{Base: srv.URL, Voucher: "7", Tokens: tokens, Users: 100, Concurrency: 4}); err != nil {
		t.Fatal(err)
	}
	p, err := WaitPersisted(context.Background(), srv.URL, "7", "admin", 30, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := p.Orders, 30; got != want {
		t.Fatalf("orders = %d, want %d", got, want)
	}
	f.mu.Lock()
	calls := f.statCalls
	f.mu.Unlock()
	if got, want := calls, 3; got != want {
		t.Fatalf("stats calls = %d, want %d", got, want)
	}
	if p.Took <= 0 || p.Took > 5*time.Second {
		t.Fatalf("took %v", p.Took)
	}
}

func TestWaitPersistedGivesUpAfterTheTimeout(t *testing.T) {
	f, srv := newFake(t, 30)
	f.persistPerCall = 0
	if _, err := Run(context.Background(), Options{Base: srv.URL, Voucher: "7", Tokens: tokens, Users: 100, Concurrency: 4}); err != nil {
		t.Fatal(err)
	}
	p, err := WaitPersisted(context.Background(), srv.URL, "7", "admin", 30, 200*time.Millisecond)
	if !errors.Is(err, ErrNotPersisted) {
		t.Fatalf("err = %v, want ErrNotPersisted", err)
	}
	if got, want := p.Orders, 0; got != want {
		t.Fatalf("orders = %d, want %d", got, want)
	}
	if !strings.Contains(err.Error(), "0 of 30 orders persisted (queued 30, pending 30") {
		t.Fatalf("err = %v", err)
	}
	// A token that is not an admin's ends the wait at once (however long it may
	// last), naming the refusal.
	_, err = WaitPersisted(context.Background(), srv.URL, "7", "user-1", 30, time.Hour)
	if err == nil || !strings.Contains(err.Error(), "403 forbidden") {
		t.Fatalf("err = %v, want the 403", err)
	}
}

func TestHealthyFailsFastWhenNothingAnswers(t *testing.T) {
	_, srv := newFake(t, 1)
	if err := Healthy(context.Background(), srv.URL, time.Second); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	err := Healthy(context.Background(), "http://127.0.0.1:1", 2*time.Second)
	if err == nil || !strings.Contains(err.Error(), "no seckill answers at http://127.0.0.1:1") {
		t.Fatalf("err = %v", err)
	}
	if took := time.Since(start); took > time.Minute {
		t.Fatalf("took %v: the 2 s timeout did not end the wait", took)
	}
	// A listener that never answers is cut at the timeout.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	start = time.Now()
	err = Healthy(context.Background(), "http://"+ln.Addr().String(), 200*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "no answer within 200ms") {
		t.Fatalf("err = %v", err)
	}
	if took := time.Since(start); took > time.Minute {
		t.Fatalf("took %v: the 200 ms timeout did not cut a listener that never answers", took)
	}
}

func TestReportJSONHasTheIssuesKeys(t *testing.T) {
	res := Result{Requests: 5050, Reserved: 100, SoldOut: 4900, AlreadyPurchased: 40, Other: 10}
	res.OtherExamples = []string{"503 unavailable"}
	res.P50, res.P99, res.Max = 1500*time.Microsecond, 12*time.Millisecond, 20*time.Millisecond
	res.RPS = 12345.67
	for i := range 100 {
		res.Reservations = append(res.Reservations, Reservation{User: int64(i + 1), OrderID: fmt.Sprint(i)})
	}
	rep := NewReport(Sale{Voucher: "42", Stock: 100, Users: 5000, Concurrency: 500}, res, 100, 320*time.Millisecond, nil)
	var buf bytes.Buffer
	if err := rep.WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Count(buf.String(), "\n"), 1; got != want {
		t.Fatalf("lines = %d, want %d: %q", got, want, buf.String())
	}
	var m map[string]any
	if err := json.Unmarshal(buf.Bytes(), &m); err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{
		"requests": 5050, "reserved": 100, "sold_out": 4900, "already_purchased": 40, "other": 10,
		"oversold": 0, "duplicates": 0, "orders_persisted": 100, "p50_ms": 1.5, "p99_ms": 12,
		"max_ms": 20, "rps": 12345.7, "persist_ms": 320,
	}
	for k, v := range want {
		got, ok := m[k].(float64)
		if !ok || got != v {
			t.Fatalf("%s = %v, want %v (%s)", k, m[k], v, buf.String())
		}
	}
	if got, want := m["broken"], false; got != want {
		t.Fatalf("broken = %v, want %v", got, want)
	}

	buf.Reset()
	if err := rep.WriteTable(&buf); err != nil {
		t.Fatal(err)
	}
	table := buf.String()
	for _, line := range []string{
		"  requests                     5050",
		"  oversold                        0  ok",
		"  duplicate buyers                0  ok",
		"  orders persisted              100  ok",
		"  latency p50               1.50 ms",
		"  requests per second         12346",
		"  time to persist            320 ms",
		"  other, e.g.: 503 unavailable",
		"all promises kept",
	} {
		if !strings.Contains(table, line+"\n") && !strings.Contains(table, line) {
			t.Fatalf("table lacks %q:\n%s", line, table)
		}
	}
}

func TestReportBrokenWhenAPromiseIs(t *testing.T) {
	base := Report{Stock: 100, Reserved: 100, OrdersPersisted: 100}
	for _, c := range []struct {
		name   string
		mutate func(*Report)
		broken bool
	}{
		{"all kept", func(*Report) {}, false},
		{"fewer reserved, all persisted", func(r *Report) { r.Reserved, r.OrdersPersisted = 60, 60 }, false},
		{"oversold", func(r *Report) { r.Oversold = 1 }, true},
		{"reserved beyond stock", func(r *Report) { r.Reserved, r.OrdersPersisted = 101, 101 }, true},
		{"duplicate", func(r *Report) { r.Duplicates = 1 }, true},
		{"an order lost", func(r *Report) { r.OrdersPersisted = 99 }, true},
		{"an extra order", func(r *Report) { r.OrdersPersisted = 101 }, true},
		{"an answer lost, not its order", func(r *Report) { r.Reserved = 99 }, false},
		{"orders not counted", func(r *Report) { r.OrdersPersisted, r.Unverified = 0, "stats not readable" }, false},
		{"orders not counted, oversold", func(r *Report) { r.Reserved, r.Oversold, r.Unverified = 101, 1, "stats not readable" }, true},
		{"nothing served", func(r *Report) { r.Reserved, r.OrdersPersisted, r.Other = 0, 0, 100 }, false},
	} {
		r := base
		c.mutate(&r)
		if got := r.Broken(); got != c.broken {
			t.Fatalf("%s: broken = %v, want %v", c.name, got, c.broken)
		}
		if got := errors.Is(r.Err(), ErrBroken); got != c.broken {
			t.Fatalf("%s: verdict %v, want broken = %v", c.name, r.Err(), c.broken)
		}
		var buf bytes.Buffer
		if err := r.WriteTable(&buf); err != nil {
			t.Fatal(err)
		}
		// The marks and the last line agree with the verdict.
		table := buf.String()
		if got, want := strings.Contains(table, "PROMISE BROKEN"), c.broken; got != want {
			t.Fatalf("%s: table says broken = %v:\n%s", c.name, got, table)
		}
		if got, want := strings.Contains(table, "BROKEN\n"), c.broken; got != want {
			t.Fatalf("%s: table marks a row BROKEN = %v:\n%s", c.name, got, table)
		}
		if got, want := strings.Contains(table, "all promises kept"), r.Err() == nil; got != want {
			t.Fatalf("%s: table says all kept = %v, verdict %v:\n%s", c.name, got, r.Err(), table)
		}
	}
}

// sell runs Sell against srv and returns the report, the table and the JSON it prints.
func sell(t *testing.T, ctx context.Context, srv *httptest.Server, f Flags) (Report, string, map[string]any) {
	t.Helper()
	_, rep, err := Sell(ctx, Target{Base: srv.URL, Title: "t", Tokens: tokens}, f)
	if err != nil {
		t.Fatalf("sell: %v", err)
	}
	var table, js bytes.Buffer
	if err := rep.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	if err := rep.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(js.Bytes(), &m); err != nil {
		t.Fatal(err)
	}
	return rep, table.String(), m
}

// A service that stops answering in the middle of the burst leaves the orders
// persisted unknown: the verdict is "could not verify", not a lost order (it once
// counted the stats it could not read as no order persisted, and called every
// reservation lost).
func TestSellCannotVerifyWhenTheServiceStopsMidBurst(t *testing.T) {
	f, srv := newFake(t, 1000)
	f.dieAfter = 30
	rep, table, m := sell(t, context.Background(), srv, Flags{Users: 200, Stock: 1000, Concurrency: 8, Timeout: 300 * time.Millisecond})
	if got, want := rep.Reserved, 30; got != want {
		t.Fatalf("reserved = %d, want %d", got, want)
	}
	if rep.Other == 0 {
		t.Fatalf("other = 0: the requests after the service stopped were answered?")
	}
	if err := rep.Err(); !errors.Is(err, ErrUnverified) || errors.Is(err, ErrBroken) {
		t.Fatalf("verdict %v, want could not verify", err)
	}
	if !strings.Contains(rep.Err().Error(), "stats not readable") {
		t.Fatalf("verdict %v does not say why", rep.Err())
	}
	for _, want := range []string{"  orders persisted                ?  UNVERIFIED\n", "\nCOULD NOT VERIFY that every reservation became an order: stats not readable"} {
		if !strings.Contains(table, want) {
			t.Fatalf("table lacks %q:\n%s", want, table)
		}
	}
	if strings.Contains(table, "BROKEN") || strings.Contains(table, "all promises kept") {
		t.Fatalf("table:\n%s", table)
	}
	if m["verdict"] != "unverified" || m["broken"] != false || m["unverified"] == nil {
		t.Fatalf("JSON: %v", m)
	}
}

// A service that is down once the sale begins — every grab's connection refused —
// served nothing: that fails, whatever else (it once called the refusals "other
// answers" and all promises kept). Nothing to wait for then: one look at the stats.
func TestSellFailsWhenNothingWasServed(t *testing.T) {
	f, srv := newFake(t, 100)
	f.downAfterStats = true
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	rep, table, m := sell(t, ctx, srv, Flags{Users: 300, Dup: 0.1, Stock: 100, Concurrency: 8, Timeout: time.Hour})
	if got, want := rep.Other, 330; got != want {
		t.Fatalf("other = %d, want every request's %d (%v)", got, want, rep.OtherExamples)
	}
	if !strings.Contains(strings.Join(rep.OtherExamples, "|"), "connection refused") {
		t.Fatalf("examples %v, want a refused connection", rep.OtherExamples)
	}
	if err := rep.Err(); !errors.Is(err, ErrNotServed) || !strings.Contains(err.Error(), "none of the 330 requests got a sale's answer") {
		t.Fatalf("verdict %v, want nothing served", err)
	}
	if !strings.Contains(table, "\nNOTHING SERVED: none of the 330 requests") || strings.Contains(table, "all promises kept") {
		t.Fatalf("table:\n%s", table)
	}
	if m["verdict"] != "not_served" || m["broken"] != false {
		t.Fatalf("JSON: %v", m)
	}
}

// Two instances selling one voucher, each with its own load: each run sees the other's
// orders persisted too. That is more orders than its 202s, which breaks no promise, and
// every line of the table says so (it once marked the row BROKEN and then said all
// promises were kept).
func TestSellBesideAnotherSellerIsConsistent(t *testing.T) {
	f, srv := newFake(t, 100)
	f.others = 25
	rep, table, m := sell(t, context.Background(), srv, Flags{Users: 50, Stock: 100, Concurrency: 4, Timeout: 5 * time.Second})
	if got, want := rep.OrdersPersisted, 75; got != want {
		t.Fatalf("orders persisted = %d, want %d", got, want)
	}
	if err := rep.Err(); err != nil {
		t.Fatalf("verdict %v, want every promise kept", err)
	}
	for _, want := range []string{"  orders persisted               75  ok\n", "  note: 25 orders more than this run's 202s", "\nall promises kept"} {
		if !strings.Contains(table, want) {
			t.Fatalf("table lacks %q:\n%s", want, table)
		}
	}
	if strings.Contains(table, "BROKEN") {
		t.Fatalf("table contradicts itself:\n%s", table)
	}
	if m["verdict"] != "kept" || m["broken"] != false {
		t.Fatalf("JSON: %v", m)
	}
}

// Sell sells an existing voucher's units left, and hands the tally to During's end.
func TestSellAnExistingVoucher(t *testing.T) {
	f, srv := newFake(t, 40)
	var during []Result
	_, rep, err := Sell(context.Background(), Target{Base: srv.URL, Voucher: "7", Tokens: tokens,
		During: func() func(Result) {
			f.mu.Lock()
			defer f.mu.Unlock()
			if f.reserved != 0 {
				t.Errorf("During began after %d grabs", f.reserved)
			}
			return func(r Result) { during = append(during, r) }
		}}, Flags{Users: 60, Stock: 1, Concurrency: 4, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := rep.Stock, 40; got != want {
		t.Fatalf("stock = %d, want the voucher's %d units left (not --stock)", got, want)
	}
	if rep.Reserved != 40 || rep.OrdersPersisted != 40 || rep.Err() != nil {
		t.Fatalf("report %+v, verdict %v", rep, rep.Err())
	}
	if len(during) != 1 || during[0].Requests != 60 {
		t.Fatalf("During's end heard %+v", during)
	}
}

func TestWaitReady(t *testing.T) {
	var ready atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/readyz" || !ready.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	t.Cleanup(srv.Close)
	never := make(chan struct{})
	if err := WaitReady(context.Background(), srv.URL, 100*time.Millisecond, never); err == nil || !strings.Contains(err.Error(), "not ready within 100ms") {
		t.Fatalf("a service answering 503: %v, want not ready", err)
	}
	stopped := make(chan struct{})
	close(stopped)
	if err := WaitReady(context.Background(), srv.URL, time.Hour, stopped); !errors.Is(err, ErrStopped) {
		t.Fatalf("a service that stopped: %v, want ErrStopped", err)
	}
	ready.Store(true)
	if err := WaitReady(context.Background(), srv.URL+"/", time.Hour, never); err != nil {
		t.Fatalf("a ready service: %v", err)
	}
}
