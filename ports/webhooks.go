package ports

import (
	"context"
	"fmt"
	"time"

	"github.com/seckill/seckill/domain"
)

// WebhookOutbox hands the webhook dispatcher the deliveries due. The events were
// written to it by the repositories, each in the transaction of its change.
type WebhookOutbox interface {
	// Claim takes up to limit deliveries due at now (neither delivered, given up nor
	// disabled, their next attempt at or before now) that no unexpired claim holds,
	// soonest due first, and holds them until now + lease: no other Claim, in this
	// process or another, returns them meanwhile. No delivery due is an empty slice.
	// While endpoint is disabled (Record of an attempt with Disable), it claims none
	// and disables every delivery still to be made that no claim holds.
	Claim(ctx context.Context, endpoint string, now time.Time, limit int, lease time.Duration) ([]ClaimedDelivery, error)
	// Record keeps the outcome of an attempt at a claimed delivery and ends the
	// claim, only while c's claim still holds it; it reports whether it did (false:
	// the lease passed and another claim may have taken it). An attempt with Disable
	// also disables c's endpoint, for every instance and across restarts.
	Record(ctx context.Context, c ClaimedDelivery, a WebhookAttempt) (bool, error)
}

// ClaimedDelivery is a delivery held by a claim (WebhookOutbox.Claim).
type ClaimedDelivery struct {
	domain.Delivery
	// Claim names the claim; Record takes it back.
	Claim string
	// Endpoint is the endpoint it was claimed for (Claim's).
	Endpoint string
	// CreatedAt is when the event was written, the start of its retries.
	CreatedAt time.Time
}

// WebhookAttempt is the outcome of one attempt at a delivery.
type WebhookAttempt struct {
	// At is when the attempt was made.
	At time.Time
	// Status is the HTTP status of the answer; 0 when there was none.
	Status int
	// Err says why it failed; empty when the endpoint took it (delivered).
	Err string
	// Next is when to try again after a failure; zero with GiveUp or Disable.
	Next time.Time
	// GiveUp says that it failed for good: it is not tried again.
	GiveUp bool
	// Disable says that the receiver answered 410 Gone: the delivery is disabled, and
	// so is its endpoint (Standard Webhooks: stop sending to it).
	Disable bool
}

// DeliveryQuery selects a page of webhook deliveries, newest (highest id) first.
type DeliveryQuery struct {
	// Status, when not empty, keeps only the deliveries in that status.
	Status domain.DeliveryStatus
	// Before, when not empty, keeps only the deliveries whose id sorts before it: the
	// last id of the previous page (the keyset cursor).
	Before string
	// Limit is the most deliveries returned; it is at least 1.
	Limit int
}

// WebhookDeliveries reads the outbox for the admin and the metrics.
type WebhookDeliveries interface {
	// List returns one page of deliveries, newest first: at most q.Limit of those q
	// selects.
	List(ctx context.Context, q DeliveryQuery) ([]domain.Delivery, error)
	// Backlog counts the deliveries still to be made: neither delivered, given up nor
	// disabled.
	Backlog(ctx context.Context) (int, error)
	// Retry makes delivery id due again at at (pending, not given up; a delivered
	// one is sent again under the same id), enables endpoint again if a 410 had
	// disabled it, and appends the audit entry of by, in one transaction; it returns
	// the delivery as it now is. An unknown id is domain.ErrNotFound.
	Retry(ctx context.Context, id, endpoint string, at time.Time, by domain.Author) (domain.Delivery, error)
}

// WebhookSender posts events to the webhook endpoint.
type WebhookSender interface {
	// Send posts body as event id, signed at at (the webhook-timestamp), and returns
	// the HTTP status of the answer (0 when there was none) and an error unless it was
	// a 2xx. It gives up at ctx's deadline.
	// A receiver that answered 429 or 503 with Retry-After is a *ReceiverBusyError.
	Send(ctx context.Context, id string, at time.Time, body []byte) (int, error)
}

// ReceiverBusyError is a receiver's 429 or 503 that said, in Retry-After, how long
// to wait before the next attempt.
type ReceiverBusyError struct {
	Status     int
	RetryAfter time.Duration
}

func (e *ReceiverBusyError) Error() string {
	return fmt.Sprintf("endpoint answered %d, retry after %s", e.Status, e.RetryAfter)
}
