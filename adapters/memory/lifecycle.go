package memory

import (
	"cmp"
	"context"
	"fmt"
	"maps"
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
	_ ports.StockAudit     = (*Stock)(nil)
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

// Snapshot returns the sale state of a voucher.
func (s *Stock) Snapshot(_ context.Context, id domain.VoucherID) (ports.StockSnapshot, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.Err != nil {
		return ports.StockSnapshot{}, s.Err
	}
	sl, ok := s.sales[id]
	if !ok {
		return ports.StockSnapshot{}, nil
	}
	snap := ports.StockSnapshot{Present: true, Stock: sl.v.Stock, Remaining: sl.remaining, Consistent: true, Read: !sl.unread}
	for _, r := range s.Reserved {
		if r.VoucherID == id && sl.buyers[r.UserID] == r.OrderID {
			snap.Reservations = append(snap.Reservations, r)
		}
	}
	if s.DuringSnapshot != nil {
		s.mu.Unlock()
		s.DuringSnapshot()
		s.mu.Lock()
		snap.Consistent = false
	}
	if s.Queue != nil {
		s.Queue.mu.Lock()
		for _, e := range s.Queue.entries {
			if !e.acked && e.d.VoucherID == id && e.d.Malformed == "" {
				snap.Unacked = append(snap.Unacked, e.d.Reservation)
			}
		}
		s.Queue.mu.Unlock()
	}
	return snap, nil
}

// Tally returns the counts of the sale state, summed from Snapshot.
func (s *Stock) Tally(ctx context.Context, id domain.VoucherID) (ports.StockTally, error) {
	snap, err := s.Snapshot(ctx, id)
	if err != nil || !snap.Present {
		return ports.StockTally{}, err
	}
	t := ports.StockTally{Present: true, Stock: snap.Stock, Remaining: snap.Remaining, Pending: int64(len(snap.Unacked))}
	for _, r := range snap.Unacked {
		t.Queued += r.Quantity
	}
	if len(snap.Unacked) > 0 {
		t.Oldest = snap.Unacked[0].At
	}
	return t, nil
}

// Restore makes each live order its user's reservation, whatever the user held,
// unless the order was released, and forgets each closed order's reservation (without
// touching the remaining units), marking it released. An invalid one
// (domain.Reservation.Validate) is refused before anything is recorded, as the Redis
// adapter refuses it.
func (s *Stock) Restore(_ context.Context, os ...domain.Order) ([]bool, error) {
	for _, o := range os {
		if err := o.Reservation().Validate(); err != nil {
			return nil, err
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.Err != nil {
		return nil, s.Err
	}
	out := make([]bool, len(os))
	for i, o := range os {
		sl, ok := s.sales[o.VoucherID]
		switch {
		case !ok:
		case !o.Status.HoldsStock():
			sl.released[o.ID] = true
			if sl.buyers[o.UserID] == o.ID {
				delete(sl.buyers, o.UserID)
			}
			out[i] = true
		case !sl.released[o.ID]:
			sl.buyers[o.UserID] = o.ID
			if !slices.ContainsFunc(s.Reserved, func(x domain.Reservation) bool { return x.OrderID == o.ID }) {
				s.Reserved = append(s.Reserved, o.Reservation())
			}
			out[i] = true
		}
	}
	return out, nil
}

// Holds reports which of orders hold a reservation of voucher id now.
func (s *Stock) Holds(_ context.Context, id domain.VoucherID, orders []domain.OrderID) (map[domain.OrderID]bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.Err != nil {
		return nil, s.Err
	}
	out := make(map[domain.OrderID]bool, len(orders))
	sl, ok := s.sales[id]
	for _, o := range orders {
		out[o] = false
		if !ok {
			continue
		}
		for _, held := range sl.buyers {
			if held == o {
				out[o] = true
			}
		}
	}
	return out, nil
}

// Requeue appends r to the queue again. An invalid r (domain.Reservation.Validate) is
// refused, and a voucher without sale state is domain.ErrNotFound, as the Redis
// adapter answers.
func (s *Stock) Requeue(_ context.Context, r domain.Reservation) error {
	if err := r.Validate(); err != nil {
		return err
	}
	s.mu.Lock()
	_, ok := s.sales[r.VoucherID]
	err := s.Err
	s.mu.Unlock()
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("requeue reservation: voucher %s: %w", r.VoucherID, domain.ErrNotFound)
	}
	if s.Queue != nil {
		s.Queue.Append(ports.Delivery{VoucherID: r.VoucherID, Reservation: r})
	}
	// As the Redis adapter puts the voucher back among the queues the workers read.
	s.mu.Lock()
	if sl, ok := s.sales[r.VoucherID]; ok {
		sl.unread = false
	}
	s.mu.Unlock()
	return nil
}

// StopReading has the workers no longer read a voucher's queue, as a Redis that took
// the voucher out of the set the workers read with entries still in its stream would.
func (s *Stock) StopReading(id domain.VoucherID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sales[id].unread = true
}

// Restoring makes a loaded voucher's grabs answer domain.ErrUnavailable until
// Restored.
func (s *Stock) Restoring(_ context.Context, id domain.VoucherID) error {
	return s.setRestoring(id, true)
}

// Restored takes a loaded voucher's grabs again, whether Restoring or Warm (a voucher
// with live orders, as warm.lua) marked it.
func (s *Stock) Restored(_ context.Context, id domain.VoucherID) error {
	return s.setRestoring(id, false)
}

func (s *Stock) setRestoring(id domain.VoucherID, restoring bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.Err != nil {
		return s.Err
	}
	if sl, ok := s.sales[id]; ok {
		sl.restoring = restoring
	}
	return nil
}

// Recount sets remaining to stock minus the reserved units.
func (s *Stock) Recount(_ context.Context, id domain.VoucherID) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.Err != nil {
		return 0, s.Err
	}
	sl, ok := s.sales[id]
	if !ok {
		return 0, fmt.Errorf("recount stock: voucher %s: %w", id, domain.ErrNotFound)
	}
	held := 0
	for _, r := range s.Reserved {
		if r.VoucherID == id && sl.buyers[r.UserID] == r.OrderID {
			held += r.Quantity
		}
	}
	sl.remaining = max(0, sl.v.Stock-held)
	return sl.remaining, nil
}

// Forget drops a user's reservation without returning its units, as a test injecting
// drift would.
func (s *Stock) Forget(id domain.VoucherID, user domain.UserID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.sales[id].buyers, user)
}

// SetRemaining overwrites a voucher's units left, as a test injecting drift would.
func (s *Stock) SetRemaining(id domain.VoucherID, remaining int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sales[id].remaining = remaining
}

// Drop removes a voucher's whole sale state, as a Redis restart would.
func (s *Stock) Drop(id domain.VoucherID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.sales, id)
}

// Save copies every voucher's sale state and returns what puts that copy back, as a
// Redis that restarts from a snapshot taken now would come back with it.
func (s *Stock) Save() (restore func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	saved := make(map[domain.VoucherID]sale, len(s.sales))
	for id, sl := range s.sales {
		c := *sl
		c.buyers, c.released = maps.Clone(sl.buyers), maps.Clone(sl.released)
		saved[id] = c
	}
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.sales = make(map[domain.VoucherID]*sale, len(saved))
		for id, sl := range saved {
			c := sl
			c.buyers, c.released = maps.Clone(sl.buyers), maps.Clone(sl.released)
			s.sales[id] = &c
		}
	}
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
