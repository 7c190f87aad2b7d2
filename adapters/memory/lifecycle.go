package memory

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/seckill/seckill/domain"
	"github.com/seckill/seckill/ports"
)

var (
	_ ports.OrderLifecycle = (*Orders)(nil)
	_ ports.Releases       = (*Orders)(nil)
	_ ports.OrderAudit     = (*Orders)(nil)
	_ ports.Payments       = (*Payments)(nil)
)

// Transition moves an awaiting order, as the PostgreSQL adapter does: only from a
// status the domain's state machine lets become to (domain.OrderStatus.CanBecome),
// keeping receipt's answer with the change (ports.ErrClaimLost, nothing changed, when
// its claim no longer holds its key).
func (r *Orders) Transition(_ context.Context, id domain.OrderID, user domain.UserID, to domain.OrderStatus, receipt *ports.Receipt[domain.Order]) (domain.Order, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.Err != nil {
		return domain.Order{}, r.Err
	}
	if to != domain.StatusPaid && to != domain.StatusCancelled && to != domain.StatusExpired {
		return domain.Order{}, domain.Invalid("status", "must be paid, cancelled or expired")
	}
	o, ok := r.byID[id]
	if !ok || (user != 0 && o.UserID != user) {
		return domain.Order{}, fmt.Errorf("order %s: %w", id, domain.ErrNotFound)
	}
	if !o.Status.CanBecome(to) {
		return domain.Order{}, fmt.Errorf("order %s is %s: %w", id, o.Status, domain.ErrInvalidState)
	}
	moved := o
	moved.Status = to
	if err := answer(r.vouchers.Idempotency, receipt, moved, func() { moved = r.move(o, to) }); err != nil {
		return domain.Order{}, fmt.Errorf("transition order %s: %w", id, err)
	}
	return moved, nil
}

// move sets o's status, giving its units back to the sold counter when it closes.
// r.mu is held.
func (r *Orders) move(o domain.Order, to domain.OrderStatus) domain.Order {
	o.Status = to
	r.store(o)
	if !to.HoldsStock() {
		r.vouchers.mu.Lock()
		v := r.vouchers.byID[o.VoucherID]
		v.Sold -= o.Quantity
		r.vouchers.byID[v.ID] = v
		r.vouchers.mu.Unlock()
	}
	return o
}

// ExpireDue expires up to limit orders awaiting payment whose window lapsed at now
// (w.Lapsed), as the SQL adapter picks them: those with a recorded deadline first, by
// deadline then id, then those without one by creation then id. A limit below 1 is a
// *domain.ValidationError.
func (r *Orders) ExpireDue(_ context.Context, now time.Time, w domain.PaymentWindow, limit int) ([]domain.Order, error) {
	if limit < 1 {
		return nil, fmt.Errorf("expire due orders: %w", domain.Invalid("limit", "must be at least 1"))
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.Err != nil {
		return nil, r.Err
	}
	due := []domain.Order{}
	for _, o := range r.byID {
		if o.Status.CanBecome(domain.StatusExpired) && w.Lapsed(o, now) {
			due = append(due, o)
		}
	}
	slices.SortFunc(due, func(a, b domain.Order) int {
		// Recorded deadlines first, by deadline; then the others by creation.
		ka, kb := a.ExpiresAt, b.ExpiresAt
		if ka.IsZero() != kb.IsZero() {
			return map[bool]int{true: 1, false: -1}[ka.IsZero()]
		}
		if ka.IsZero() {
			ka, kb = a.CreatedAt, b.CreatedAt
		}
		return cmp.Or(ka.Compare(kb), cmp.Compare(a.ID, b.ID))
	})
	if len(due) > limit {
		due = due[:limit]
	}
	for i, o := range due {
		due[i] = r.move(o, domain.StatusExpired)
	}
	// Returned oldest first, as the SQL adapter returns them.
	slices.SortFunc(due, func(a, b domain.Order) int {
		return cmp.Or(a.CreatedAt.Compare(b.CreatedAt), cmp.Compare(a.ID, b.ID))
	})
	return due, nil
}

// Unreleased returns closed orders not marked released, in the order they closed. A
// limit below 1 is a *domain.ValidationError.
func (r *Orders) Unreleased(_ context.Context, limit int) ([]domain.Order, error) {
	if limit < 1 {
		return nil, fmt.Errorf("list unreleased orders: %w", domain.Invalid("limit", "must be at least 1"))
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.Err != nil {
		return nil, r.Err
	}
	out := []domain.Order{}
	for _, o := range r.byID {
		if !o.Status.HoldsStock() && !r.released[o.ID] {
			out = append(out, o)
		}
	}
	slices.SortFunc(out, func(a, b domain.Order) int {
		return cmp.Or(cmp.Compare(r.closedAt[a.ID], r.closedAt[b.ID]), cmp.Compare(a.ID, b.ID))
	})
	if len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

// MarkReleased records the releases of closed orders; ids of unknown or live orders
// are ignored, as the SQL adapter ignores them.
func (r *Orders) MarkReleased(_ context.Context, ids ...domain.OrderID) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(ids) == 0 {
		return nil
	}
	if r.Err != nil {
		return r.Err
	}
	for _, id := range ids {
		if o, ok := r.byID[id]; ok && !o.Status.HoldsStock() {
			r.released[id] = true
		}
	}
	return nil
}

// Ledger returns a voucher and its orders, oldest (by id) first.
func (r *Orders) Ledger(_ context.Context, id domain.VoucherID) (ports.Ledger, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.Err != nil {
		return ports.Ledger{}, r.Err
	}
	r.vouchers.mu.Lock()
	v, ok := r.vouchers.byID[id]
	r.vouchers.mu.Unlock()
	if !ok {
		return ports.Ledger{}, fmt.Errorf("voucher %s: %w", id, domain.ErrNotFound)
	}
	l := ports.Ledger{Voucher: v, Orders: []domain.Order{}}
	for _, o := range r.byID {
		if o.VoucherID == id {
			l.Orders = append(l.Orders, o)
		}
	}
	sort.Slice(l.Orders, func(i, j int) bool { return l.Orders[i].ID < l.Orders[j].ID })
	return l, nil
}

// RecountSold sets sold to the units of live orders.
func (r *Orders) RecountSold(_ context.Context, id domain.VoucherID) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.Err != nil {
		return 0, r.Err
	}
	r.vouchers.mu.Lock()
	defer r.vouchers.mu.Unlock()
	v, ok := r.vouchers.byID[id]
	if !ok {
		return 0, fmt.Errorf("voucher %s: %w", id, domain.ErrNotFound)
	}
	v.Sold = 0
	for _, o := range r.byID {
		if o.VoucherID == id && o.Status.HoldsStock() {
			v.Sold += o.Quantity
		}
	}
	r.vouchers.byID[id] = v
	return v.Sold, nil
}

// SetStatus overwrites an order's status, as a test injecting drift would.
func (r *Orders) SetStatus(id domain.OrderID, s domain.OrderStatus) {
	r.mu.Lock()
	defer r.mu.Unlock()
	o := r.byID[id]
	o.Status = s
	r.store(o)
}

// Payments is a ports.Payments that records what it was asked.
type Payments struct {
	mu sync.Mutex
	// Authorized and Voided list the orders, in call order.
	Authorized, Voided []domain.OrderID
	// Err, when set, is what Authorize returns.
	Err error
}

// Authorize records o, or fails with Err.
func (p *Payments) Authorize(_ context.Context, o domain.Order) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.Err != nil {
		return p.Err
	}
	p.Authorized = append(p.Authorized, o.ID)
	return nil
}

// Void records o.
func (p *Payments) Void(_ context.Context, o domain.Order) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.Voided = append(p.Voided, o.ID)
	return nil
}
