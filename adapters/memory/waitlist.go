package memory

import (
	"context"
	"slices"
	"sync"

	"github.com/seckill/seckill/domain"
	"github.com/seckill/seckill/ports"
)

// Waitlist is an in-memory ports.Waitlist: one list per voucher, in joining order,
// with no sale state behind it (any voucher's list may be joined).
type Waitlist struct {
	mu    sync.Mutex
	lists map[domain.VoucherID][]domain.UserID
	// Orders are the order ids each user joined with.
	Orders map[domain.UserID]domain.OrderID
	// Err, when set, answers every Join.
	Err error
}

var _ ports.Waitlist = (*Waitlist)(nil)

// NewWaitlist returns empty waitlists.
func NewWaitlist() *Waitlist {
	return &Waitlist{lists: map[domain.VoucherID][]domain.UserID{}, Orders: map[domain.UserID]domain.OrderID{}}
}

// Join puts u at the end of v's list with order o, or finds it there.
func (w *Waitlist) Join(_ context.Context, v domain.VoucherID, u domain.UserID, o domain.OrderID) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.Err != nil {
		return 0, w.Err
	}
	if i := slices.Index(w.lists[v], u); i >= 0 {
		return i + 1, nil
	}
	w.lists[v] = append(w.lists[v], u)
	w.Orders[u] = o
	return len(w.lists[v]), nil
}

// Position returns u's position on v's list, or domain.ErrNotFound.
func (w *Waitlist) Position(_ context.Context, v domain.VoucherID, u domain.UserID) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if i := slices.Index(w.lists[v], u); i >= 0 {
		return i + 1, nil
	}
	return 0, domain.ErrNotFound
}

// Leave takes u off v's list.
func (w *Waitlist) Leave(_ context.Context, v domain.VoucherID, u domain.UserID) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.leave(v, u)
	return nil
}

func (w *Waitlist) leave(v domain.VoucherID, u domain.UserID) {
	w.lists[v] = slices.DeleteFunc(w.lists[v], func(x domain.UserID) bool { return x == u })
}

// Drop takes u off every list.
func (w *Waitlist) Drop(_ context.Context, u domain.UserID) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	for v := range w.lists {
		w.leave(v, u)
	}
	return nil
}

// Length returns how many wait on v's list.
func (w *Waitlist) Length(_ context.Context, v domain.VoucherID) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.lists[v]), nil
}
