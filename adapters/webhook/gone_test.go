package webhook_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seckill/seckill/adapters/testenv"
	"github.com/seckill/seckill/domain"
	"github.com/seckill/seckill/ports"
)

// statuses waits until every delivery of ids is in status want, and returns them by id.
func (f *fixture) statuses(t *testing.T, want domain.DeliveryStatus, ids ...domain.OrderID) map[domain.OrderID]domain.Delivery {
	t.Helper()
	byOrder := map[domain.OrderID]domain.Delivery{}
	testenv.Eventually(t, 4*testenv.Patience, fmt.Sprintf("deliveries %s", want), func() (bool, string) {
		ds, err := f.hooks.List(context.Background(), ports.DeliveryQuery{Limit: 1000})
		if err != nil {
			return false, err.Error()
		}
		clear(byOrder)
		for _, d := range ds {
			byOrder[d.Order.ID] = d
		}
		for _, id := range ids {
			if byOrder[id].Status != want {
				return false, fmt.Sprintf("order %s's delivery is %q", id, byOrder[id].Status)
			}
		}
		return true, ""
	})
	return byOrder
}

// TestGoneDisablesTheEndpointUntilRetried checks Standard Webhooks' 410: the first
// 410 disables the endpoint, so neither this dispatcher nor one started afterwards (a
// restart, another instance) sends it anything more, events written later included,
// and the deliveries show disabled; an admin's retry of one enables it again and sends
// that one, the others staying disabled, and a new URL is a new endpoint.
func TestGoneDisablesTheEndpointUntilRetried(t *testing.T) {
	f := newFixture(t)
	var answer atomic.Int32
	answer.Store(http.StatusGone)
	rc := &receiver{answer: func(int, *http.Request) int { return int(answer.Load()) }}
	srv := httptest.NewServer(rc)
	t.Cleanup(srv.Close)
	opts := fast
	opts.Endpoint = srv.URL

	first := f.persist(t, 1)
	f.start(t, srv.URL, opts)
	gone := f.statuses(t, domain.DeliveryDisabled, first...)[first[0]]
	if gone.LastStatus != http.StatusGone || !gone.NextAttemptAt.IsZero() || gone.GivenUp || gone.Attempts != 1 {
		t.Fatalf("the delivery answered 410 is %+v, want disabled after 1 attempt with last_status 410, no next attempt", gone)
	}

	// A second dispatcher (another instance, or this one restarted) and events written
	// afterwards: nothing is sent; the events are disabled untried.
	f.start(t, srv.URL, opts)
	later := f.persist(t, 2)
	ds := f.statuses(t, domain.DeliveryDisabled, later...)
	for _, id := range later {
		if ds[id].Attempts != 0 {
			t.Errorf("delivery %s written after the 410 was attempted %d times", ds[id].ID, ds[id].Attempts)
		}
	}
	if got := len(rc.requests()); got != 1 {
		t.Fatalf("a disabled endpoint got %d requests, want the 1 answered 410", got)
	}
	if n, err := f.hooks.Backlog(context.Background()); err != nil || n != 0 {
		t.Fatalf("backlog %d (%v), want 0: disabled deliveries are not to be made", n, err)
	}

	// The receiver is back: the admin retries the first delivery.
	answer.Store(http.StatusNoContent)
	by := domain.Author{Actor: "1", RequestID: "req-retry"}
	retried, err := f.hooks.Retry(context.Background(), gone.ID, srv.URL, time.Now(), by)
	if err != nil {
		t.Fatal(err)
	}
	if retried.Status != domain.DeliveryPending || retried.NextAttemptAt.IsZero() {
		t.Fatalf("a retried delivery is %+v, want pending and due", retried)
	}
	f.statuses(t, domain.DeliveryDelivered, first...)
	// Events written once it is enabled are sent; those disabled meanwhile are not.
	after := f.persist(t, 1)
	f.statuses(t, domain.DeliveryDelivered, after...)
	f.statuses(t, domain.DeliveryDisabled, later...)
	if got := len(rc.requests()); got != 3 {
		t.Fatalf("the receiver got %d requests, want 3 (the 410, the retry, the event after it)", got)
	}

	// A delivered one retried is sent again under its webhook-id.
	if _, err := f.hooks.Retry(context.Background(), gone.ID, srv.URL, time.Now(), by); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 4*testenv.Patience, "the delivered delivery sent again", func() (bool, string) {
		got := rc.requests()
		return len(got) == 4 && got[3].id == gone.ID && got[3].err == nil, fmt.Sprintf("%d requests", len(got))
	})
	f.statuses(t, domain.DeliveryDelivered, first...)

	if _, err := f.hooks.Retry(context.Background(), "01KB0000000000000000000000", srv.URL, time.Now(), by); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("retry of an unknown delivery: %v, want domain.ErrNotFound", err)
	}
}

// TestGoneDisablesOnlyItsURL checks that a 410 disables the URL that answered it: a
// dispatcher configured with another URL (the operator moved the receiver, and
// restarted) sends.
func TestGoneDisablesOnlyItsURL(t *testing.T) {
	f := newFixture(t)
	gone := &receiver{answer: func(int, *http.Request) int { return http.StatusGone }}
	old := httptest.NewServer(gone)
	t.Cleanup(old.Close)
	opts := fast
	opts.Endpoint = old.URL
	first := f.persist(t, 1)
	stop := f.start(t, old.URL, opts)
	f.statuses(t, domain.DeliveryDisabled, first...)
	stop()

	ok := &receiver{answer: func(int, *http.Request) int { return http.StatusOK }}
	moved := httptest.NewServer(ok)
	t.Cleanup(moved.Close)
	opts.Endpoint = moved.URL
	f.start(t, moved.URL, opts)
	next := f.persist(t, 1)
	f.statuses(t, domain.DeliveryDelivered, next...)
	if got := len(ok.requests()); got != 1 {
		t.Fatalf("the new URL got %d requests, want 1", got)
	}
}
