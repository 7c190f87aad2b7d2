package httpapi

import (
	"context"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/seckill/seckill/application"
	"github.com/seckill/seckill/domain"
)

// orderJSON is the contract's order.
type orderJSON struct {
	OrderID   string             `json:"order_id"`
	VoucherID string             `json:"voucher_id"`
	UserID    string             `json:"user_id"`
	Quantity  int                `json:"quantity"`
	Status    domain.OrderStatus `json:"status"`
	CreatedAt stamp              `json:"created_at"`
	// ExpiresAt is when an unpaid order expires; absent once it is paid or closed.
	ExpiresAt *stamp `json:"expires_at,omitempty"`
}

// toOrderJSON renders an order as every answer that holds one renders it, with its
// deadline by w while it is unpaid (domain.PaymentWindow.ExpiresAt).
func toOrderJSON(o domain.Order, w domain.PaymentWindow) orderJSON {
	out := orderJSON{
		OrderID:   string(o.ID),
		VoucherID: o.VoucherID.String(),
		UserID:    o.UserID.String(),
		Quantity:  o.Quantity,
		Status:    o.Status,
		CreatedAt: stamp(o.CreatedAt),
	}
	if at, ok := w.ExpiresAt(o); ok {
		out.ExpiresAt = optionalStamp(at)
	}
	return out
}

func caller(c echo.Context) application.Caller {
	p := principal(c)
	return application.Caller{User: p.User, Admin: p.Admin}
}

func (h handlers) getOrder(c echo.Context) error {
	id, err := domain.ParseOrderID(c.Param("id"))
	if err != nil {
		return err
	}
	o, err := h.uc.GetOrder.Handle(c.Request().Context(), caller(c), id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, toOrderJSON(o, h.payment))
}

func (h handlers) payOrder(c echo.Context) error {
	return h.transition(c, h.uc.PayOrder.Handle)
}

func (h handlers) cancelOrder(c echo.Context) error {
	return h.transition(c, h.uc.CancelOrder.Handle)
}

// transition runs a change of an order's state on behalf of its owner; under an
// idempotency key the answer is kept with the change.
func (h handlers) transition(c echo.Context, change func(context.Context, application.OrderChangeCmd) (domain.Order, error)) error {
	id, err := domain.ParseOrderID(c.Param("id"))
	if err != nil {
		return err
	}
	o, err := change(c.Request().Context(), application.OrderChangeCmd{
		User: principal(c).User, Order: id, Receipt: receiptFor(c, h.changedOrder),
	})
	if err != nil {
		return err
	}
	return answerWith(c, o, h.changedOrder)
}

// changedOrder is the answer to a change of order o's state: 200 with the order.
func (h handlers) changedOrder(o domain.Order) (int, []byte, error) {
	return rendered(http.StatusOK, toOrderJSON(o, h.payment))
}

func (h handlers) listOrders(c echo.Context) error {
	voucher, limit, cursor, err := voucherPageParams(c)
	if err != nil {
		return err
	}
	page, err := h.uc.ListOrders.Handle(c.Request().Context(), caller(c), application.ListOrdersQuery{
		Voucher: voucher, Limit: limit, Cursor: cursor,
	})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, h.orderList(page))
}

// orderList renders a page of orders.
func (h handlers) orderList(page application.OrderPage) orderListJSON {
	out := orderListJSON{Orders: make([]orderJSON, len(page.Orders)), NextCursor: page.NextCursor}
	for i, o := range page.Orders {
		out.Orders[i] = toOrderJSON(o, h.payment)
	}
	return out
}

// orderListJSON is the contract's page of orders.
type orderListJSON struct {
	Orders     []orderJSON `json:"orders"`
	NextCursor string      `json:"next_cursor,omitempty"`
}

// StatsJSON is the contract's stats of a voucher: units in each state, as the API
// answers them and a client (the load tool) reads them.
type StatsJSON struct {
	Stock           int   `json:"stock"`
	Remaining       int   `json:"remaining"`
	Queued          int   `json:"queued"`
	AwaitingPayment int   `json:"awaiting_payment"`
	Paid            int   `json:"paid"`
	Cancelled       int   `json:"cancelled"`
	Expired         int   `json:"expired"`
	Failed          int   `json:"failed"`
	Pending         int64 `json:"pending"`
	OldestQueuedMS  int64 `json:"oldest_queued_ms"`
	Waitlist        int   `json:"waitlist"`
}

// toStatsJSON renders a voucher's stats, or a campaign's sum of its vouchers'.
func toStatsJSON(s application.VoucherStats) StatsJSON {
	return StatsJSON{
		Stock: s.Stock, Remaining: s.Remaining, Queued: s.Queued, AwaitingPayment: s.AwaitingPayment,
		Paid: s.Paid, Cancelled: s.Cancelled, Expired: s.Expired, Failed: s.Failed, Pending: s.Pending,
		OldestQueuedMS: s.OldestQueued.Milliseconds(), Waitlist: s.Waitlist,
	}
}

func (h handlers) voucherStats(c echo.Context) error {
	id, err := domain.ParseVoucherID(c.Param("id"))
	if err != nil {
		return err
	}
	s, err := h.uc.GetVoucherStats.Handle(c.Request().Context(), id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, toStatsJSON(s))
}
