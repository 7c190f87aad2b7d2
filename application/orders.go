package application

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/seckill/seckill/domain"
	"github.com/seckill/seckill/ports"
)

// Caller is who asks: a user, possibly an admin.
type Caller struct {
	User  domain.UserID
	Admin bool
}

// GetOrder reads one order: from the database once persisted, else the reservation
// still queued in Redis.
type GetOrder struct {
	orders       ports.Orders
	reservations ports.Reservations
}

// NewGetOrder returns the use case.
func NewGetOrder(orders ports.Orders, reservations ports.Reservations) *GetOrder {
	return &GetOrder{orders: orders, reservations: reservations}
}

// Handle returns the order if the caller owns it or is an admin; otherwise, and when
// there is no such order, domain.ErrNotFound (so ids of others' orders leak nothing).
func (uc *GetOrder) Handle(ctx context.Context, caller Caller, id domain.OrderID) (domain.Order, error) {
	o, err := uc.orders.Get(ctx, id)
	if errors.Is(err, domain.ErrNotFound) {
		// A user can only read their own: the reservation is looked up among theirs.
		owner := caller.User
		if caller.Admin {
			owner = 0
		}
		r, ferr := uc.reservations.Find(ctx, owner, id)
		if ferr != nil {
			return domain.Order{}, ferr
		}
		o = r.Order(domain.StatusQueued)
	} else if err != nil {
		return domain.Order{}, fmt.Errorf("get order: %w", err)
	}
	if !caller.Admin && o.UserID != caller.User {
		return domain.Order{}, domain.ErrNotFound
	}
	return o, nil
}

// ListOrders reads a page of the caller's orders, newest first: those persisted, and
// those reserved and still queued for persistence.
type ListOrders struct {
	orders       ports.Orders
	reservations ports.Reservations
}

// NewListOrders returns the use case.
func NewListOrders(orders ports.Orders, reservations ports.Reservations) *ListOrders {
	return &ListOrders{orders: orders, reservations: reservations}
}

// ListOrdersQuery asks for a page of the caller's orders.
type ListOrdersQuery struct {
	// Voucher, when not 0, keeps only the orders of that voucher.
	Voucher domain.VoucherID
	// Limit is the page size, 1 to MaxPageLimit; 0 means DefaultPageLimit.
	Limit int
	// Cursor is NextCursor of the previous page; empty for the first page.
	Cursor string
}

// OrderPage is a page of orders, in its list's order.
type OrderPage struct {
	Orders []domain.Order
	// NextCursor asks for the next page; empty on the last page.
	NextCursor string
}

// Handle returns a page of the caller's orders, newest first by (created_at, id). A
// limit out of range, or a cursor that is not NextCursor of a page of this list with
// the same voucher filter, returns a *domain.ValidationError.
//
// The list is one sequence, keyset-paged by ports.OrderKey, of the database's orders
// and of the reservations the user holds that are not yet orders (listed queued). An
// order keeps its key when it turns from a reservation into a row (created_at is the
// reservation's time), so each page covers its own range of keys and an order is
// never listed on two pages, even when it is persisted between them. Within a page an
// order id is listed once: a reservation whose row the page holds is that row. A
// reservation is known not to be a row only down to the oldest row read; older ones
// belong to a later page and are left to it (they rarely exist: a reservation is
// persisted within moments, so the queued ones are the newest and come first).
func (uc *ListOrders) Handle(ctx context.Context, caller Caller, q ListOrdersQuery) (OrderPage, error) {
	limit, err := pageLimit(q.Limit)
	if err != nil {
		return OrderPage{}, err
	}
	query := ports.OrderQuery{Voucher: q.Voucher, Limit: limit + 1}
	if q.Cursor != "" {
		after, err := decodeOrderCursor(q.Cursor, q.Voucher)
		if err != nil {
			return OrderPage{}, err
		}
		query.After = &after
	}
	// Reservations first, rows second: a reservation persisted in between is then
	// among the rows, and listed once, as the row.
	held, err := uc.reservations.ForUser(ctx, caller.User)
	if err != nil {
		return OrderPage{}, fmt.Errorf("list reservations: %w", err)
	}
	// One row more than the page tells whether another page follows.
	rows, err := uc.orders.ListByUser(ctx, caller.User, query)
	if err != nil {
		return OrderPage{}, fmt.Errorf("list orders: %w", err)
	}
	known := make(map[domain.OrderID]bool, len(rows))
	for _, o := range rows {
		known[o.ID] = true
	}
	out := make([]domain.Order, 0, len(rows)+len(held))
	out = append(out, rows...)
	for _, r := range held {
		o := r.Order(domain.StatusQueued)
		key := ports.KeyOf(o)
		switch {
		case known[o.ID], q.Voucher != 0 && o.VoucherID != q.Voucher:
		case query.After != nil && key.Compare(*query.After) <= 0:
			// On an earlier page.
		case len(rows) > limit && key.Compare(ports.KeyOf(rows[len(rows)-1])) > 0:
			// Older than every row read: a later page's, and whether it is a row
			// is not known here.
		default:
			out = append(out, o)
		}
	}
	slices.SortFunc(out, func(a, b domain.Order) int { return ports.KeyOf(a).Compare(ports.KeyOf(b)) })
	page := OrderPage{Orders: out}
	if len(out) > limit {
		page.Orders = out[:limit]
		page.NextCursor = encodeOrderCursor(q.Voucher, ports.KeyOf(out[limit-1]))
	}
	return page, nil
}
