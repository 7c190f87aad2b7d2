package httpapi_test

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/seckill/seckill/adapters/httpapi"
	"github.com/seckill/seckill/adapters/redisstore"
	"github.com/seckill/seckill/adapters/testenv"
	"github.com/seckill/seckill/application"
)

// sseEvent is one event of a stream, or a comment (kind "", comment set), or a
// retry (kind "", retry set).
type sseEvent struct {
	id, kind, data, comment, retry string
}

// eventStream reads a server-sent event stream as it arrives.
type eventStream struct {
	t      testing.TB
	res    *http.Response
	events chan sseEvent
	cancel context.CancelFunc
}

// eventDeadline is how long a test waits for an event it expects.
const eventDeadline = 10 * time.Second

// stream opens path (with token as the bearer, when set) and, when it answers 200,
// reads its events; otherwise it returns the answer, decoded, and no stream.
func (a *api) stream(path, token string) (*eventStream, response) {
	a.t.Helper()
	return a.resume(path, token, "")
}

// resume is stream as a client reconnecting after the event lastID (none when "").
func (a *api) resume(path, token, lastID string) (*eventStream, response) {
	a.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, a.url+path, nil)
	if err != nil {
		a.t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		a.t.Fatalf("GET %s: %v", path, err)
	}
	if res.StatusCode != http.StatusOK {
		defer cancel()
		defer res.Body.Close()
		raw, _ := io.ReadAll(res.Body)
		checkResponse(a.t, http.MethodGet, path, res.StatusCode, res.Header, raw)
		out := response{Status: res.StatusCode, Header: res.Header, Raw: string(raw)}
		if res.StatusCode == http.StatusNoContent && len(raw) == 0 {
			return nil, out
		}
		if err := json.Unmarshal(raw, &out.Body); err != nil {
			a.t.Fatalf("GET %s: %d %q", path, res.StatusCode, raw)
		}
		return nil, out
	}
	if got := res.Header.Get("Content-Type"); got != "text/event-stream" {
		a.t.Fatalf("GET %s: Content-Type %q", path, got)
	}
	s := &eventStream{t: a.t, res: res, events: make(chan sseEvent, 100), cancel: cancel}
	a.t.Cleanup(s.close)
	go s.read()
	return s, response{Status: res.StatusCode, Header: res.Header}
}

func (s *eventStream) read() {
	defer close(s.events)
	sc := bufio.NewScanner(s.res.Body)
	var ev sseEvent
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			s.events <- ev
			ev = sseEvent{}
		case strings.HasPrefix(line, ":"):
			ev.comment = strings.TrimSpace(line[1:])
		case strings.HasPrefix(line, "event: "):
			ev.kind = line[len("event: "):]
		case strings.HasPrefix(line, "data: "):
			ev.data = line[len("data: "):]
		case strings.HasPrefix(line, "id: "):
			ev.id = line[len("id: "):]
		case strings.HasPrefix(line, "retry: "):
			ev.retry = line[len("retry: "):]
		}
	}
}

func (s *eventStream) close() {
	s.cancel()
	_ = s.res.Body.Close()
}

// next returns the next event, skipping pings; it fails the test when none comes or
// the stream ends.
func (s *eventStream) next() sseEvent {
	s.t.Helper()
	timeout := time.After(eventDeadline)
	for {
		select {
		case ev, ok := <-s.events:
			if !ok {
				s.t.Fatal("the stream ended; an event was expected")
			}
			if ev.kind == "" {
				continue
			}
			if ev.id == "" {
				s.t.Fatalf("an event without an id: %+v", ev)
			}
			return ev
		case <-timeout:
			s.t.Fatalf("no event within %v", eventDeadline)
		}
	}
}

// ends fails the test unless the stream ends (after no other event) soon.
func (s *eventStream) ends() {
	s.t.Helper()
	select {
	case ev, ok := <-s.events:
		if ok {
			s.t.Fatalf("an event after the last: %+v", ev)
		}
	case <-time.After(eventDeadline):
		s.t.Fatal("the stream did not end")
	}
}

// retry returns the stream's reconnection delay, which must come first.
func (s *eventStream) retry() time.Duration {
	s.t.Helper()
	select {
	case ev := <-s.events:
		ms, err := strconv.Atoi(ev.retry)
		if ev.kind != "" || err != nil {
			s.t.Fatalf("the stream does not start with a retry: %+v", ev)
		}
		return time.Duration(ms) * time.Millisecond
	case <-time.After(eventDeadline):
		s.t.Fatal("the stream sent nothing")
	}
	return 0
}

// refused opens path and returns the delay of a stream refused at the limit: 200
// text/event-stream holding a retry: field only, closed at once.
func (a *api) refused(path, token string) time.Duration {
	a.t.Helper()
	req, err := http.NewRequest(http.MethodGet, a.url+path, nil)
	if err != nil {
		a.t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		a.t.Fatalf("GET %s: %v", path, err)
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body) // returns only once the server closed the stream
	if err != nil {
		a.t.Fatalf("GET %s: %v", path, err)
	}
	checkResponse(a.t, http.MethodGet, path, res.StatusCode, res.Header, raw)
	ms, ok := strings.CutPrefix(string(raw), "retry: ")
	n, err := strconv.Atoi(strings.TrimSuffix(ms, "\n\n"))
	if res.StatusCode != http.StatusOK || res.Header.Get("Content-Type") != "text/event-stream" || !ok ||
		!strings.HasSuffix(ms, "\n\n") || err != nil {
		a.t.Fatalf("GET %s refused: %d %s %q, want 200 text/event-stream \"retry: <ms>\"", path, res.StatusCode,
			res.Header.Get("Content-Type"), raw)
	}
	return time.Duration(n) * time.Millisecond
}

// nextOrder returns the data of the next event, which must be an order's.
func (s *eventStream) nextOrder() map[string]any {
	s.t.Helper()
	return s.decode(s.next(), "order")
}

func (s *eventStream) decode(ev sseEvent, kind string) map[string]any {
	s.t.Helper()
	if ev.kind != kind {
		s.t.Fatalf("event %q, want %q: %+v", ev.kind, kind, ev)
	}
	var body map[string]any
	if err := json.Unmarshal([]byte(ev.data), &body); err != nil {
		s.t.Fatalf("event data is not JSON: %q", ev.data)
	}
	return body
}

// grabOne grabs a unit of voucher as user and returns the order id.
func (a *api) grabOne(voucher, token string) string {
	a.t.Helper()
	r := a.do(http.MethodPost, "/api/v1/vouchers/"+voucher+"/grab", token, "")
	if r.Status != http.StatusAccepted {
		a.t.Fatalf("grab: %d %s", r.Status, r.Raw)
	}
	return r.Body["order_id"].(string)
}

// ticket issues a stream ticket for token's user.
func (a *api) ticket(token string) string {
	a.t.Helper()
	r := a.do(http.MethodPost, "/api/v1/stream-tickets", token, "")
	if r.Status != http.StatusCreated {
		a.t.Fatalf("stream ticket: %d %s", r.Status, r.Raw)
	}
	return r.Body["ticket"].(string)
}

func TestOrderEventsFollowTheOrderToItsEnd(t *testing.T) {
	t.Parallel()
	a := newAPI(t)
	voucher := a.createVoucher(10, 1)
	alice := a.token(10, false)
	order := a.grabOne(voucher, alice)

	s, _ := a.stream("/api/v1/orders/"+order+"/events", alice)
	// At once, as GET renders it: a reservation not yet persisted reads queued.
	first := s.nextOrder()
	get := a.do(http.MethodGet, "/api/v1/orders/"+order, alice, "")
	assertJSON(t, first, get.Body)
	if first["status"] != "queued" || first["expires_at"] == nil {
		t.Fatalf("first event: %v", first)
	}

	a.fulfillAll()
	awaiting := s.nextOrder()
	assertJSON(t, awaiting, a.do(http.MethodGet, "/api/v1/orders/"+order, alice, "").Body)
	if awaiting["status"] != "awaiting_payment" {
		t.Fatalf("after persistence: %v", awaiting)
	}

	if r := a.do(http.MethodPost, "/api/v1/orders/"+order+"/pay", alice, ""); r.Status != http.StatusOK {
		t.Fatalf("pay: %d %s", r.Status, r.Raw)
	}
	paid := s.nextOrder()
	assertJSON(t, paid, a.do(http.MethodGet, "/api/v1/orders/"+order, alice, "").Body)
	if paid["status"] != "paid" {
		t.Fatalf("after payment: %v", paid)
	}
	s.ends()

	// A stream opened after the end says the final status and ends.
	again, _ := a.stream("/api/v1/orders/"+order+"/events", alice)
	if got := again.nextOrder(); got["status"] != "paid" {
		t.Fatalf("reconnected: %v", got)
	}
	again.ends()
}

func TestOrderEventsEndAfterCancelAndExpiry(t *testing.T) {
	t.Parallel()
	clock := &shiftedClock{}
	a := newAPI(t, withClock(clock))
	voucher := a.createVoucher(10, 1)
	alice, bob := a.token(10, false), a.token(11, false)
	cancelled, expired := a.grabOne(voucher, alice), a.grabOne(voucher, bob)
	a.fulfillAll()

	s, _ := a.stream("/api/v1/orders/"+cancelled+"/events", alice)
	if got := s.nextOrder(); got["status"] != "awaiting_payment" {
		t.Fatalf("first event: %v", got)
	}
	if r := a.do(http.MethodPost, "/api/v1/orders/"+cancelled+"/cancel", alice, ""); r.Status != http.StatusOK {
		t.Fatalf("cancel: %d %s", r.Status, r.Raw)
	}
	if got := s.nextOrder(); got["status"] != "cancelled" || got["expires_at"] != nil {
		t.Fatalf("after cancel: %v", got)
	}
	s.ends()

	s, _ = a.stream("/api/v1/orders/"+expired+"/events", bob)
	s.nextOrder()
	clock.set(time.Duration(paymentWindow) + time.Minute)
	if n, err := a.expire.Handle(context.Background()); err != nil || n != 1 {
		t.Fatalf("expire: %d, %v", n, err)
	}
	if got := s.nextOrder(); got["status"] != "expired" {
		t.Fatalf("after expiry: %v", got)
	}
	s.ends()
}

func TestOrderEventsRefusals(t *testing.T) {
	t.Parallel()
	a := newAPI(t)
	voucher := a.createVoucher(10, 1)
	alice, bob := a.token(10, false), a.token(11, false)
	order := a.grabOne(voucher, alice)
	path := "/api/v1/orders/" + order + "/events"

	// A ticket opens one stream, as its user.
	ticket := a.ticket(alice)
	s, _ := a.stream(path+"?ticket="+ticket, "")
	if got := s.nextOrder(); got["order_id"] != order {
		t.Fatalf("by ticket: %v", got)
	}
	s.close()

	short := redisstore.NewTickets(a.redis, redisstore.Options{Prefix: a.stock.Keys().Prefix})
	lapsed := strings.Repeat("A", 43)
	if err := short.Issue(context.Background(), lapsed, 10, time.Millisecond); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte(lapsed))
	key := redisstore.Keys{Prefix: a.stock.Keys().Prefix}.Ticket(hex.EncodeToString(sum[:]))
	testenv.Eventually(t, eventDeadline, "the ticket expires", func() (bool, string) {
		n, err := a.redis.Exists(context.Background(), key).Result()
		return err == nil && n == 0, "still there"
	})
	for _, tc := range []struct {
		name, path, token string
		status            int
		code              string
	}{
		{"another's order", path, bob, 404, "not_found"},
		{"no token", path, "", 401, "unauthorized"},
		{"a ticket used twice", path + "?ticket=" + ticket, "", 401, "unauthorized"},
		{"another user's ticket", path + "?ticket=" + a.ticket(bob), "", 404, "not_found"},
		{"an unknown ticket", path + "?ticket=" + strings.Repeat("B", 43), "", 401, "unauthorized"},
		{"a malformed ticket", path + "?ticket=abc", "", 401, "unauthorized"},
		{"a ticket respelt in its padding bits", path + "?ticket=" + respell(a.ticket(alice)), "", 401, "unauthorized"},
		{"an expired ticket", path + "?ticket=" + lapsed, "", 401, "unauthorized"},
		{"an unknown order", "/api/v1/orders/01KB0000000000000000000000/events", alice, 404, "not_found"},
		{"a malformed order id", "/api/v1/orders/nope/events", alice, 400, "invalid_request"},
		{"an unknown voucher", "/api/v1/vouchers/999999999/events", "", 404, "not_found"},
		{"a ticket without a token", "/api/v1/stream-tickets", "", 401, "unauthorized"},
	} {
		var r response
		if strings.HasSuffix(tc.path, "stream-tickets") {
			r = a.do(http.MethodPost, tc.path, tc.token, "")
		} else {
			var s *eventStream
			if s, r = a.stream(tc.path, tc.token); s != nil {
				t.Fatalf("%s: a stream opened", tc.name)
			}
		}
		if r.Status != tc.status || r.code() != tc.code {
			t.Errorf("%s: %d %s, want %d %s", tc.name, r.Status, r.Raw, tc.status, tc.code)
		}
	}
}

func TestStreamTicketAnswer(t *testing.T) {
	t.Parallel()
	a := newAPI(t)
	before := time.Now()
	r := a.do(http.MethodPost, "/api/v1/stream-tickets", a.token(10, false), "")
	if r.Status != http.StatusCreated || len(r.Body["ticket"].(string)) != 43 {
		t.Fatalf("ticket: %d %s", r.Status, r.Raw)
	}
	expires, err := time.Parse(time.RFC3339Nano, r.Body["expires_at"].(string))
	if err != nil || expires.Before(before.Add(application.StreamTicketTTL-time.Second)) || expires.After(time.Now().Add(application.StreamTicketTTL)) {
		t.Fatalf("expires_at %v: %v", r.Body["expires_at"], err)
	}
}

// At the limit a stream is answered 200 with only a retry: of one to two Retry
// (jittered), closed at once, so a client reconnects later (a browser's EventSource
// takes a 503 as final and never reconnects); it is counted refused, and spends no
// ticket: once a stream ends, the same ticket opens one.
func TestStreamLimit(t *testing.T) {
	t.Parallel()
	const retry = time.Second
	a := newAPI(t, func(s *setup) { s.streams.Max, s.streams.Retry = 1, retry })
	voucher := a.createVoucher(10, 1)
	path := "/api/v1/vouchers/" + voucher + "/events"
	s, _ := a.stream(path, "")
	s.next()
	delays := map[time.Duration]bool{}
	for range 10 {
		d := a.refused(path, "")
		if d < retry || d >= 2*retry {
			t.Fatalf("refused with retry %v, want [%v, %v)", d, retry, 2*retry)
		}
		delays[d] = true
	}
	if len(delays) < 2 {
		t.Fatalf("ten refusals, one delay: %v (not jittered)", delays)
	}
	alice := a.token(10, false)
	order := a.grabOne(voucher, alice)
	a.refused("/api/v1/orders/"+order+"/events", alice)
	ticket := a.ticket(alice)
	a.refused("/api/v1/orders/"+order+"/events?ticket="+ticket, "")
	if got := a.scrape()["seckill_streams_refused_total"]; got != 12 {
		t.Fatalf("seckill_streams_refused_total %v, want 12", got)
	}
	s.close()
	testenv.Eventually(t, eventDeadline, "the refused ticket opens a stream once the first closed", func() (bool, string) {
		req, err := http.NewRequest(http.MethodGet, a.url+"/api/v1/orders/"+order+"/events?ticket="+ticket, nil)
		if err != nil {
			t.Fatal(err)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		if res.StatusCode != http.StatusOK {
			t.Fatalf("the ticket after the limit: %d", res.StatusCode)
		}
		// A refusal holds its retry: only; a stream sends the order next.
		var seen []string
		for br := bufio.NewReader(res.Body); ; {
			line, err := br.ReadString('\n')
			seen = append(seen, line)
			if strings.HasPrefix(line, "event: order") {
				return true, ""
			}
			if err != nil {
				return false, fmt.Sprintf("%q", seen)
			}
		}
	})
}

// Every stream starts with a retry: of half to one and a half Retry, and each event
// carries an id: an order's is its status; a voucher's names the state it sends.
func TestStreamsSayWhenToReconnect(t *testing.T) {
	t.Parallel()
	const retry = 2 * time.Second
	a := newAPI(t, func(s *setup) { s.streams.Retry = retry })
	voucher := a.createVoucher(10, 1)
	alice := a.token(10, false)
	order := a.grabOne(voucher, alice)
	for _, tc := range []struct{ path, token, kind string }{
		{"/api/v1/vouchers/" + voucher + "/events", "", "voucher"},
		{"/api/v1/orders/" + order + "/events", alice, "order"},
	} {
		s, _ := a.stream(tc.path, tc.token)
		if d := s.retry(); d < retry/2 || d >= retry*3/2 {
			t.Fatalf("%s: retry %v, want [%v, %v)", tc.path, d, retry/2, retry*3/2)
		}
		ev := s.next()
		body := s.decode(ev, tc.kind)
		if tc.kind == "order" && ev.id != body["status"] {
			t.Fatalf("order event id %q, status %v", ev.id, body["status"])
		}
		// The same state has the same id on another connection.
		again, _ := a.stream(tc.path, tc.token)
		if ev2 := again.next(); ev2.id != ev.id || ev2.data != ev.data {
			t.Fatalf("%s: %q then %q for %s and %s", tc.path, ev.id, ev2.id, ev.data, ev2.data)
		}
		s.close()
		again.close()
	}
}

// A reconnect to a finished order's stream whose Last-Event-ID names its final event
// is answered 204, which ends a client's reconnects; any other reconnect gets the
// stream, from the order's current status.
func TestFinishedOrderStreamAnswers204(t *testing.T) {
	t.Parallel()
	a := newAPI(t)
	voucher := a.createVoucher(10, 1)
	alice, bob := a.token(10, false), a.token(11, false)
	order, open := a.grabOne(voucher, alice), a.grabOne(voucher, bob)
	a.fulfillAll()
	if r := a.do(http.MethodPost, "/api/v1/orders/"+order+"/pay", alice, ""); r.Status != http.StatusOK {
		t.Fatalf("pay: %d %s", r.Status, r.Raw)
	}
	path := "/api/v1/orders/" + order + "/events"
	if s, r := a.resume(path, alice, "paid"); s != nil || r.Status != http.StatusNoContent {
		t.Fatalf("reconnect after the final event: %d %s", r.Status, r.Raw)
	}
	ticket := a.ticket(alice)
	if s, r := a.resume(path+"?ticket="+ticket, "", "paid"); s != nil || r.Status != http.StatusNoContent {
		t.Fatalf("reconnect by ticket after the final event: %d %s", r.Status, r.Raw)
	}
	for _, last := range []string{"awaiting_payment", "nonsense"} {
		s, _ := a.resume(path, alice, last)
		if ev := s.next(); ev.id != "paid" {
			t.Fatalf("reconnect after %q: %+v", last, ev)
		}
		s.ends()
	}
	// An order not final is followed whatever the client names.
	s, _ := a.resume("/api/v1/orders/"+open+"/events", bob, "paid")
	if ev := s.next(); ev.id != "awaiting_payment" {
		t.Fatalf("an open order: %+v", ev)
	}
	// Another's order is still not found.
	if _, r := a.resume(path, bob, "paid"); r.Status != http.StatusNotFound {
		t.Fatalf("another's finished order: %d %s", r.Status, r.Raw)
	}
}

func TestStreamPings(t *testing.T) {
	t.Parallel()
	a := newAPI(t, func(s *setup) { s.streams.Ping = 20 * time.Millisecond })
	s, _ := a.stream("/api/v1/vouchers/"+a.createVoucher(10, 1)+"/events", "")
	s.next()
	for range 2 {
		select {
		case ev := <-s.events:
			if ev.comment != "ping" || ev.kind != "" {
				t.Fatalf("not a ping: %+v", ev)
			}
		case <-time.After(eventDeadline):
			t.Fatal("no ping")
		}
	}
}

func TestVoucherEvents(t *testing.T) {
	t.Parallel()
	a := newAPI(t)
	voucher := a.createVoucher(3, 1)
	s, _ := a.stream("/api/v1/vouchers/"+voucher+"/events", "")
	first := s.decode(s.next(), "voucher")
	assertJSON(t, first, a.do(http.MethodGet, "/api/v1/vouchers/"+voucher, "", "").Body)
	if first["remaining"] != 3.0 || first["state"] != "live" {
		t.Fatalf("first event: %v", first)
	}
	// Grabs announce nothing: the stream's reader sees the units fall.
	a.grabOne(voucher, a.token(10, false))
	if got := s.decode(s.next(), "voucher"); got["remaining"] != 2.0 {
		t.Fatalf("after a grab: %v", got)
	}
	if r := a.do(http.MethodPost, "/api/v1/vouchers/"+voucher+"/pause", a.admin, ""); r.Status != http.StatusOK {
		t.Fatalf("pause: %d %s", r.Status, r.Raw)
	}
	if got := s.decode(s.next(), "voucher"); got["state"] != "paused" || got["paused"] != true {
		t.Fatalf("after pause: %v", got)
	}
	if r := a.do(http.MethodPatch, "/api/v1/vouchers/"+voucher, a.admin, `{"title":"Tea"}`); r.Status != http.StatusOK {
		t.Fatalf("edit: %d %s", r.Status, r.Raw)
	}
	if got := s.decode(s.next(), "voucher"); got["title"] != "Tea" {
		t.Fatalf("after an edit: %v", got)
	}
	if r := a.do(http.MethodPost, "/api/v1/vouchers/"+voucher+"/resume", a.admin, ""); r.Status != http.StatusOK {
		t.Fatalf("resume: %d %s", r.Status, r.Raw)
	}
	// Two grabs at once: the last state is always sent.
	a.grabOne(voucher, a.token(11, false))
	a.grabOne(voucher, a.token(12, false))
	for {
		got := s.decode(s.next(), "voucher")
		if got["remaining"] == 0.0 && got["state"] == "sold_out" {
			break
		}
	}
}

func TestStreamsCloseEndsThem(t *testing.T) {
	t.Parallel()
	streams := new(*httpapi.Streams)
	a := newAPI(t, func(s *setup) { s.onStreams = func(st *httpapi.Streams) { *streams = st } })
	s, _ := a.stream("/api/v1/vouchers/"+a.createVoucher(10, 1)+"/events", "")
	s.next()
	(*streams).Close()
	s.ends()
	// A stream after Close is refused as at the limit: its client reconnects later.
	a.refused("/api/v1/vouchers/1/events", "")
}

// A stream outlives the server's read timeout (serve sets one, for request bodies):
// neither the connection nor the request's context ends when it passes.
func TestStreamOutlivesTheReadTimeout(t *testing.T) {
	t.Parallel()
	a := newAPI(t, func(s *setup) { s.streams.Ping = 20 * time.Millisecond })
	srv := httptest.NewUnstartedServer(a.e)
	srv.Config.ReadTimeout = 100 * time.Millisecond
	srv.Start()
	t.Cleanup(srv.Close)
	voucher := a.createVoucher(10, 1)
	a.url = srv.URL
	s, _ := a.stream("/api/v1/vouchers/"+voucher+"/events", "")
	s.next()
	// 20 pings take 400 ms at least, four read timeouts.
	for i := range 20 {
		select {
		case _, ok := <-s.events:
			if !ok {
				t.Fatalf("the stream ended after %d pings", i)
			}
		case <-time.After(eventDeadline):
			t.Fatal("no ping")
		}
	}
}
