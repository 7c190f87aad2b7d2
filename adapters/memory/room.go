package memory

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/seckill/seckill/domain"
	"github.com/seckill/seckill/ports"
)

// WaitingRoom is an in-memory ports.WaitingRoom of one voucher's room, on a clock:
// early joiners until Close, then the line, the installed order before the late
// joiners. Every place reads an admission rate of 2 a second; Admit lets users in
// while fewer than the window hold a pass (a pass is never used here, and Admit
// counts the expired ones too; Figures counts those the clock has not reached).
type WaitingRoom struct {
	mu    sync.Mutex
	clock ports.Clock
	early map[domain.UserID]bool
	late  []domain.UserID
	// Order is the early joiners' order, once installed.
	Order     []domain.UserID
	installed bool
	closed    bool
	// Closes counts the calls of Close that closed the early joining.
	Closes int
	// FailInstalls is how many calls of Install are still to fail (domain.ErrUnavailable).
	FailInstalls int
	// Admitted counts the users let in.
	Admitted int
	passes   map[domain.UserID]time.Time
}

var _ ports.WaitingRoom = (*WaitingRoom)(nil)

// NewWaitingRoom returns an empty room judged by clock.
func NewWaitingRoom(clock ports.Clock) *WaitingRoom {
	return &WaitingRoom{clock: clock, early: map[domain.UserID]bool{}, passes: map[domain.UserID]time.Time{}}
}

// Join puts u in the room, early before v's start unless closed.
func (r *WaitingRoom) Join(_ context.Context, v domain.Voucher, u domain.UserID) (bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.early[u] {
		return true, nil
	}
	if slices.Contains(r.late, u) {
		return false, nil
	}
	if !r.closed && r.clock.Now().Before(v.BeginsAt) {
		r.early[u] = true
		return true, nil
	}
	r.late = append(r.late, u)
	return false, nil
}

// line is the installed order, then the late joiners.
func (r *WaitingRoom) line() []domain.UserID { return append(slices.Clone(r.Order), r.late...) }

// Place returns where u stands, or domain.ErrNotFound when it never joined.
func (r *WaitingRoom) Place(_ context.Context, _ domain.VoucherID, u domain.UserID) (ports.RoomPlace, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	p := ports.RoomPlace{Early: r.early[u], Admitted: int64(r.Admitted), Rate: 2, PassExpires: r.passes[u]}
	if i := slices.Index(r.line(), u); i >= 0 && r.installed {
		p.Position = int64(i + 1)
	} else if !p.Early && !slices.Contains(r.late, u) {
		return ports.RoomPlace{}, domain.ErrNotFound
	}
	return p, nil
}

// Installed reports whether Install ran.
func (r *WaitingRoom) Installed(context.Context, domain.VoucherID) (bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.installed, nil
}

// Close ends the early joining once the clock reached v's start, and returns the
// early joiners.
func (r *WaitingRoom) Close(_ context.Context, v domain.Voucher) ([]domain.UserID, bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.clock.Now().Before(v.BeginsAt) {
		return nil, false, nil
	}
	r.closed = true
	r.Closes++
	out := make([]domain.UserID, 0, len(r.early))
	for u := range r.early {
		out = append(out, u)
	}
	return out, true, nil
}

// Install puts order before the late joiners, unless FailInstalls says to fail.
func (r *WaitingRoom) Install(_ context.Context, _ domain.Voucher, order []domain.UserID) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.FailInstalls > 0 {
		r.FailInstalls--
		return domain.ErrUnavailable
	}
	r.Order, r.installed = slices.Clone(order), true
	return nil
}

// Admit gives the next users in line a pass until lifetime from now while fewer than
// window hold one (and, given sale, while it is open with units on sale).
func (r *WaitingRoom) Admit(_ context.Context, _ domain.Voucher, window int, lifetime time.Duration, sale *ports.RoomSale) (ports.Admission, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	a := ports.Admission{Expires: r.clock.Now().Add(lifetime)}
	line := r.line()
	for len(r.passes) < window && r.Admitted < len(line) && (sale == nil || sale.Open && sale.OnSale > 0) {
		u := line[r.Admitted]
		r.passes[u] = a.Expires
		r.Admitted++
		a.Users = append(a.Users, u)
	}
	a.Outstanding = len(r.passes)
	return a, nil
}

// Spend forgets user's pass when it expires at expires.
func (r *WaitingRoom) Spend(_ context.Context, _ domain.VoucherID, user domain.UserID, expires time.Time) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if e, ok := r.passes[user]; ok && e.Equal(expires) {
		delete(r.passes, user)
	}
	return nil
}

// Figures counts the room's joiners (the early ones, or the installed order once
// there is one), the users let in, and the passes the clock has not reached.
func (r *WaitingRoom) Figures(context.Context, domain.VoucherID) (ports.RoomFigures, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	f := ports.RoomFigures{Early: int64(len(r.early)), Late: int64(len(r.late)), Admitted: int64(r.Admitted)}
	if r.installed {
		f.Early = int64(len(r.Order))
	}
	now := r.clock.Now()
	for _, expires := range r.passes {
		if expires.After(now) {
			f.Outstanding++
		}
	}
	return f, nil
}

// Shuffles is an in-memory ports.Shuffles.
type Shuffles struct {
	mu sync.Mutex
	by map[domain.VoucherID]domain.SeededShuffle
}

var _ ports.Shuffles = (*Shuffles)(nil)

// NewShuffles returns a store of no shuffle.
func NewShuffles() *Shuffles {
	return &Shuffles{by: map[domain.VoucherID]domain.SeededShuffle{}}
}

// Save stores sh unless its voucher has a shuffle, and returns the one stored.
func (s *Shuffles) Save(_ context.Context, sh domain.SeededShuffle) (domain.SeededShuffle, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if old, ok := s.by[sh.Voucher]; ok {
		return old, nil
	}
	sh.Count = len(sh.Entrants)
	s.by[sh.Voucher] = sh
	return sh, nil
}

// Get returns voucher id's shuffle (without its entrants unless entrants), or
// domain.ErrNotFound.
func (s *Shuffles) Get(_ context.Context, id domain.VoucherID, entrants bool) (domain.SeededShuffle, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sh, ok := s.by[id]
	if !ok {
		return domain.SeededShuffle{}, domain.ErrNotFound
	}
	if !entrants {
		sh.Entrants = nil
	}
	return sh, nil
}
