package application

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

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
		r, ferr := uc.reservations.Find(ctx, id)
		if ferr != nil {
			return domain.Order{}, ferr
		}
		o = domain.Order{ID: r.OrderID, VoucherID: r.VoucherID, UserID: r.UserID, Quantity: r.Quantity,
			Status: domain.StatusQueued, CreatedAt: r.At}
	} else if err != nil {
		return domain.Order{}, fmt.Errorf("get order: %w", err)
	}
	if !caller.Admin && o.UserID != caller.User {
		return domain.Order{}, domain.ErrNotFound
	}
	return o, nil
}

// ListOrders reads the caller's orders, newest first: those persisted, and those
// reserved and still queued for persistence.
type ListOrders struct {
	orders       ports.Orders
	reservations ports.Reservations
}

// NewListOrders returns the use case.
func NewListOrders(orders ports.Orders, reservations ports.Reservations) *ListOrders {
	return &ListOrders{orders: orders, reservations: reservations}
}

// Handle returns the caller's orders; voucher 0 means all vouchers.
func (uc *ListOrders) Handle(ctx context.Context, caller Caller, voucher domain.VoucherID) ([]domain.Order, error) {
	persisted, err := uc.orders.ListByUser(ctx, caller.User, voucher)
	if err != nil {
		return nil, fmt.Errorf("list orders: %w", err)
	}
	held, err := uc.reservations.ForUser(ctx, caller.User)
	if err != nil {
		return nil, fmt.Errorf("list reservations: %w", err)
	}
	known := make(map[domain.OrderID]bool, len(persisted))
	for _, o := range persisted {
		known[o.ID] = true
	}
	out := persisted
	for _, r := range held {
		if known[r.OrderID] || (voucher != 0 && r.VoucherID != voucher) {
			continue
		}
		out = append(out, domain.Order{ID: r.OrderID, VoucherID: r.VoucherID, UserID: r.UserID,
			Quantity: r.Quantity, Status: domain.StatusQueued, CreatedAt: r.At})
	}
	// Order ids are time-ordered: the highest is the newest.
	slices.SortFunc(out, func(a, b domain.Order) int { return cmp.Compare(b.ID, a.ID) })
	return out, nil
}

// VoucherStats is where a voucher's units are.
type VoucherStats struct {
	Stock           int
	Remaining       int
	Queued          int
	AwaitingPayment int
	Paid            int
	Cancelled       int
	Expired         int
	Failed          int
	// Pending counts queue entries not yet acknowledged.
	Pending int64
	// OldestQueued is how long the oldest reservation not yet persisted has waited
	// since it was taken; 0 when none waits.
	OldestQueued time.Duration
}

// GetVoucherStats reads a voucher's stats.
type GetVoucherStats struct {
	vouchers ports.Vouchers
	orders   ports.Orders
	audit    ports.StockAudit
	clock    ports.Clock
}

// NewGetVoucherStats returns the use case.
func NewGetVoucherStats(vouchers ports.Vouchers, orders ports.Orders, audit ports.StockAudit, clock ports.Clock) *GetVoucherStats {
	return &GetVoucherStats{vouchers: vouchers, orders: orders, audit: audit, clock: clock}
}

// Handle returns the stats, or domain.ErrNotFound. Each figure is read from where it
// lives — remaining units and queued (reserved, not yet persisted) units from Redis,
// the others from the database — so that at a quiet moment
// stock = remaining + queued + awaiting_payment + paid is a real check of agreement.
func (uc *GetVoucherStats) Handle(ctx context.Context, id domain.VoucherID) (VoucherStats, error) {
	v, err := uc.vouchers.Get(ctx, id)
	if err != nil {
		return VoucherStats{}, err
	}
	snap, err := uc.audit.Snapshot(ctx, id)
	if err != nil {
		return VoucherStats{}, fmt.Errorf("sale state: %w", err)
	}
	units, err := uc.orders.UnitsByStatus(ctx, id)
	if err != nil {
		return VoucherStats{}, fmt.Errorf("order units: %w", err)
	}
	s := VoucherStats{
		Stock:           v.Stock,
		Remaining:       v.Stock - v.Sold,
		AwaitingPayment: units[domain.StatusAwaitingPayment],
		Paid:            units[domain.StatusPaid],
		Cancelled:       units[domain.StatusCancelled],
		Expired:         units[domain.StatusExpired],
		Failed:          units[domain.StatusFailed],
		Pending:         int64(len(snap.Unacked)),
	}
	if snap.Present {
		s.Remaining = snap.Remaining
	}
	for _, r := range snap.Unacked {
		s.Queued += r.Quantity
		s.OldestQueued = max(s.OldestQueued, uc.clock.Now().Sub(r.At))
	}
	return s, nil
}
