package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/seckill/seckill/adapters/testenv"
	"github.com/seckill/seckill/domain"
)

// e2eWebhookSecret signs the webhooks of these tests: whsec_ and the base64 of 32 bytes.
const e2eWebhookSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSwMfKQ9r8GKYo="

// hookReceiver is a webhook endpoint that verifies each request as the README shows
// and keeps the verified events' types by webhook-id.
type hookReceiver struct {
	mu     sync.Mutex
	events map[string]string // webhook-id → "type order_id status"
	bad    []string
}

func (h *hookReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	wh, err := standardwebhooks.NewWebhook(e2eWebhookSecret)
	if err == nil {
		err = wh.Verify(body, r.Header)
	}
	var event struct {
		Type string         `json:"type"`
		Data map[string]any `json:"data"`
	}
	if err == nil {
		err = json.Unmarshal(body, &event)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if err != nil {
		h.bad = append(h.bad, err.Error())
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	h.events[r.Header.Get("webhook-id")] = fmt.Sprintf("%s %v %v", event.Type, event.Data["order_id"], event.Data["status"])
	w.WriteHeader(http.StatusNoContent)
}

// got returns the events received, sorted.
func (h *hookReceiver) got() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]string, 0, len(h.events))
	for _, e := range h.events {
		out = append(out, e)
	}
	slices.Sort(out)
	return out
}

// TestWebhooksSurviveKillNine grabs an order and pays for it while the receiver is
// down: both events are committed with their changes and their first attempts fail.
// Serve is then killed with SIGKILL, the receiver comes back, serve restarts, and both
// events arrive, signed, each once.
func TestWebhooksSurviveKillNine(t *testing.T) {
	rc := &hookReceiver{events: make(map[string]string)}
	srv := httptest.NewServer(rc)
	t.Cleanup(srv.Close)
	link := testenv.NewLink(t, strings.TrimPrefix(srv.URL, "http://"))
	link.Down()
	fi := startFulfillInstance(t, "SECKILL_WEBHOOK_URL=http://"+link.Addr()+"/hooks", "SECKILL_WEBHOOK_SECRET="+e2eWebhookSecret)

	id := fi.createVoucher(5, 1)
	user := fi.token(7, false)
	status, g := fi.call(http.MethodPost, "/api/v1/vouchers/"+id+"/grab", user, map[string]any{"quantity": 1})
	if status != http.StatusAccepted {
		t.Fatalf("grab: %d %v", status, g)
	}
	order := g["order_id"].(string)
	testenv.Eventually(t, 2*testenv.Patience, "order persisted", func() (bool, string) {
		_, o := fi.call(http.MethodGet, "/api/v1/orders/"+order, user, nil)
		return o["status"] == "awaiting_payment", fmt.Sprint(o)
	})
	if status, body := fi.call(http.MethodPost, "/api/v1/orders/"+order+"/pay", user, nil); status != http.StatusOK {
		t.Fatalf("pay: %d %v", status, body)
	}
	testenv.Eventually(t, 2*testenv.Patience, "both events tried and failed", func() (bool, string) {
		_, page := fi.call(http.MethodGet, "/api/v1/webhooks/deliveries?status=failed", fi.token(1, true), nil)
		ds, _ := page["deliveries"].([]any)
		return len(ds) == 2, fmt.Sprint(page)
	})

	fi.kill()
	link.Up()
	fi.start()
	want := []string{"order.awaiting_payment " + order + " awaiting_payment", "order.paid " + order + " paid"}
	testenv.Eventually(t, 4*testenv.Patience, "both events delivered", func() (bool, string) {
		got := rc.got()
		return fmt.Sprint(got) == fmt.Sprint(want), fmt.Sprint(got)
	})
	testenv.Eventually(t, 2*testenv.Patience, "deliveries recorded delivered", func() (bool, string) {
		_, page := fi.call(http.MethodGet, "/api/v1/webhooks/deliveries?status=delivered", fi.token(1, true), nil)
		ds, _ := page["deliveries"].([]any)
		return len(ds) == 2, fmt.Sprint(page)
	})
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if len(rc.bad) > 0 {
		t.Fatalf("requests the receiver refused: %v", rc.bad)
	}
}

// TestWebhooksHungReceiverLeavesTheSaleAlone points serve at an endpoint that accepts
// every request and never answers: a sale goes on as ever (every grab answered 202,
// every reservation persisted) while the attempts wait out their timeout, fail, and
// are kept to be tried again.
func TestWebhooksHungReceiverLeavesTheSaleAlone(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) })
	fi := startFulfillInstance(t, "SECKILL_WEBHOOK_URL="+srv.URL, "SECKILL_WEBHOOK_SECRET="+e2eWebhookSecret)

	const users = 40
	id := fi.createVoucher(users, 1)
	for u := 1; u <= users; u++ {
		if status, body := fi.call(http.MethodPost, "/api/v1/vouchers/"+id+"/grab", fi.token(domain.UserID(u), false), map[string]any{"quantity": 1}); status != http.StatusAccepted {
			t.Fatalf("grab of user %d: %d %v", u, status, body)
		}
	}
	admin := fi.token(1, true)
	testenv.Eventually(t, 2*testenv.Patience, "every reservation persisted", func() (bool, string) {
		_, stats := fi.call(http.MethodGet, "/api/v1/vouchers/"+id+"/stats", admin, nil)
		return stats["awaiting_payment"] == float64(users), fmt.Sprint(stats)
	})
	// 40 orders and the sold-out: the first 8 attempts time out after 15 s and fail.
	testenv.Eventually(t, 4*testenv.Patience, "attempts timed out", func() (bool, string) {
		_, page := fi.call(http.MethodGet, "/api/v1/webhooks/deliveries?status=failed", admin, nil)
		ds, _ := page["deliveries"].([]any)
		for _, d := range ds {
			if e, _ := d.(map[string]any)["last_error"].(string); strings.Contains(e, "no answer within 15s") {
				return true, ""
			}
		}
		return false, fmt.Sprint(page)
	})
	_, page := fi.call(http.MethodGet, "/api/v1/webhooks/deliveries?status=delivered", admin, nil)
	if ds, _ := page["deliveries"].([]any); len(ds) != 0 {
		t.Fatalf("deliveries delivered to an endpoint that never answers: %v", page)
	}
}

// TestWebhooksInTheZeroSetupMode: serve with nothing installed (the in-process Redis,
// a SQLite file) delivers an order's events, signed, each once.
func TestWebhooksInTheZeroSetupMode(t *testing.T) {
	rc := &hookReceiver{events: make(map[string]string)}
	srv := httptest.NewServer(rc)
	t.Cleanup(srv.Close)
	fi := startZeroSetup(t, "SECKILL_WEBHOOK_URL="+srv.URL+"/hooks", "SECKILL_WEBHOOK_SECRET="+e2eWebhookSecret)

	id := fi.createVoucher(5, 1)
	user := fi.token(7, false)
	status, g := fi.call(http.MethodPost, "/api/v1/vouchers/"+id+"/grab", user, nil)
	if status != http.StatusAccepted {
		t.Fatalf("grab: %d %v", status, g)
	}
	order := g["order_id"].(string)
	testenv.Eventually(t, 2*testenv.Patience, "order persisted", func() (bool, string) {
		_, o := fi.call(http.MethodGet, "/api/v1/orders/"+order, user, nil)
		return o["status"] == "awaiting_payment", fmt.Sprint(o)
	})
	if status, body := fi.call(http.MethodPost, "/api/v1/orders/"+order+"/pay", user, nil); status != http.StatusOK {
		t.Fatalf("pay: %d %v", status, body)
	}
	want := []string{"order.awaiting_payment " + order + " awaiting_payment", "order.paid " + order + " paid"}
	testenv.Eventually(t, 2*testenv.Patience, "both events delivered", func() (bool, string) {
		got := rc.got()
		return fmt.Sprint(got) == fmt.Sprint(want), fmt.Sprint(got)
	})
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if len(rc.bad) > 0 {
		t.Fatalf("requests the receiver refused: %v", rc.bad)
	}
}

// TestWebhooksGoneStopsUntilRetried points serve at a receiver that answers 410 Gone:
// the first answer disables the endpoint, so the next event is not sent, not even
// after a restart; both show disabled. Once the receiver is back, an admin's retry of
// one delivery (202) re-enables the endpoint and sends it; the other waits for its own
// retry.
func TestWebhooksGoneStopsUntilRetried(t *testing.T) {
	rc := &hookReceiver{events: make(map[string]string)}
	var gone atomic.Bool
	var goneAnswers atomic.Int32
	gone.Store(true)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if gone.Load() {
			goneAnswers.Add(1)
			w.WriteHeader(http.StatusGone)
			return
		}
		rc.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	fi := startFulfillInstance(t, "SECKILL_WEBHOOK_URL="+srv.URL+"/hooks", "SECKILL_WEBHOOK_SECRET="+e2eWebhookSecret)
	admin := fi.token(1, true)
	disabled := func(n int) []any {
		t.Helper()
		var ds []any
		testenv.Eventually(t, 2*testenv.Patience, fmt.Sprintf("%d deliveries disabled", n), func() (bool, string) {
			_, page := fi.call(http.MethodGet, "/api/v1/webhooks/deliveries?status=disabled", admin, nil)
			ds, _ = page["deliveries"].([]any)
			return len(ds) == n, fmt.Sprint(page)
		})
		return ds
	}

	id := fi.createVoucher(5, 1)
	user := fi.token(7, false)
	status, g := fi.call(http.MethodPost, "/api/v1/vouchers/"+id+"/grab", user, map[string]any{"quantity": 1})
	if status != http.StatusAccepted {
		t.Fatalf("grab: %d %v", status, g)
	}
	order := g["order_id"].(string)
	first := disabled(1)[0].(map[string]any)["id"].(string)

	fi.kill()
	fi.start()
	if status, body := fi.call(http.MethodPost, "/api/v1/orders/"+order+"/pay", user, nil); status != http.StatusOK {
		t.Fatalf("pay: %d %v", status, body)
	}
	disabled(2)
	if n := goneAnswers.Load(); n != 1 {
		t.Fatalf("the receiver answered 410 %d times, want once: nothing is sent to a disabled endpoint", n)
	}

	gone.Store(false)
	if status, body := fi.call(http.MethodPost, "/api/v1/webhooks/deliveries/"+first+"/retry", admin, nil); status != http.StatusAccepted || body["status"] != "pending" {
		t.Fatalf("retry: %d %v, want 202 pending", status, body)
	}
	want := []string{"order.awaiting_payment " + order + " awaiting_payment"}
	testenv.Eventually(t, 2*testenv.Patience, "the retried event delivered", func() (bool, string) {
		got := rc.got()
		return fmt.Sprint(got) == fmt.Sprint(want), fmt.Sprint(got)
	})
	disabled(1)
}
