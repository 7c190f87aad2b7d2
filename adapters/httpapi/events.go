package httpapi

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/seckill/seckill/domain"
)

// The kinds of event the streams send (the SSE "event:" field).
const (
	eventOrder   = "order"
	eventVoucher = "voucher"
)

// TicketTTL is how long a stream ticket may wait to be used.
const TicketTTL = 60 * time.Second

// ticketBytes is a ticket's randomness: 32 bytes, 43 characters of base64url.
const ticketBytes = 32

// errStreamsFull refuses a stream beyond Max, or once the server is shutting down.
var errStreamsFull = fmt.Errorf("%w: too many event streams are open on this instance", domain.ErrUnavailable)

// ticketJSON is the contract's stream ticket.
type ticketJSON struct {
	Ticket    string    `json:"ticket"`
	ExpiresAt time.Time `json:"expires_at"`
}

// issueTicket answers POST /api/v1/stream-tickets: a fresh single-use ticket of the
// caller's, kept where every instance finds it.
func (h handlers) issueTicket(c echo.Context) error {
	if h.streams == nil {
		return errStreamsFull
	}
	b := make([]byte, ticketBytes)
	_, _ = rand.Read(b) // crypto/rand never fails on the platforms Go supports
	ticket := base64.RawURLEncoding.EncodeToString(b)
	if err := h.streams.opts.Tickets.Issue(c.Request().Context(), ticket, principal(c).User, TicketTTL); err != nil {
		return err
	}
	now := time.Now()
	if h.clock != nil {
		now = h.clock.Now()
	}
	return c.JSON(http.StatusCreated, ticketJSON{Ticket: ticket, ExpiresAt: now.Add(TicketTTL).UTC()})
}

// authenticateStream authenticates an event stream by ?ticket= (redeemed: a ticket
// opens one stream, as its user, never an admin) or, without one, as authenticate
// does by the Authorization header.
func authenticateStream(tokens *Tokens, streams *Streams) echo.MiddlewareFunc {
	byHeader := authenticate(tokens)
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		header := byHeader(next)
		return func(c echo.Context) error {
			ticket, given := c.QueryParams()["ticket"]
			if !given {
				return header(c)
			}
			if streams == nil || !wellFormedTicket(ticket[0]) {
				return errUnauthorized
			}
			user, err := streams.opts.Tickets.Redeem(c.Request().Context(), ticket[0])
			if errors.Is(err, domain.ErrNotFound) {
				return errUnauthorized
			}
			if err != nil {
				return err
			}
			c.Set(principalKey, &Principal{User: user})
			return next(c)
		}
	}
}

// wellFormedTicket reports whether s could be a ticket issueTicket made, spelt as it
// spells it (domain.DecodeToken), so that anything else is refused without a look in the store.
func wellFormedTicket(s string) bool {
	b, ok := domain.DecodeToken(s)
	return ok && len(b) == ticketBytes
}

// orderEvents answers GET /api/v1/orders/{id}/events: the caller's order at once,
// then again on each change of its status, until a final one. It reads the order
// again when a change of it is announced and every Resync besides, so a lost
// announcement delays an event, never loses it; between reads it holds nothing of the
// database.
func (h handlers) orderEvents(c echo.Context) error {
	id, err := domain.ParseOrderID(c.Param("id"))
	if err != nil {
		return err
	}
	if h.streams == nil || !h.streams.acquire() {
		return errStreamsFull
	}
	defer h.streams.release()
	ctx := c.Request().Context()
	o, err := h.uc.GetOrder.Handle(ctx, caller(c), id)
	if err != nil {
		return err
	}
	w := h.streams.begin(c)
	if err := w.send(eventOrder, toOrderJSON(o, h.payment)); err != nil || o.Status.Final() {
		return nil
	}
	l := orderListener(id)
	t := h.streams.join(ctx, o.VoucherID, l)
	defer h.streams.leave(t, l)
	// A change made before the subscription is read now.
	select {
	case l.wake <- struct{}{}:
	default: // one was announced already
	}
	ping := time.NewTicker(h.streams.opts.Ping)
	defer ping.Stop()
	resync := time.NewTicker(h.streams.opts.Resync)
	defer resync.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-h.streams.closed:
			return nil
		case <-ping.C:
			if w.ping() != nil {
				return nil
			}
			continue
		case <-l.wake:
		case <-resync.C:
		}
		now, err := h.uc.GetOrder.Handle(ctx, caller(c), id)
		if err != nil || now.Status == o.Status {
			continue // a failed read is tried again by the next wake or resync
		}
		o = now
		if err := w.send(eventOrder, toOrderJSON(o, h.payment)); err != nil || o.Status.Final() {
			return nil
		}
	}
}

// voucherEvents answers GET /api/v1/vouchers/{id}/events: the voucher at once, then
// again on each change of its units or state that its topic's reader sees (at most
// one every VoucherEvery).
func (h handlers) voucherEvents(c echo.Context) error {
	id, err := domain.ParseVoucherID(c.Param("id"))
	if err != nil {
		return err
	}
	if h.streams == nil || !h.streams.acquire() {
		return errStreamsFull
	}
	defer h.streams.release()
	ctx := c.Request().Context()
	v, err := h.uc.GetVoucher.Handle(ctx, id)
	if err != nil {
		return err
	}
	first, err := json.Marshal(toVoucherJSON(v))
	if err != nil {
		return fmt.Errorf("encode voucher: %w", err)
	}
	w := h.streams.begin(c)
	if w.event(eventVoucher, first) != nil {
		return nil
	}
	l := voucherListener()
	t := h.streams.join(ctx, id, l)
	defer h.streams.leave(t, l)
	ping := time.NewTicker(h.streams.opts.Ping)
	defer ping.Stop()
	last := first
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-h.streams.closed:
			return nil
		case <-l.gone:
			return nil // dropped as too slow: the client reconnects
		case <-ping.C:
			if w.ping() != nil {
				return nil
			}
		case b := <-l.events:
			if bytes.Equal(b, last) {
				continue
			}
			last = b
			if w.event(eventVoucher, b) != nil {
				return nil
			}
		}
	}
}

// eventWriter writes one stream's events, each flushed at once under the write
// timeout.
type eventWriter struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration
	metrics *Metrics
}

// begin answers 200 with the event stream's headers. The stream lives as long as its
// client listens: the server's read deadline (for a request's body) is lifted.
func (s *Streams) begin(c echo.Context) *eventWriter {
	res := c.Response()
	h := res.Header()
	h.Set(echo.HeaderContentType, "text/event-stream")
	h.Set(echo.HeaderCacheControl, "no-cache")
	// nginx would buffer the stream otherwise.
	h.Set("X-Accel-Buffering", "no")
	res.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(res)
	// Not every ResponseWriter can (a test recorder cannot); the stream works without.
	_ = rc.SetReadDeadline(time.Time{})
	return &eventWriter{w: res, rc: rc, timeout: s.opts.WriteTimeout, metrics: s.metrics}
}

// send writes v as an event of kind.
func (w *eventWriter) send(kind string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode %s event: %w", kind, err)
	}
	return w.event(kind, b)
}

// event writes data (one line of JSON) as an event of kind.
func (w *eventWriter) event(kind string, data []byte) error {
	buf := make([]byte, 0, len(kind)+len(data)+16)
	buf = append(append(append(append(buf, "event: "...), kind...), "\ndata: "...), data...)
	if err := w.write(append(buf, "\n\n"...)); err != nil {
		return err
	}
	w.metrics.streamEvents.WithLabelValues(kind).Inc()
	return nil
}

// ping writes the comment that keeps a quiet stream open.
func (w *eventWriter) ping() error {
	return w.write([]byte(": ping\n\n"))
}

// write writes b and flushes it within the write timeout. A client that does not
// take it in time is counted dropped.
func (w *eventWriter) write(b []byte) error {
	_ = w.rc.SetWriteDeadline(time.Now().Add(w.timeout))
	_, err := w.w.Write(b)
	if err == nil {
		err = w.rc.Flush()
	}
	if errors.Is(err, os.ErrDeadlineExceeded) {
		w.metrics.streamsDropped.Inc()
	}
	return err
}
