package application_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/seckill/seckill/adapters/memory"
	"github.com/seckill/seckill/application"
	"github.com/seckill/seckill/domain"
	"github.com/seckill/seckill/ports"
)

// oneShotOutbox hands out its deliveries at the first Claim and reports each Record.
type oneShotOutbox struct {
	mu       sync.Mutex
	due      []ports.ClaimedDelivery
	claimed  string // the endpoint of the last Claim
	recorded chan ports.WebhookAttempt
}

func (o *oneShotOutbox) Claim(_ context.Context, endpoint string, _ time.Time, limit int, _ time.Duration) ([]ports.ClaimedDelivery, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.claimed = endpoint
	n := min(limit, len(o.due))
	out := o.due[:n]
	o.due = o.due[n:]
	return out, nil
}

// endpoint returns the endpoint the last Claim was for.
func (o *oneShotOutbox) endpoint() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.claimed
}

func (o *oneShotOutbox) Record(_ context.Context, _ ports.ClaimedDelivery, a ports.WebhookAttempt) (bool, error) {
	o.recorded <- a
	return true, nil
}

// failingSender answers every attempt 503.
type failingSender struct{}

func (failingSender) Send(context.Context, string, time.Time, []byte) (int, error) {
	return 503, errors.New("endpoint answered 503")
}

// TestDeliverWebhooksBacksOffThenGivesUp checks the wait after each failed attempt:
// 1 s after the first, doubling, up to a fifth more, capped at an hour; and that an
// attempt failing 3 days after its event gives it up (one failing a day after is
// retried: a receiver down over a weekend still gets it).
func TestDeliverWebhooksBacksOffThenGivesUp(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	cases := []struct {
		attempts int // made before this one
		age      time.Duration
		min, max time.Duration // the wait, when not given up
		giveUp   bool
	}{
		{attempts: 0, min: time.Second, max: 1200 * time.Millisecond},
		{attempts: 1, min: 2 * time.Second, max: 2400 * time.Millisecond},
		{attempts: 4, min: 16 * time.Second, max: 19200 * time.Millisecond},
		{attempts: 15, age: 23 * time.Hour, min: time.Hour, max: time.Hour},
		{attempts: 30, age: 24 * time.Hour, min: time.Hour, max: time.Hour},
		{attempts: 80, age: 72 * time.Hour, giveUp: true},
	}
	outbox := &oneShotOutbox{recorded: make(chan ports.WebhookAttempt, len(cases))}
	for i, c := range cases {
		outbox.due = append(outbox.due, ports.ClaimedDelivery{
			Delivery:  domain.Delivery{Event: domain.Event{ID: string(rune('a' + i)), Type: domain.EventOrderPaid}, Attempts: c.attempts},
			CreatedAt: now.Add(-c.age),
		})
	}
	render := func(domain.Event) ([]byte, error) { return []byte(`{}`), nil }
	uc := application.NewDeliverWebhooks(outbox, failingSender{}, render, memory.NewClock(now), application.WebhookOptions{Concurrency: 1}, application.WebhookObserver{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- uc.Run(ctx) }()
	for i, c := range cases {
		a := <-outbox.recorded
		if a.Status != 503 || a.Err == "" || !a.At.Equal(now) {
			t.Fatalf("attempt %d recorded %+v", i, a)
		}
		if c.giveUp {
			if !a.GiveUp || !a.Next.IsZero() {
				t.Fatalf("attempt %d (event %s old) = %+v, want given up", i, c.age, a)
			}
			continue
		}
		if wait := a.Next.Sub(a.At); a.GiveUp || wait < c.min || wait > c.max {
			t.Fatalf("attempt %d after %d failed: wait %s (given up %v), want %s to %s", i, c.attempts, wait, a.GiveUp, c.min, c.max)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// busySender answers 429 with a Retry-After of wait.
type busySender struct{ wait time.Duration }

func (s busySender) Send(context.Context, string, time.Time, []byte) (int, error) {
	return 429, fmt.Errorf("post: %w", &ports.ReceiverBusyError{Status: 429, RetryAfter: s.wait})
}

// TestDeliverWebhooksHonoursRetryAfter: a receiver that asks for a wait (429 or 503
// with Retry-After) is tried again after it, not after the backoff, up to MaxBackoff.
func TestDeliverWebhooksHonoursRetryAfter(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	for _, c := range []struct{ asked, want time.Duration }{
		{30 * time.Second, 30 * time.Second},
		{2 * time.Hour, time.Hour},
	} {
		outbox := &oneShotOutbox{recorded: make(chan ports.WebhookAttempt, 1), due: []ports.ClaimedDelivery{{
			Delivery:  domain.Delivery{Event: domain.Event{ID: "a", Type: domain.EventOrderPaid}},
			CreatedAt: now,
		}}}
		render := func(domain.Event) ([]byte, error) { return []byte(`{}`), nil }
		uc := application.NewDeliverWebhooks(outbox, busySender{wait: c.asked}, render, memory.NewClock(now),
			application.WebhookOptions{Concurrency: 1}, application.WebhookObserver{})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- uc.Run(ctx) }()
		a := <-outbox.recorded
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if wait := a.Next.Sub(a.At); a.GiveUp || wait != c.want {
			t.Fatalf("Retry-After %s: next attempt after %s (given up %v), want %s", c.asked, wait, a.GiveUp, c.want)
		}
	}
}

// goneSender answers every attempt 410 Gone.
type goneSender struct{}

func (goneSender) Send(context.Context, string, time.Time, []byte) (int, error) {
	return 410, errors.New("endpoint answered 410")
}

// TestDeliverWebhooksGoneDisables checks that a 410 is recorded as disabling the
// endpoint, not as a failure to retry nor a give-up, under the dispatcher's endpoint,
// and is observed as the outcome disabled.
func TestDeliverWebhooksGoneDisables(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	outbox := &oneShotOutbox{recorded: make(chan ports.WebhookAttempt, 1), due: []ports.ClaimedDelivery{{
		Delivery: domain.Delivery{Event: domain.Event{ID: "a", Type: domain.EventOrderPaid}}, CreatedAt: now,
	}}}
	outcomes := make(chan application.WebhookOutcome, 1)
	render := func(domain.Event) ([]byte, error) { return []byte(`{}`), nil }
	uc := application.NewDeliverWebhooks(outbox, goneSender{}, render, memory.NewClock(now),
		application.WebhookOptions{Concurrency: 1, Endpoint: "https://shop.example/hooks"},
		application.WebhookObserver{Attempt: func(o application.WebhookOutcome) { outcomes <- o }})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- uc.Run(ctx) }()
	a := <-outbox.recorded
	if !a.Disable || a.GiveUp || !a.Next.IsZero() || a.Status != 410 {
		t.Fatalf("a 410 recorded as %+v, want Disable, no next attempt", a)
	}
	if o := <-outcomes; o != application.WebhookDisabled {
		t.Fatalf("outcome %s, want disabled", o)
	}
	if got := outbox.endpoint(); got != "https://shop.example/hooks" {
		t.Fatalf("claimed for endpoint %q, want the dispatcher's", got)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
