package memory

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/seckill/seckill/domain"
	"github.com/seckill/seckill/ports"
)

// Stock is an in-memory ports.Stock.
type Stock struct {
	mu       sync.Mutex
	reserves int
	sales    map[domain.VoucherID]*sale
	// campaigns holds the campaigns' terms (WarmCampaign), beside their vouchers' sales.
	campaigns map[domain.CampaignID]campaignTerms
	// passes holds the outstanding passes (IssuePass), as the Redis passes set does:
	// their expiry in Unix ms.
	passes map[passHolder]int64
	// Reserved lists every reservation made, in order: what the Redis adapter appends
	// to a voucher's stream.
	Reserved []domain.Reservation
	// Err, when set, is returned by every call (a dependency that is down).
	Err error
	// Queue, when set, receives every reservation, as the Redis script appends it to
	// the voucher's stream.
	Queue *Queue
	// Clock, when set, judges the grabs that carry no time, as Redis's TIME does (the
	// sale's clock); the host's clock when nil.
	Clock ports.Clock
	// Window, when set, is the payment window each reservation it takes is recorded
	// with: its Expires is its At plus Window, as the Redis and PostgreSQL strategies
	// record it. Zero records none.
	Window domain.PaymentWindow
	// DuringSnapshot, when set, is called by Snapshot (without the lock) after it
	// read the remaining units and the reservations and before it reads the queue, as
	// a grab or a release may come after the Redis adapter's pages passed its place;
	// the snapshot is then not Consistent.
	DuringSnapshot func()
}

// passHolder is whose pass of which voucher.
type passHolder struct {
	voucher domain.VoucherID
	user    domain.UserID
}

type sale struct {
	v         domain.Voucher
	remaining int
	buyers    map[domain.UserID]domain.OrderID
	// released holds the orders Release was called for: closed for good, never
	// restored again.
	released map[domain.OrderID]bool
	// unread: the workers do not read its queue (StopReading).
	unread bool
	// restoring gates grabs: set by Warm (live orders hold units) and by
	// StockAudit.Restoring, cleared by Restored.
	restoring bool
}

var _ ports.Stock = (*Stock)(nil)

// NewStock returns an empty stock.
func NewStock() *Stock {
	return &Stock{sales: map[domain.VoucherID]*sale{}, campaigns: map[domain.CampaignID]campaignTerms{},
		passes: map[passHolder]int64{}}
}

// IssuePass records p as outstanding, as a waiting room admitting p.User adds its
// member to the Redis passes set (redisstore.Keys.Passes): it replaces the user's
// earlier pass of the voucher. A grab of a waiting room is taken with it once.
func (s *Stock) IssuePass(p domain.Pass) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.passes[passHolder{p.Voucher, p.User}] = p.Expires.UnixMilli()
}

// Warm loads v if absent, with v.Stock - v.Sold units left (never below 0); with
// v.Sold above 0 it is loaded restoring, as the Redis adapter does: grabs answer
// unavailable until Restored. It reports ports.WarmRestoring while it is restoring.
func (s *Stock) Warm(_ context.Context, v domain.Voucher) (ports.WarmOutcome, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.Err != nil {
		return ports.WarmPresent, s.Err
	}
	sl, ok := s.sales[v.ID]
	if !ok {
		sl = &sale{v: v, remaining: max(v.Stock-v.Sold, 0), buyers: map[domain.UserID]domain.OrderID{},
			released: map[domain.OrderID]bool{}, restoring: v.Sold > 0}
		s.sales[v.ID] = sl
		if !sl.restoring {
			return ports.WarmLoaded, nil
		}
	}
	if sl.restoring {
		return ports.WarmRestoring, nil
	}
	if sl.v.Version != v.Version {
		return ports.WarmStale, nil
	}
	return ports.WarmPresent, nil
}

// Reserve judges r by the grab rule (domain.Sale.Judge) against the loaded voucher,
// as the Redis and PostgreSQL strategies do; a waiting room's grab is taken with an
// outstanding pass (IssuePass) of r.Pass's expiry, which it uses up. A campaign's
// voucher is judged against its campaign too (campaignSale), as reserve.lua judges it.
func (s *Stock) Reserve(_ context.Context, r domain.Reservation) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reserves++
	// As the Redis and PostgreSQL strategies do, before anything else: a quantity
	// below 1 would put units back on sale.
	if r.Quantity < 1 {
		return domain.Invalid("quantity", "must be at least 1")
	}
	if s.Err != nil {
		return s.Err
	}
	if r.At.IsZero() {
		r.At = time.Now()
		if s.Clock != nil {
			r.At = s.Clock.Now()
		}
	}
	if r.Expires.IsZero() && s.Window > 0 {
		r.Expires = s.Window.Deadline(r.At)
	}
	sl, ok := s.sales[r.VoucherID]
	if !ok {
		return domain.ErrNotFound
	}
	if sl.restoring {
		return fmt.Errorf("voucher %s: sale state being restored: %w", r.VoucherID, domain.ErrUnavailable)
	}
	holder := passHolder{r.VoucherID, r.UserID}
	pass, issued := s.passes[holder]
	state := domain.Sale{
		Admission:       sl.v.Admission,
		Challenge:       sl.v.Challenge,
		PassOutstanding: issued && !r.Pass.IsZero() && pass == r.Pass.UnixMilli(),
		Paused:          sl.v.Paused,
		BeginsAt:        sl.v.BeginsAt,
		EndsAt:          sl.v.EndsAt,
		PerUserLimit:    sl.v.PerUserLimit,
		Remaining:       sl.remaining,
	}
	if campaign, number := r.VoucherID.Campaign(); campaign != 0 {
		c, err := s.campaignSale(campaign, number, r.UserID)
		if err != nil {
			return err
		}
		state.Campaign = &c
	}
	if err := state.Judge(r, sl.buyers[r.UserID]); err != nil {
		return err
	}
	if sl.v.Admission == domain.AdmissionWaitingRoom {
		delete(s.passes, holder)
	}
	sl.remaining -= r.Quantity
	sl.buyers[r.UserID] = r.OrderID
	s.Reserved = append(s.Reserved, r)
	if s.Queue != nil {
		s.Queue.Append(ports.Delivery{VoucherID: r.VoucherID, Reservation: r})
	}
	return nil
}

// SetPaused sets a loaded voucher's paused flag.
func (s *Stock) SetPaused(_ context.Context, id domain.VoucherID, paused bool) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.Err != nil {
		return false, s.Err
	}
	sl, ok := s.sales[id]
	if !ok {
		return false, nil
	}
	sl.v.Paused = paused
	return true, nil
}

// Edit carries v's terms into its loaded sale as mode says, as the Redis adapter does:
// the remaining units move by the change of stock (never below 0; in
// ports.EditHeldStrict refused with domain.ErrNotEnoughUnits instead, and with an
// error wrapping domain.ErrUnavailable while restoring).
func (s *Stock) Edit(_ context.Context, v domain.Voucher, mode ports.EditMode) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.Err != nil {
		return false, s.Err
	}
	sl, ok := s.sales[v.ID]
	if !ok || mode == ports.EditIfNewer && sl.v.Version >= v.Version {
		return false, nil
	}
	if mode == ports.EditHeldStrict && sl.restoring {
		return false, fmt.Errorf("voucher %s: sale state being restored: %w", v.ID, domain.ErrUnavailable)
	}
	left := sl.remaining + v.Stock - sl.v.Stock
	if left < 0 && mode == ports.EditHeldStrict {
		return false, domain.ErrNotEnoughUnits
	}
	if sl.v.Terms(v) && sl.v.Version == v.Version {
		return false, nil
	}
	sl.remaining = max(left, 0)
	sl.v.Stock, sl.v.BeginsAt, sl.v.EndsAt, sl.v.PerUserLimit, sl.v.Version = v.Stock, v.BeginsAt, v.EndsAt, v.PerUserLimit, v.Version
	return true, nil
}

// ReserveCalls counts the calls to Reserve so far.
func (s *Stock) ReserveCalls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reserves
}

// Release returns o's units if the user's reservation still names o. It returns a
// *domain.ValidationError for a quantity below 1, which would take units instead.
func (s *Stock) Release(_ context.Context, o domain.Order) (bool, error) {
	if o.Quantity < 1 {
		return false, domain.Invalid("quantity", "must be at least 1")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.Err != nil {
		return false, s.Err
	}
	sl, ok := s.sales[o.VoucherID]
	if !ok {
		return false, nil
	}
	sl.released[o.ID] = true
	if sl.buyers[o.UserID] != o.ID {
		return false, nil
	}
	delete(sl.buyers, o.UserID)
	sl.remaining += o.Quantity
	return true, nil
}

// Remaining returns the units left of each loaded voucher among ids.
func (s *Stock) Remaining(_ context.Context, ids ...domain.VoucherID) (map[domain.VoucherID]int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.Err != nil {
		return nil, s.Err
	}
	out := make(map[domain.VoucherID]int, len(ids))
	for _, id := range ids {
		if sl, ok := s.sales[id]; ok {
			out[id] = sl.remaining
		}
	}
	return out, nil
}

// Reservations is an in-memory ports.Reservations over a Stock and its Queue.
type Reservations struct {
	Stock *Stock
}

var _ ports.Reservations = Reservations{}

// Find returns a reservation the user still holds under id.
func (r Reservations) Find(_ context.Context, user domain.UserID, id domain.OrderID) (domain.Reservation, error) {
	s := r.Stock
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, res := range s.Reserved {
		if res.OrderID == id && (user == 0 || res.UserID == user) && s.sales[res.VoucherID].buyers[res.UserID] == id {
			return res, nil
		}
	}
	return domain.Reservation{}, fmt.Errorf("reservation %s: %w", id, domain.ErrNotFound)
}

// ForUser returns the reservations user still holds.
func (r Reservations) ForUser(_ context.Context, user domain.UserID) ([]domain.Reservation, error) {
	s := r.Stock
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []domain.Reservation
	for _, res := range s.Reserved {
		if res.UserID == user && s.sales[res.VoucherID].buyers[user] == res.OrderID {
			out = append(out, res)
		}
	}
	return out, nil
}
