package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/seckill/seckill/application"
	"github.com/seckill/seckill/domain"
)

// The kinds of event the streams send (the SSE "event:" field).
const (
	eventOrder   = "order"
	eventVoucher = "voucher"
)

// errNoStreams refuses a stream, or a ticket, of an API without streams.
var errNoStreams = fmt.Errorf("%w: this instance serves no event streams", domain.ErrUnavailable)

// ticketJSON is the contract's stream ticket.
type ticketJSON struct {
	Ticket    string `json:"ticket"`
	ExpiresAt stamp  `json:"expires_at"`
}

// issueTicket answers POST /api/v1/stream-tickets: a fresh single-use ticket of the
// caller's (application.IssueStreamTicket).
func (h handlers) issueTicket(c echo.Context) error {
	if h.streams == nil || h.uc.IssueStreamTicket == nil {
		return errNoStreams
	}
	t, err := h.uc.IssueStreamTicket.Handle(c.Request().Context(), application.IssueStreamTicketCmd{UserID: principal(c).User})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, ticketJSON{Ticket: t.Ticket, ExpiresAt: stamp(t.ExpiresAt)})
}

// authenticateStream holds one of the streams (Streams.admit: a stream refused at the
// limit spends no ticket), then authenticates the stream by ?ticket= (redeemed: a
// ticket opens one stream, as its user, never an admin) or, without one, as
// authenticate does by the Authorization header.
func authenticateStream(tokens *Tokens, streams *Streams) echo.MiddlewareFunc {
	byHeader := authenticate(tokens)
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		header := byHeader(next)
		return streams.admit(func(c echo.Context) error {
			ticket, given := c.QueryParams()["ticket"]
			if !given {
				return header(c)
			}
			user, err := streams.opts.Tickets.Handle(c.Request().Context(), application.RedeemStreamTicketCmd{Ticket: ticket[0]})
			if errors.Is(err, domain.ErrNotFound) {
				return errUnauthorized
			}
			if err != nil {
				return err
			}
			c.Set(principalKey, &Principal{User: user})
			return next(c)
		})
	}
}

// orderEvents answers GET /api/v1/orders/{id}/events: the caller's order at once,
// then again on each change of its status, until a final one. It reads the order
// again when a change of it is announced and every Resync besides, so a lost
// announcement delays an event, never loses it; between reads it holds nothing of the
// database. Each event's id is the order's status; a reconnect whose Last-Event-ID
// names the final status the order has is answered 204, which ends a client's
// reconnects.
func (h handlers) orderEvents(c echo.Context) error {
	id, err := domain.ParseOrderID(c.Param("id"))
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	o, err := h.uc.GetOrder.Handle(ctx, caller(c), id)
	if err != nil {
		return err
	}
	ev, err := h.orderEvent(o)
	if err != nil {
		return err
	}
	if ev.final && c.Request().Header.Get(headerLastEventID) == ev.id {
		return c.NoContent(http.StatusNoContent)
	}
	w, open := h.streams.startWith(c, ev)
	if !open || ev.final {
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
	return pump(ctx, h.streams, w, feed[struct{}]{wake: l.wake, every: h.streams.opts.Resync,
		read: func(ctx context.Context, _ struct{}) (event, bool) {
			now, err := h.uc.GetOrder.Handle(ctx, caller(c), id)
			if err != nil || now.Status == o.Status {
				return event{}, false // a failed read is tried again by the next wake or resync
			}
			o = now
			ev, err := h.orderEvent(o)
			return ev, err == nil
		}})
}

// orderEvent is o's event: its id is o's status, which an order takes once.
func (h handlers) orderEvent(o domain.Order) (event, error) {
	b, err := json.Marshal(toOrderJSON(o, h.payment))
	if err != nil {
		return event{}, fmt.Errorf("encode order: %w", err)
	}
	return event{id: string(o.Status), kind: eventOrder, data: b, final: o.Status.Final()}, nil
}

// voucherEvents answers GET /api/v1/vouchers/{id}/events: the voucher at once, then
// again on each change of its units or state that its topic's reader sees (at most
// one every VoucherEvery).
func (h handlers) voucherEvents(c echo.Context) error {
	id, err := domain.ParseVoucherID(c.Param("id"))
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	v, err := h.uc.GetVoucher.Handle(ctx, id)
	if err != nil {
		return err
	}
	last, err := json.Marshal(toVoucherJSON(v))
	if err != nil {
		return fmt.Errorf("encode voucher: %w", err)
	}
	w, open := h.streams.startWith(c, contentEvent(eventVoucher, last))
	if !open {
		return nil
	}
	l := voucherListener()
	t := h.streams.join(ctx, id, l)
	defer h.streams.leave(t, l)
	return pump(ctx, h.streams, w, feed[[]byte]{wake: l.events, gone: l.gone,
		read: func(_ context.Context, b []byte) (event, bool) {
			if bytes.Equal(b, last) {
				return event{}, false
			}
			last = b
			return contentEvent(eventVoucher, b), true
		}})
}
