package application

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"sync"
	"time"

	"github.com/seckill/seckill/domain"
	"github.com/seckill/seckill/ports"
)

// RenderEvent renders an event as the body the webhook endpoint receives. It must
// render an event the same way every time: every attempt sends the same body.
type RenderEvent func(domain.Event) ([]byte, error)

// WebhookOptions tune the webhook dispatcher. Zero values take the contract's.
type WebhookOptions struct {
	// Concurrency is the most deliveries sent at once (default 8).
	Concurrency int
	// Timeout bounds each attempt (default 15 s, within the 15–30 s Standard Webhooks
	// recommends): an endpoint that has not answered by then failed this attempt.
	Timeout time.Duration
	// MinBackoff is the wait after a first failed attempt (default 1 s); it doubles
	// with each failed attempt, with jitter (up to a fifth more), up to MaxBackoff
	// (default 1 h).
	MinBackoff, MaxBackoff time.Duration
	// RetryFor is how long after its event a delivery is still retried (default 3
	// days, so a receiver down over a weekend still gets it): an attempt that fails
	// later gives it up.
	RetryFor time.Duration
	// Poll is how often the outbox is looked at while nothing is due (default 500 ms).
	Poll time.Duration
	// Endpoint names the endpoint the deliveries are sent to (its URL): a receiver
	// answering 410 Gone disables it, and a new URL is a new endpoint, enabled.
	Endpoint string
}

func (o WebhookOptions) withDefaults() WebhookOptions {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	if o.Concurrency < 1 {
		o.Concurrency = 8
	}
	def(&o.Timeout, 15*time.Second)
	def(&o.MinBackoff, time.Second)
	def(&o.MaxBackoff, time.Hour)
	def(&o.RetryFor, 72*time.Hour)
	def(&o.Poll, 500*time.Millisecond)
	return o
}

// claimMargin is how much longer a claim holds a delivery than the attempt made
// under it may run. The attempt's send ends at the latest Timeout after the claim
// was asked for (not after the send began: see Run), so the whole margin is left for
// the hosts' clocks to differ — a claim's end is written by the claimer's clock and
// judged by the others'.
const claimMargin = 5 * time.Second

// lease is how long a claim holds a delivery: the attempt's timeout and claimMargin.
// No other dispatcher sends the delivery while this one still may, and the
// deliveries of a dispatcher killed mid-attempt (or shut down) are sent again by the
// others once its claims lapse, Timeout + claimMargin after it claimed them — not a
// minute later. A claim is not renewed: a renewal that failed while the send went on
// would let two sends of one delivery overlap.
func (o WebhookOptions) lease() time.Duration { return o.Timeout + claimMargin }

// WebhookOutcome is what became of one attempt.
type WebhookOutcome string

// The outcomes of an attempt.
const (
	WebhookDelivered WebhookOutcome = "delivered"
	WebhookFailed    WebhookOutcome = "failed"
	WebhookGivenUp   WebhookOutcome = "given_up"
	WebhookDisabled  WebhookOutcome = "disabled"
)

// WebhookObserver hears what the dispatcher has to say; either may be nil. Attempt is
// called once per attempt with its outcome; Problem with a failure of the outbox
// itself (the database), which the dispatcher retries at its next poll.
type WebhookObserver struct {
	Attempt func(WebhookOutcome)
	Problem func(error)
}

// DeliverWebhooks sends the outbox's events to the webhook endpoint: at least once
// each, under the same webhook-id every time, retrying a failed attempt (a non-2xx
// answer, no answer within the timeout) with a doubling back-off for RetryFor, then
// giving it up. A receiver answering 410 Gone disables the endpoint: no delivery is
// sent to it again, by any instance, until an admin retries one (RetryDelivery). It runs in goroutines of its own, Concurrency attempts at most at
// once, each under its timeout, and touches nothing of the grab path or the
// fulfillment: a dead, slow or hung endpoint only delays its own deliveries.
type DeliverWebhooks struct {
	outbox  ports.WebhookOutbox
	sender  ports.WebhookSender
	render  RenderEvent
	clock   ports.Clock
	opts    WebhookOptions
	observe WebhookObserver
}

// NewDeliverWebhooks returns the dispatcher; clock is the one the outbox's rows are
// stamped by (the host's).
func NewDeliverWebhooks(outbox ports.WebhookOutbox, sender ports.WebhookSender, render RenderEvent, clock ports.Clock,
	opts WebhookOptions, observe WebhookObserver) *DeliverWebhooks {
	if observe.Attempt == nil {
		observe.Attempt = func(WebhookOutcome) {}
	}
	if observe.Problem == nil {
		observe.Problem = func(error) {}
	}
	return &DeliverWebhooks{outbox: outbox, sender: sender, render: render, clock: clock, opts: opts.withDefaults(), observe: observe}
}

// Run claims the deliveries due and sends them until ctx is cancelled, then waits for
// the attempts in flight (each ends within its timeout) and returns nil. A delivery
// whose attempt was cut short by the cancellation is not recorded: its claim lapses
// and it is sent again, under the same id, by whichever dispatcher claims it next.
func (uc *DeliverWebhooks) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	defer wg.Wait()
	slots := make(chan struct{}, uc.opts.Concurrency)
	freed := make(chan struct{}, 1)
	poll := time.NewTimer(0)
	defer poll.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-poll.C:
		case <-freed:
		}
		for {
			free := cap(slots) - len(slots)
			if free == 0 {
				break
			}
			// Each send ends by then, however long the claim took: within the lease.
			sendBy := time.Now().Add(uc.opts.Timeout)
			ds, err := uc.outbox.Claim(ctx, uc.opts.Endpoint, uc.clock.Now(), free, uc.opts.lease())
			if err != nil {
				if ctx.Err() == nil {
					uc.observe.Problem(fmt.Errorf("claim webhook deliveries: %w", err))
				}
				break
			}
			for _, d := range ds {
				slots <- struct{}{}
				wg.Go(func() {
					defer func() {
						<-slots
						select {
						case freed <- struct{}{}:
						default:
						}
					}()
					uc.attempt(ctx, d, sendBy)
				})
			}
			if len(ds) < free {
				break
			}
		}
		poll.Reset(uc.opts.Poll)
	}
}

// attempt sends d once, ending the send by sendBy (the host's clock: Timeout after the
// claim was asked for, so within the claim), and records the outcome. When sendBy
// has passed already (the claim took the whole timeout), it sends nothing and
// records nothing: the claim lapses and the delivery is sent again.
func (uc *DeliverWebhooks) attempt(ctx context.Context, d ports.ClaimedDelivery, sendBy time.Time) {
	at := uc.clock.Now()
	a := ports.WebhookAttempt{At: at}
	body, err := uc.render(d.Event)
	if err == nil {
		if !time.Now().Before(sendBy) {
			return
		}
		sendCtx, cancel := context.WithDeadline(ctx, sendBy)
		a.Status, err = uc.sender.Send(sendCtx, d.ID, at, body)
		cancel()
		if ctx.Err() != nil {
			return // shutting down: the claim lapses and the delivery is sent again
		}
		if errors.Is(err, context.DeadlineExceeded) {
			err = fmt.Errorf("no answer within %s", uc.opts.Timeout)
		}
	}
	outcome := WebhookDelivered
	if err != nil {
		a.Err = err.Error()
		outcome = WebhookFailed
		switch {
		case a.Status == http.StatusGone:
			// Standard Webhooks: the receiver is gone; stop sending to it.
			a.Disable, outcome = true, WebhookDisabled
		case at.Sub(d.CreatedAt) >= uc.opts.RetryFor:
			a.GiveUp, outcome = true, WebhookGivenUp
		default:
			wait := uc.backoff(d.Attempts + 1)
			// A receiver that asked for a wait (Retry-After on a 429 or 503) gets it,
			// up to MaxBackoff.
			if busy, ok := errors.AsType[*ports.ReceiverBusyError](err); ok {
				wait = min(max(wait, busy.RetryAfter), uc.opts.MaxBackoff)
			}
			a.Next = at.Add(wait)
		}
	}
	// The attempt is recorded even while shutdown begins: it was made.
	recordCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), uc.opts.Timeout)
	defer cancel()
	ok, err := uc.outbox.Record(recordCtx, d, a)
	if err != nil {
		uc.observe.Problem(fmt.Errorf("record webhook attempt %s: %w", d.ID, err))
		return
	}
	if ok {
		uc.observe.Attempt(outcome)
	}
}

// backoff is the wait after the n-th failed attempt: MinBackoff doubled n-1 times, up
// to a fifth more at random (so endpoints coming back are not hit all at once), at
// most MaxBackoff.
func (uc *DeliverWebhooks) backoff(n int) time.Duration {
	d := uc.opts.MinBackoff
	for i := 1; i < n && d < uc.opts.MaxBackoff; i++ {
		d *= 2
	}
	if jitter := int64(d / 5); jitter > 0 {
		d += time.Duration(rand.Int64N(jitter))
	}
	return min(d, uc.opts.MaxBackoff)
}

// ListDeliveriesQuery asks for a page of webhook deliveries.
type ListDeliveriesQuery struct {
	// Status, when not empty, keeps only the deliveries in that status.
	Status domain.DeliveryStatus
	// Limit is the page size, 1 to MaxPageLimit; 0 means DefaultPageLimit.
	Limit int
	// Cursor is NextCursor of the previous page; empty for the first page.
	Cursor string
}

// DeliveryPage is a page of webhook deliveries, newest first.
type DeliveryPage struct {
	Deliveries []domain.Delivery
	// NextCursor asks for the next page; empty on the last page.
	NextCursor string
}

// ListDeliveries lists the webhook deliveries for an admin.
type ListDeliveries struct {
	deliveries ports.WebhookDeliveries
}

// NewListDeliveries returns the use case.
func NewListDeliveries(deliveries ports.WebhookDeliveries) *ListDeliveries {
	return &ListDeliveries{deliveries: deliveries}
}

// Handle returns a page of deliveries, newest first. A status that is not one of
// domain.DeliveryStatus, a limit out of range, or a cursor that is not NextCursor of a
// page of this list with the same status, returns a *domain.ValidationError.
func (uc *ListDeliveries) Handle(ctx context.Context, q ListDeliveriesQuery) (DeliveryPage, error) {
	if q.Status != "" && !q.Status.Valid() {
		return DeliveryPage{}, domain.Invalid("status", "must be pending, failed, delivered or disabled")
	}
	limit, err := pageLimit(q.Limit)
	if err != nil {
		return DeliveryPage{}, err
	}
	query := ports.DeliveryQuery{Status: q.Status, Limit: limit + 1}
	if q.Cursor != "" {
		if query.Before, err = decodeDeliveryCursor(q.Cursor, q.Status); err != nil {
			return DeliveryPage{}, err
		}
	}
	// One more than the page tells whether another page follows.
	ds, err := uc.deliveries.List(ctx, query)
	if err != nil {
		return DeliveryPage{}, fmt.Errorf("list webhook deliveries: %w", err)
	}
	page := DeliveryPage{Deliveries: ds}
	if len(ds) > limit {
		page.Deliveries = ds[:limit]
		page.NextCursor = encodeDeliveryCursor(q.Status, ds[limit-1].ID)
	}
	return page, nil
}

// RetryDeliveryCmd asks for a webhook delivery to be sent again.
type RetryDeliveryCmd struct {
	// ID is the delivery's id (its webhook-id).
	ID string
	// By is the admin asking.
	By domain.Author
}

// RetryDelivery sends a webhook delivery again, as an admin asks: whatever its status
// (a delivered one is sent again under the same webhook-id, as Svix's and Stripe's
// "resend" do; a given-up or disabled one is tried again), it is due at once, then
// retried on failure as any delivery is while its event is younger than RetryFor. It
// enables the endpoint again when a 410 had disabled it: the admin says the receiver
// is back. The deliveries disabled meanwhile stay disabled until each is retried.
type RetryDelivery struct {
	deliveries ports.WebhookDeliveries
	clock      ports.Clock
	endpoint   string
}

// NewRetryDelivery returns the use case; clock is the one the outbox's rows are
// stamped by (the host's), endpoint the dispatcher's.
func NewRetryDelivery(deliveries ports.WebhookDeliveries, clock ports.Clock, endpoint string) *RetryDelivery {
	return &RetryDelivery{deliveries: deliveries, clock: clock, endpoint: endpoint}
}

// Handle makes the delivery due now and returns it as it now is; an unknown id is
// domain.ErrNotFound.
func (uc *RetryDelivery) Handle(ctx context.Context, cmd RetryDeliveryCmd) (domain.Delivery, error) {
	d, err := uc.deliveries.Retry(ctx, cmd.ID, uc.endpoint, uc.clock.Now(), cmd.By)
	if err != nil {
		return domain.Delivery{}, fmt.Errorf("retry webhook delivery %s: %w", cmd.ID, err)
	}
	return d, nil
}
