package memory

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/seckill/seckill/domain"
	"github.com/seckill/seckill/ports"
)

var _ ports.StockAudit = (*Stock)(nil)

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

// Save copies every voucher's sale state and every campaign's terms and returns what
// puts that copy back, as a Redis that restarts from a snapshot taken now would come
// back with them.
func (s *Stock) Save() (restore func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	saved := make(map[domain.VoucherID]sale, len(s.sales))
	for id, sl := range s.sales {
		c := *sl
		c.buyers, c.released = maps.Clone(sl.buyers), maps.Clone(sl.released)
		saved[id] = c
	}
	// Terms are replaced whole, never changed in place: a shallow copy holds.
	campaigns := maps.Clone(s.campaigns)
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.campaigns = maps.Clone(campaigns)
		s.sales = make(map[domain.VoucherID]*sale, len(saved))
		for id, sl := range saved {
			c := sl
			c.buyers, c.released = maps.Clone(sl.buyers), maps.Clone(sl.released)
			s.sales[id] = &c
		}
	}
}
