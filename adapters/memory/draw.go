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

// Entries is an in-memory ports.Entries of one draw — a voucher's, or a campaign's,
// whose vouchers' parts it counts apart: its entrants, the steps taken, the orders
// reserved (each user's, counted) and the backfill. Its entries are open until Close,
// whatever the clock; Take refuses steps of a draw its Draws has not recorded.
type Entries struct {
	mu    sync.Mutex
	draws *Draws
	// Entrants are the users entered; Chose the voucher each chose (EnterDrop).
	Entrants map[domain.UserID]bool
	Chose    map[domain.UserID]domain.VoucherID
	closed   bool
	// Taken counts the steps taken; Drawn is set once all were. A campaign's
	// vouchers count theirs in Parts.
	Taken int
	Drawn bool
	Parts map[domain.VoucherID]*Part
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

// Part is the progress of a campaign's voucher's part of the campaign's draw.
type Part struct {
	Taken int
	Drawn bool
}

// NewEntries returns the entries of a draw recorded in draws.
func NewEntries(draws *Draws) *Entries {
	return &Entries{draws: draws, Entrants: map[domain.UserID]bool{}, Chose: map[domain.UserID]domain.VoucherID{},
		Parts: map[domain.VoucherID]*Part{}, Reserved: map[domain.UserID]int{}}
}

// EnterDrop enters u choosing choice (the latest choice stands), or answers
// domain.ErrEntriesClosed after Close.
func (f *Entries) EnterDrop(_ context.Context, _ domain.Voucher, u domain.UserID, choice domain.VoucherID) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return 0, domain.ErrEntriesClosed
	}
	f.Entrants[u] = true
	f.Chose[u] = choice
	return len(f.Entrants), nil
}

// CloseDrop closes the entries and returns the entrants with their choices.
func (f *Entries) CloseDrop(context.Context, domain.Voucher) ([]domain.DropEntry, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closed = true
	out := make([]domain.DropEntry, 0, len(f.Chose))
	for u, v := range f.Chose {
		out = append(out, domain.DropEntry{User: u, Choice: v})
	}
	return out, nil
}

// part returns the progress of voucher id: its own Part for a campaign's voucher,
// else the draw's.
func (f *Entries) part(id domain.VoucherID) *Part {
	if c, _ := id.Campaign(); c == 0 {
		return &Part{Taken: f.Taken, Drawn: f.Drawn}
	}
	if f.Parts[id] == nil {
		f.Parts[id] = &Part{}
	}
	return f.Parts[id]
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

// Progress returns the steps of id taken, and whether all were.
func (f *Entries) Progress(_ context.Context, id domain.VoucherID) (int, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	p := f.part(id)
	return p.Taken, p.Drawn, nil
}

// Take takes steps from step from on, as ports.Entries.Take does.
func (f *Entries) Take(ctx context.Context, id domain.VoucherID, from, total int, steps []domain.DrawStep, _ []domain.OrderID) (int, int, error) {
	if _, err := f.draws.Get(ctx, id.Room()); err != nil {
		return 0, 0, fmt.Errorf("the steps of voucher %s's draw taken before it was recorded: %w", id, err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.FailAfter > 0 && f.calls == f.FailAfter {
		return 0, 0, domain.ErrUnavailable
	}
	f.calls++
	p := f.part(id)
	if from != p.Taken || p.Drawn {
		return p.Taken, 0, nil
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
	p.Taken, p.Drawn = from+len(steps), from+len(steps) >= total
	if c, _ := id.Campaign(); c == 0 {
		f.Taken, f.Drawn = p.Taken, p.Drawn
	}
	return p.Taken, n, nil
}
