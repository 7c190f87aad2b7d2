package memory

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/seckill/seckill/domain"
	"github.com/seckill/seckill/ports"
)

// Draws is an in-memory ports.Draws whose pending draws are those the test sets
// (PendingVouchers), whatever the moment asked.
type Draws struct {
	mu    sync.Mutex
	draws map[domain.VoucherID]domain.Draw
	// PendingVouchers is what Pending returns.
	PendingVouchers []domain.Voucher
}

var _ ports.Draws = (*Draws)(nil)

// NewDraws returns a store of no draw, pending the vouchers given.
func NewDraws(pending ...domain.Voucher) *Draws {
	return &Draws{draws: map[domain.VoucherID]domain.Draw{}, PendingVouchers: pending}
}

// Record stores d unless its voucher has a draw, and returns the one stored.
func (f *Draws) Record(_ context.Context, d domain.Draw) (domain.Draw, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if got, ok := f.draws[d.Voucher]; ok {
		return got, nil
	}
	f.draws[d.Voucher] = d
	return d, nil
}

// Get returns voucher id's draw, or domain.ErrNotFound.
func (f *Draws) Get(_ context.Context, id domain.VoucherID) (domain.Draw, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if d, ok := f.draws[id]; ok {
		return d, nil
	}
	return domain.Draw{}, domain.ErrNotFound
}

// Pending returns PendingVouchers.
func (f *Draws) Pending(context.Context, time.Time) ([]domain.Voucher, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.PendingVouchers, nil
}

// Entries is an in-memory ports.Entries of one draw: its entrants, the steps taken,
// the orders reserved (each user's, counted) and the backfill. Its entries are open
// until Close, whatever the clock; Take refuses steps of a draw its Draws has not
// recorded.
type Entries struct {
	mu    sync.Mutex
	draws *Draws
	// Entrants are the users entered.
	Entrants map[domain.UserID]bool
	closed   bool
	// Taken counts the steps taken; Drawn is set once all were.
	Taken int
	Drawn bool
	// Reserved counts the orders each winner was reserved; Backfill lists the others,
	// in the order their steps were taken.
	Reserved map[domain.UserID]int
	Backfill []domain.UserID
	calls    int
	// FailAfter, when above 0, makes Take fail (domain.ErrUnavailable) once that many
	// calls have succeeded.
	FailAfter int
}

var _ ports.Entries = (*Entries)(nil)

// NewEntries returns the entries of a draw recorded in draws.
func NewEntries(draws *Draws) *Entries {
	return &Entries{draws: draws, Entrants: map[domain.UserID]bool{}, Reserved: map[domain.UserID]int{}}
}

// Enter enters u, or answers domain.ErrEntriesClosed after Close.
func (f *Entries) Enter(_ context.Context, _ domain.Voucher, u domain.UserID) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return 0, domain.ErrEntriesClosed
	}
	f.Entrants[u] = true
	return len(f.Entrants), nil
}

// Count returns how many users entered.
func (f *Entries) Count(context.Context, domain.VoucherID) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.Entrants), nil
}

// Close closes the entries and returns the entrants.
func (f *Entries) Close(context.Context, domain.Voucher) ([]domain.UserID, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closed = true
	out := make([]domain.UserID, 0, len(f.Entrants))
	for u := range f.Entrants {
		out = append(out, u)
	}
	return out, nil
}

// Progress returns the steps taken, and whether all were.
func (f *Entries) Progress(context.Context, domain.VoucherID) (int, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.Taken, f.Drawn, nil
}

// Take takes steps from step from on, as ports.Entries.Take does.
func (f *Entries) Take(ctx context.Context, id domain.VoucherID, from, total int, steps []domain.DrawStep, _ []domain.OrderID) (int, int, error) {
	if _, err := f.draws.Get(ctx, id); err != nil {
		return 0, 0, fmt.Errorf("the steps of voucher %s's draw taken before it was recorded: %w", id, err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.FailAfter > 0 && f.calls == f.FailAfter {
		return 0, 0, domain.ErrUnavailable
	}
	f.calls++
	if from != f.Taken || f.Drawn {
		return f.Taken, 0, nil
	}
	n := 0
	for _, st := range steps {
		if st.Winner {
			f.Reserved[st.User]++
			n++
		} else {
			f.Backfill = append(f.Backfill, st.User)
		}
	}
	f.Taken = from + len(steps)
	f.Drawn = f.Taken >= total
	return f.Taken, n, nil
}
