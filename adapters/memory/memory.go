// Package memory holds in-memory implementations of the ports, for use-case tests.
// They follow the same contracts as the Redis and PostgreSQL adapters but keep
// everything in maps behind one mutex; they are not for production.
package memory

import (
	"context"
	"crypto/sha256"
	"fmt"
	"slices"
	"sort"
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
	return &Stock{sales: map[domain.VoucherID]*sale{}, passes: map[passHolder]int64{}}
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
// outstanding pass (IssuePass) of r.Pass's expiry, which it uses up.
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

// Vouchers is an in-memory ports.Vouchers, with the audit log its changes append to.
type Vouchers struct {
	mu     sync.Mutex
	byID   map[domain.VoucherID]domain.Voucher
	nextID domain.VoucherID
	// Idempotency keeps the answers of the receipts Create and the Orders over these
	// vouchers are given.
	Idempotency *Idempotency
	// Log is the audit log Create and Update append to.
	Log *AuditLog
}

var _ ports.Vouchers = (*Vouchers)(nil)

// NewVouchers returns an empty repository, with an empty store of idempotency keys
// and an empty audit log.
func NewVouchers() *Vouchers {
	return &Vouchers{byID: map[domain.VoucherID]domain.Voucher{}, Idempotency: NewIdempotency(), Log: &AuditLog{}}
}

// Create stores v with the next id, its audit entry and r's answer with it
// (ports.ErrClaimLost, nothing stored, when r's claim no longer holds its key).
func (r *Vouchers) Create(_ context.Context, v *domain.Voucher, by domain.Author, receipt *ports.Receipt[domain.Voucher]) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	stored := *v
	stored.ID = r.nextID + 1
	stored.CreatedAt = time.Unix(int64(stored.ID), 0).UTC()
	stored.Version = 0
	err := answer(r.Idempotency, receipt, stored, func() {
		r.nextID = stored.ID
		r.byID[stored.ID] = stored
		r.Log.add(domain.VoucherAudit(domain.AuditVoucherCreate, by, nil, stored))
	})
	if err != nil {
		return err
	}
	*v = stored
	return nil
}

// Update runs u under the repository's lock, as the SQL adapter runs it in one
// transaction: Change, then (when something changed) the voucher and its entry, then
// Commit and the receipt's answer, all or nothing.
func (r *Vouchers) Update(ctx context.Context, id domain.VoucherID, u ports.VoucherUpdate) (domain.Voucher, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	before, ok := r.byID[id]
	if !ok {
		return domain.Voucher{}, fmt.Errorf("voucher %s: %w", id, domain.ErrNotFound)
	}
	after, err := u.Change(before)
	if err != nil {
		return domain.Voucher{}, err
	}
	after.ID, after.Sold, after.CreatedAt = before.ID, before.Sold, before.CreatedAt
	if after.Sold > after.Stock {
		return domain.Voucher{}, domain.ErrNotEnoughUnits
	}
	if u.Commit != nil {
		if err := u.Commit(ctx, before, after); err != nil {
			return domain.Voucher{}, err
		}
	}
	err = answer(r.Idempotency, u.Receipt, after, func() {
		if after != before {
			r.byID[id] = after
			r.Log.add(domain.VoucherAudit(u.Action, u.By, &before, after))
		}
	})
	if err != nil {
		return domain.Voucher{}, err
	}
	return after, nil
}

// Hold calls fn with the voucher under the repository's lock.
func (r *Vouchers) Hold(ctx context.Context, id domain.VoucherID, fn func(context.Context, domain.Voucher) error) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	v, ok := r.byID[id]
	if !ok {
		return fmt.Errorf("voucher %s: %w", id, domain.ErrNotFound)
	}
	return fn(ctx, v)
}

// AuditLog is an in-memory ports.AuditLog.
type AuditLog struct {
	mu      sync.Mutex
	entries []domain.AuditEntry
}

var _ ports.AuditLog = (*AuditLog)(nil)

// add appends e with the next id.
func (l *AuditLog) add(e domain.AuditEntry) {
	l.mu.Lock()
	defer l.mu.Unlock()
	e.ID = int64(len(l.entries) + 1)
	e.At = time.Unix(e.ID, 0).UTC()
	l.entries = append(l.entries, e)
}

// Append appends e.
func (l *AuditLog) Append(_ context.Context, e domain.AuditEntry) error {
	l.add(e)
	return nil
}

// List returns a page of entries, newest first, as the SQL adapter selects them.
func (l *AuditLog) List(_ context.Context, q ports.AuditQuery) ([]domain.AuditEntry, error) {
	if q.Limit < 1 {
		return nil, domain.Invalid("limit", "must be at least 1")
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []domain.AuditEntry
	for i := len(l.entries) - 1; i >= 0 && len(out) < q.Limit; i-- {
		e := l.entries[i]
		if (q.Voucher == 0 || e.VoucherID == q.Voucher) && (q.Before == 0 || e.ID < q.Before) {
			out = append(out, e)
		}
	}
	return out, nil
}

// Entries returns every entry appended so far, oldest first.
func (l *AuditLog) Entries() []domain.AuditEntry {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.entries)
}

// Put replaces a stored voucher, as a test arranging a state would.
func (r *Vouchers) Put(v domain.Voucher) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.byID[v.ID] = v
}

// Get returns a voucher or domain.ErrNotFound.
func (r *Vouchers) Get(_ context.Context, id domain.VoucherID) (domain.Voucher, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	v, ok := r.byID[id]
	if !ok {
		return domain.Voucher{}, fmt.Errorf("voucher %s: %w", id, domain.ErrNotFound)
	}
	return v, nil
}

// List returns a page of vouchers, newest first, as the SQL adapter selects them.
func (r *Vouchers) List(_ context.Context, q ports.VoucherQuery) ([]domain.Voucher, error) {
	if q.Limit < 1 {
		return nil, domain.Invalid("limit", "must be at least 1")
	}
	inStatus := map[ports.SaleStatus]func(domain.Voucher) bool{
		"":                 func(domain.Voucher) bool { return true },
		ports.SaleUpcoming: func(v domain.Voucher) bool { return v.BeginsAt.After(q.Now) },
		ports.SaleLive:     func(v domain.Voucher) bool { return !v.BeginsAt.After(q.Now) && v.EndsAt.After(q.Now) },
		ports.SaleEnded:    func(v domain.Voucher) bool { return !v.EndsAt.After(q.Now) },
	}[q.Status]
	if inStatus == nil {
		return nil, domain.Invalid("status", "must be live, upcoming or ended")
	}
	out := r.filter(func(v domain.Voucher) bool { return (q.Before == 0 || v.ID < q.Before) && inStatus(v) })
	return out[:min(len(out), q.Limit)], nil
}

// Active returns the vouchers not ended at now, newest first.
func (r *Vouchers) Active(_ context.Context, now time.Time) ([]domain.Voucher, error) {
	return r.filter(func(v domain.Voucher) bool { return v.EndsAt.After(now) }), nil
}

func (r *Vouchers) filter(keep func(domain.Voucher) bool) []domain.Voucher {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []domain.Voucher
	for _, v := range r.byID {
		if keep(v) {
			out = append(out, v)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID > out[j].ID })
	return out
}

// Clock is a ports.Clock that tells the time it is set to.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

var _ ports.Clock = (*Clock)(nil)

// NewClock returns a clock stopped at now.
func NewClock(now time.Time) *Clock { return &Clock{now: now} }

// Now returns the set time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Set moves the clock to now.
func (c *Clock) Set(now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = now
}

// OrderIDs mints predictable ids: o1, o2, …
type OrderIDs struct {
	mu sync.Mutex
	n  int
}

var _ ports.OrderIDs = (*OrderIDs)(nil)

// NewOrderID returns the next id.
func (g *OrderIDs) NewOrderID() domain.OrderID {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.n++
	return domain.OrderID(fmt.Sprintf("o%d", g.n))
}

// DerivedOrderID returns "d" and the hex of at's milliseconds and key's SHA-256 head,
// the same for the same two.
func (g *OrderIDs) DerivedOrderID(at time.Time, key []byte) domain.OrderID {
	sum := sha256.Sum256(key)
	return domain.OrderID(fmt.Sprintf("d%x-%x", at.UnixMilli(), sum[:8]))
}
