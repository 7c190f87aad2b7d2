package httpapi

import (
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/seckill/seckill/application"
	"github.com/seckill/seckill/domain"
)

// webhookJSON is the body of a webhook: the event's type, its time, and the order or
// the voucher as the API renders them.
type webhookJSON struct {
	Type      domain.EventType `json:"type"`
	Timestamp stamp            `json:"timestamp"`
	Data      json.RawMessage  `json:"data"`
}

// eventData renders the order or the voucher of e as every answer that holds one
// renders it (toOrderJSON, toVoucherJSON). A voucher's remaining units are the
// database's count as of the event, stock minus the units its live orders held, and
// its state is judged at the event's time.
func eventData(e domain.Event, w domain.PaymentWindow) (json.RawMessage, error) {
	var data any
	switch {
	case e.Order != nil:
		data = toOrderJSON(*e.Order, w)
	case e.Voucher != nil:
		v := *e.Voucher
		remaining := max(v.Stock-v.Sold, 0)
		data = toVoucherJSON(application.LiveVoucher{Voucher: v, Remaining: remaining, State: v.State(e.At, remaining)})
	case e.Campaign != nil:
		data = toCampaignEventJSON(*e.Campaign)
	default:
		return nil, fmt.Errorf("event %s of type %s holds no order, voucher or campaign", e.ID, e.Type)
	}
	b, err := json.Marshal(data)
	if err != nil {
		return nil, fmt.Errorf("render event %s: %w", e.ID, err)
	}
	return b, nil
}

// WebhookBody returns the renderer of the webhooks' bodies, {"type", "timestamp",
// "data"}, with orders' deadlines by w: the same body for an event every time.
func WebhookBody(w domain.PaymentWindow) application.RenderEvent {
	return func(e domain.Event) ([]byte, error) {
		data, err := eventData(e, w)
		if err != nil {
			return nil, err
		}
		return json.Marshal(webhookJSON{Type: e.Type, Timestamp: stamp(e.At), Data: data})
	}
}

// deliveryJSON is the contract's webhook delivery. The times not reached yet are null.
type deliveryJSON struct {
	ID            string                `json:"id"`
	Type          domain.EventType      `json:"type"`
	Status        domain.DeliveryStatus `json:"status"`
	GivenUp       bool                  `json:"given_up"`
	Attempts      int                   `json:"attempts"`
	CreatedAt     stamp                 `json:"created_at"`
	LastAttemptAt *stamp                `json:"last_attempt_at"`
	NextAttemptAt *stamp                `json:"next_attempt_at"`
	DeliveredAt   *stamp                `json:"delivered_at"`
	LastStatus    *int                  `json:"last_status"`
	LastError     *string               `json:"last_error"`
	Data          json.RawMessage       `json:"data"`
}

// deliveryListJSON is the contract's page of webhook deliveries.
type deliveryListJSON struct {
	Deliveries []deliveryJSON `json:"deliveries"`
	NextCursor string         `json:"next_cursor,omitempty"`
}

func (h handlers) toDeliveryJSON(d domain.Delivery) (deliveryJSON, error) {
	data, err := eventData(d.Event, h.payment)
	if err != nil {
		return deliveryJSON{}, err
	}
	out := deliveryJSON{ID: d.ID, Type: d.Type, Status: d.Status, GivenUp: d.GivenUp, Attempts: d.Attempts,
		CreatedAt: stamp(d.At), LastAttemptAt: optionalStamp(d.LastAttemptAt), NextAttemptAt: optionalStamp(d.NextAttemptAt),
		DeliveredAt: optionalStamp(d.DeliveredAt), Data: data}
	if d.Attempts > 0 {
		out.LastStatus, out.LastError = &d.LastStatus, &d.LastError
	}
	return out, nil
}

// listDeliveries answers a page of the webhook deliveries, newest first, ?status=
// filtering.
func (h handlers) listDeliveries(c echo.Context) error {
	var status domain.DeliveryStatus
	if s, given := c.QueryParams()["status"]; given {
		status = domain.DeliveryStatus(s[0])
		if !status.Valid() {
			return domain.Invalid("status", "must be pending, failed, delivered or disabled")
		}
	}
	limit, cursor, err := pageParams(c)
	if err != nil {
		return err
	}
	page, err := h.uc.ListDeliveries.Handle(c.Request().Context(), application.ListDeliveriesQuery{
		Status: status, Limit: limit, Cursor: cursor,
	})
	if err != nil {
		return err
	}
	out := deliveryListJSON{Deliveries: make([]deliveryJSON, len(page.Deliveries)), NextCursor: page.NextCursor}
	for i, d := range page.Deliveries {
		if out.Deliveries[i], err = h.toDeliveryJSON(d); err != nil {
			return err
		}
	}
	return c.JSON(http.StatusOK, out)
}

// retryDelivery sends a webhook delivery again (RetryDelivery) and answers 202 with
// the delivery as it now is: due at once.
func (h handlers) retryDelivery(c echo.Context) error {
	d, err := h.uc.RetryDelivery.Handle(c.Request().Context(), application.RetryDeliveryCmd{ID: c.Param("id"), By: author(c)})
	if err != nil {
		return err
	}
	out, err := h.toDeliveryJSON(d)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusAccepted, out)
}

// campaignEventJSON is a campaign as its webhooks carry it: as the database had it in
// the change's transaction, with the units its vouchers' live orders held (sold), and
// no remaining units or state (the live figures are the grab path's: GET the campaign).
type campaignEventJSON struct {
	ID           string   `json:"id"`
	Title        string   `json:"title"`
	BeginsAt     stamp    `json:"begins_at"`
	EndsAt       stamp    `json:"ends_at"`
	PerUserLimit int      `json:"per_user_limit"`
	Cap          *int     `json:"cap"`
	Sold         int      `json:"sold"`
	Vouchers     []string `json:"vouchers"`
}

func toCampaignEventJSON(c domain.Campaign) campaignEventJSON {
	out := campaignEventJSON{ID: c.ID.String(), Title: c.Title, BeginsAt: stamp(c.BeginsAt), EndsAt: stamp(c.EndsAt),
		PerUserLimit: c.PerUserLimit, Cap: c.Cap, Sold: c.Sold, Vouchers: make([]string, 0, c.Variants)}
	for _, id := range c.VoucherIDs() {
		out.Vouchers = append(out.Vouchers, id.String())
	}
	return out
}
