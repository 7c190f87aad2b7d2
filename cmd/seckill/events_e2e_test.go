package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/adapters/testenv"
	"github.com/seckill/seckill/domain"
)

// sseStream is an event stream opened on an instance, its events decoded as they
// arrive; events is closed when the stream ends.
type sseStream struct {
	t      testing.TB
	events chan map[string]any
}

// openStream opens path on in (with ticket as ?ticket= when set) and reads its events
// of kind until the stream ends or the test does.
func (in *instance) openStream(path, ticket, kind string) *sseStream {
	in.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	if ticket != "" {
		path += "?ticket=" + ticket
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, in.base+path, nil)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		in.t.Fatalf("GET %s: %v", path, err)
	}
	if res.StatusCode != http.StatusOK || res.Header.Get("Content-Type") != "text/event-stream" {
		cancel()
		in.t.Fatalf("GET %s: %d %s", path, res.StatusCode, res.Header.Get("Content-Type"))
	}
	s := &sseStream{t: in.t, events: make(chan map[string]any, 100)}
	in.t.Cleanup(func() { cancel(); _ = res.Body.Close() })
	go func() {
		defer close(s.events)
		sc := bufio.NewScanner(res.Body)
		event := ""
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "event: "):
				event = line[len("event: "):]
			case strings.HasPrefix(line, "data: ") && event == kind:
				var body map[string]any
				if json.Unmarshal([]byte(line[len("data: "):]), &body) == nil {
					s.events <- body
				}
			}
		}
	}()
	return s
}

// until returns the first event for which ok holds, skipping others, failing the
// test when none comes within timeout or the stream ends first.
func (s *sseStream) until(timeout time.Duration, what string, ok func(map[string]any) bool) map[string]any {
	s.t.Helper()
	deadline := time.After(timeout)
	for {
		select {
		case ev, open := <-s.events:
			if !open {
				s.t.Fatalf("the stream ended before %s", what)
			}
			if ok(ev) {
				return ev
			}
		case <-deadline:
			s.t.Fatalf("no event within %v: %s", timeout, what)
		}
	}
}

// ticket issues a stream ticket on in for token's user.
func (in *instance) ticket(token string) string {
	in.t.Helper()
	status, body := in.call(http.MethodPost, "/api/v1/stream-tickets", token, nil)
	if status != http.StatusCreated {
		in.t.Fatalf("stream ticket: %d %v", status, body)
	}
	return body["ticket"].(string)
}

// waitChangeSubscribers waits until n connections subscribe to the changes channel
// of voucher: sharded Pub/Sub on a Redis Cluster, classic on one server.
func (fi *fulfillInstance) waitChangeSubscribers(voucher string, n int64) {
	fi.t.Helper()
	ctx := context.Background()
	channel := fi.keys.Changes(fi.voucherID(voucher))
	testenv.Eventually(fi.t, testenv.Patience, "the instances subscribed to the voucher's changes", func() (bool, string) {
		var got map[string]int64
		var err error
		if cc, ok := fi.redis.(*redis.ClusterClient); ok {
			var node *redis.Client
			if node, err = cc.MasterForKey(ctx, channel); err == nil {
				got, err = node.PubSubShardNumSub(ctx, channel).Result()
			}
		} else {
			got, err = fi.redis.PubSubNumSub(ctx, channel).Result()
		}
		return err == nil && got[channel] >= n, fmt.Sprintf("%v, %v", got, err)
	})
}

// fanOutWithin bounds the time from a change's answer to its event on another
// instance's stream: under the streams' resync (5 s), so only the announcement can
// explain an event this soon; the contract's aim is within a second.
const fanOutWithin = 3 * time.Second

// TestEventsReachStreamsOnEveryInstance runs two `serve` processes on one Redis (the
// cluster, in scripts/test.sh's cluster pass) and one PostgreSQL. A user follows an
// order through instance A, with a ticket issued by instance B, while the order is
// persisted and paid through B; a voucher stream on A sees the units fall as grabs
// go through B. Each instance holds one subscription to the voucher's changes.
func TestEventsReachStreamsOnEveryInstance(t *testing.T) {
	a := startFulfillInstance(t)
	b := a.another()
	voucher := a.createVoucher(5, 1)
	alice := a.token(10, false)
	status, grabbed := b.call(http.MethodPost, "/api/v1/vouchers/"+voucher+"/grab", alice, nil)
	if status != http.StatusAccepted {
		t.Fatalf("grab: %d %v", status, grabbed)
	}
	order := grabbed["order_id"].(string)

	orders := a.openStream("/api/v1/orders/"+order+"/events", b.ticket(alice), "order")
	first := orders.until(testenv.Patience, "the first event", func(map[string]any) bool { return true })
	if first["order_id"] != order || (first["status"] != "queued" && first["status"] != "awaiting_payment") {
		t.Fatalf("first event: %v", first)
	}
	orders.until(testenv.Patience, "awaiting_payment", func(ev map[string]any) bool { return ev["status"] == "awaiting_payment" })

	sale := a.openStream("/api/v1/vouchers/"+voucher+"/events", "", "voucher")
	if got := sale.until(testenv.Patience, "the voucher", func(map[string]any) bool { return true }); got["remaining"] != 4.0 {
		t.Fatalf("the voucher's first event: %v", got)
	}
	// Both streams on A share A's one subscription; B holds none.
	a.waitChangeSubscribers(voucher, 1)

	if status, body := b.call(http.MethodPost, "/api/v1/orders/"+order+"/pay", alice, nil); status != http.StatusOK {
		t.Fatalf("pay through B: %d %v", status, body)
	}
	paidAt := time.Now()
	orders.until(fanOutWithin, "paid", func(ev map[string]any) bool { return ev["status"] == "paid" })
	t.Logf("a payment through B reached the stream on A in %v", time.Since(paidAt))
	select {
	case ev, open := <-orders.events:
		if open {
			t.Fatalf("an event after paid: %v", ev)
		}
	case <-time.After(testenv.Patience):
		t.Fatal("the order's stream did not end after paid")
	}

	for i := range 2 {
		if status, body := b.call(http.MethodPost, "/api/v1/vouchers/"+voucher+"/grab", b.token(domain.UserID(20+i), false), nil); status != http.StatusAccepted {
			t.Fatalf("grab %d through B: %d %v", i, status, body)
		}
	}
	grabbedAt := time.Now()
	sale.until(fanOutWithin, "remaining 2", func(ev map[string]any) bool { return ev["remaining"] == 2.0 })
	t.Logf("grabs through B reached the voucher stream on A in %v", time.Since(grabbedAt))

	admin := a.token(1, true)
	if status, body := b.call(http.MethodPost, "/api/v1/vouchers/"+voucher+"/pause", admin, nil); status != http.StatusOK {
		t.Fatalf("pause through B: %d %v", status, body)
	}
	sale.until(fanOutWithin, "paused", func(ev map[string]any) bool { return ev["state"] == "paused" })

	// SIGTERM ends the instance's streams, so its drain need not wait for them:
	// serve exits cleanly (stop fails the test otherwise) and the stream ends.
	held := b.openStream("/api/v1/vouchers/"+voucher+"/events", "", "voucher")
	held.until(testenv.Patience, "the voucher", func(map[string]any) bool { return true })
	b.stop()
	select {
	case ev, open := <-held.events:
		if open {
			t.Fatalf("an event while shutting down: %v", ev)
		}
	case <-time.After(testenv.Patience):
		t.Fatal("the stream outlived its instance's shutdown")
	}
}

// TestEventsWithTheInProcessRedis follows an order by its stream on serve with nothing
// configured: the in-process Redis has classic Pub/Sub, which the announcements use on
// one server.
func TestEventsWithTheInProcessRedis(t *testing.T) {
	fi := startZeroSetup(t)
	voucher := fi.createVoucher(5, 1)
	alice := fi.token(10, false)
	status, grabbed := fi.call(http.MethodPost, "/api/v1/vouchers/"+voucher+"/grab", alice, nil)
	if status != http.StatusAccepted {
		t.Fatalf("grab: %d %v", status, grabbed)
	}
	order := grabbed["order_id"].(string)
	orders := fi.openStream("/api/v1/orders/"+order+"/events", fi.ticket(alice), "order")
	orders.until(testenv.Patience, "awaiting_payment", func(ev map[string]any) bool { return ev["status"] == "awaiting_payment" })
	if status, body := fi.call(http.MethodPost, "/api/v1/orders/"+order+"/pay", alice, nil); status != http.StatusOK {
		t.Fatalf("pay: %d %v", status, body)
	}
	orders.until(fanOutWithin, "paid", func(ev map[string]any) bool { return ev["status"] == "paid" })
}
