package memory

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/seckill/seckill/domain"
	"github.com/seckill/seckill/ports"
)

// Orders is an in-memory ports.Orders over the vouchers of a Vouchers, whose sold
// counters it moves.
type Orders struct {
	mu       sync.Mutex
	vouchers *Vouchers
	byID     map[domain.OrderID]domain.Order
	released map[domain.OrderID]bool
	// closedAt numbers the closed orders in the order they closed.
	closedAt map[domain.OrderID]int
	closings int
	// Err, when set, is returned by every call (a database that is down).
	Err error
	// Poison makes Persist fail, alone, for a batch holding one of these ids.
	Poison map[domain.OrderID]error
}

var (
	_ ports.Orders        = (*Orders)(nil)
	_ ports.VoucherOrders = (*Orders)(nil)
)

// NewOrders returns an empty repository over vouchers.
func NewOrders(vouchers *Vouchers) *Orders {
	return &Orders{vouchers: vouchers, byID: map[domain.OrderID]domain.Order{}, released: map[domain.OrderID]bool{},
		closedAt: map[domain.OrderID]int{}}
}

// SetErr sets Err while other goroutines use the repository.
func (r *Orders) SetErr(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.Err = err
}

// The reasons Persist gives, worded as the SQL adapter words them.
const (
	reasonLiveOrder    = "user already holds a live order for this voucher"
	reasonFailedBefore = "stored as failed by an earlier delivery"
	reasonSoldFull     = "sold counter full"
)

// Persist follows the SQL adapter's rules: it validates every reservation first
// (domain.Reservation.Validate; storing nothing when one is invalid), answers a repeated id as a redelivery, lets a
// user's oldest (lowest id) new order of a voucher win, and keeps the new orders a
// voucher's sold counter has room for in order id order, failing the rest.
func (r *Orders) Persist(_ context.Context, rs []domain.Reservation) ([]ports.PersistResult, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(rs) == 0 {
		return []ports.PersistResult{}, nil
	}
	if r.Err != nil {
		return nil, r.Err
	}
	for _, res := range rs {
		if err := res.Validate(); err != nil {
			return nil, fmt.Errorf("persist orders: order %s: %w", res.OrderID, err)
		}
		if err := r.Poison[res.OrderID]; err != nil {
			return nil, err
		}
	}
	r.vouchers.mu.Lock()
	defer r.vouchers.mu.Unlock()
	return ports.AnswerRepeats(rs, r.persistAll(ports.FirstOfEach(rs))), nil
}

// persistAll persists reservations of distinct ids, in the SQL adapter's order: by
// voucher, user and id for the one-live-order rule, then each voucher's new orders by
// id against its sold counter. r.mu and r.vouchers.mu are held.
func (r *Orders) persistAll(rs []domain.Reservation) map[domain.OrderID]ports.PersistResult {
	out := make(map[domain.OrderID]ports.PersistResult, len(rs))
	sorted := slices.Clone(rs)
	slices.SortFunc(sorted, func(a, b domain.Reservation) int {
		return cmp.Or(cmp.Compare(a.VoucherID, b.VoucherID), cmp.Compare(a.UserID, b.UserID), cmp.Compare(a.OrderID, b.OrderID))
	})
	fresh := map[domain.VoucherID][]domain.Reservation{}
	for _, res := range sorted {
		id := res.OrderID
		if o, ok := r.byID[id]; ok {
			out[id] = ports.PersistResult{OrderID: id, Outcome: ports.AlreadyPersisted}
			if o.Status == domain.StatusFailed {
				out[id] = ports.PersistResult{OrderID: id, Outcome: ports.Failed, Reason: reasonFailedBefore}
			}
			continue
		}
		if _, ok := r.vouchers.byID[res.VoucherID]; !ok {
			out[id] = ports.PersistResult{OrderID: id, Outcome: ports.VoucherGone, Reason: "voucher " + res.VoucherID.String() + " does not exist"}
			continue
		}
		o := res.Order(domain.StatusAwaitingPayment)
		if r.holdsLive(res.VoucherID, res.UserID) {
			o.Status = domain.StatusFailed
			r.store(o)
			out[id] = ports.PersistResult{OrderID: id, Outcome: ports.Failed, Reason: reasonLiveOrder}
			continue
		}
		r.store(o)
		fresh[res.VoucherID] = append(fresh[res.VoucherID], res)
	}
	for vid, news := range fresh {
		v := r.vouchers.byID[vid]
		slices.SortFunc(news, func(a, b domain.Reservation) int { return cmp.Compare(a.OrderID, b.OrderID) })
		for _, res := range news {
			if v.Sold+res.Quantity <= v.Stock {
				v.Sold += res.Quantity
				out[res.OrderID] = ports.PersistResult{OrderID: res.OrderID, Outcome: ports.Persisted}
				continue
			}
			o := r.byID[res.OrderID]
			o.Status = domain.StatusFailed
			r.store(o)
			out[res.OrderID] = ports.PersistResult{OrderID: res.OrderID, Outcome: ports.Failed, Reason: reasonSoldFull}
		}
		r.vouchers.byID[vid] = v
	}
	return out
}

// store keeps o, noting when it closed (the order Releases.Unreleased lists closed
// orders in). r.mu is held.
func (r *Orders) store(o domain.Order) {
	if !o.Status.HoldsStock() {
		if _, ok := r.closedAt[o.ID]; !ok {
			r.closings++
			r.closedAt[o.ID] = r.closings
		}
	}
	r.byID[o.ID] = o
}

func (r *Orders) holdsLive(v domain.VoucherID, u domain.UserID) bool {
	for _, o := range r.byID {
		if o.VoucherID == v && o.UserID == u && o.Status.HoldsStock() {
			return true
		}
	}
	return false
}

// Get returns an order or domain.ErrNotFound.
func (r *Orders) Get(_ context.Context, id domain.OrderID) (domain.Order, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.Err != nil {
		return domain.Order{}, r.Err
	}
	o, ok := r.byID[id]
	if !ok {
		return domain.Order{}, fmt.Errorf("order %s: %w", id, domain.ErrNotFound)
	}
	return o, nil
}

// ListByUser returns a page of a user's orders, newest first by ports.OrderKey, as
// the SQL adapter selects them.
func (r *Orders) ListByUser(_ context.Context, user domain.UserID, q ports.OrderQuery) ([]domain.Order, error) {
	return r.page(q.Limit, func(o domain.Order) bool {
		return o.UserID == user && (q.Voucher == 0 || o.VoucherID == q.Voucher) && (q.After == nil || ports.KeyOf(o).Compare(*q.After) > 0)
	}, func(a, b domain.Order) int { return ports.KeyOf(a).Compare(ports.KeyOf(b)) })
}

// ListByVoucher returns a page of a voucher's orders, by id ascending, as the SQL
// adapter selects them.
func (r *Orders) ListByVoucher(_ context.Context, voucher domain.VoucherID, q ports.VoucherOrderQuery) ([]domain.Order, error) {
	return r.page(q.Limit, func(o domain.Order) bool {
		return o.VoucherID == voucher && (q.Status == "" || o.Status == q.Status) && o.ID > q.After
	}, func(a, b domain.Order) int { return cmp.Compare(a.ID, b.ID) })
}

// page returns the first limit of the orders keep accepts, in the order sorted by
// order; the store's Err; or a *domain.ValidationError for a limit below 1.
func (r *Orders) page(limit int, keep func(domain.Order) bool, order func(a, b domain.Order) int) ([]domain.Order, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.Err != nil {
		return nil, r.Err
	}
	if limit < 1 {
		return nil, domain.Invalid("limit", "must be at least 1")
	}
	out := []domain.Order{}
	for _, o := range r.byID {
		if keep(o) {
			out = append(out, o)
		}
	}
	slices.SortFunc(out, order)
	return out[:min(len(out), limit)], nil
}

// UnitsByStatus sums the quantities of a voucher's orders by status. With at, it runs
// at under its lock and its vouchers', so no order and no voucher changes meanwhile.
func (r *Orders) UnitsByStatus(ctx context.Context, voucher domain.VoucherID, at func(context.Context) error) (map[domain.OrderStatus]int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.Err != nil {
		return nil, r.Err
	}
	out := map[domain.OrderStatus]int{}
	for _, o := range r.byID {
		if o.VoucherID == voucher {
			out[o.Status] += o.Quantity
		}
	}
	if at != nil {
		r.vouchers.mu.Lock()
		defer r.vouchers.mu.Unlock()
		if err := at(ctx); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Queue is an in-memory ports.Queue. Its consumers are one: Claim takes over every
// entry delivered and not acknowledged for at least minIdle (by time.Now, so a test in
// a synctest bubble controls it).
type Queue struct {
	mu      sync.Mutex
	seq     int
	entries []*entry
	// appended is closed by the next Append, waking the Reads waiting for it.
	appended chan struct{}
	// Dead holds the dead letters, with their reasons.
	Dead []DeadLetter
	// Err, when set, is returned by every call (Redis down).
	Err error
}

// DeadLetter is one dead-lettered delivery.
type DeadLetter struct {
	Delivery ports.Delivery
	Reason   string
}

type entry struct {
	d         ports.Delivery
	delivered bool
	acked     bool
	// deliveredAt is when the entry was last delivered.
	deliveredAt time.Time
}

var _ ports.Queue = (*Queue)(nil)

// SetErr sets Err while other goroutines use the queue.
func (q *Queue) SetErr(err error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.Err = err
}

// Append queues a delivery as the grab path would; an empty ID gets the next one.
func (q *Queue) Append(d ports.Delivery) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.seq++
	if d.ID == "" {
		d.ID = strconv.Itoa(q.seq)
	}
	q.entries = append(q.entries, &entry{d: d})
	if q.appended != nil {
		close(q.appended)
		q.appended = nil
	}
}

// Read hands out up to count entries never delivered from each voucher's queue,
// waiting at most block for one to be appended while there are none.
func (q *Queue) Read(ctx context.Context, count int, block time.Duration) ([]ports.Delivery, error) {
	var timeout <-chan time.Time
	for {
		ds, appended, err := q.take(ctx, count, true, func(e *entry) bool { return !e.delivered })
		if err != nil || len(ds) > 0 || block <= 0 {
			return ds, err
		}
		if timeout == nil {
			t := time.NewTimer(block)
			defer t.Stop()
			timeout = t.C
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("read queue: %w", ctx.Err())
		case <-timeout:
			return nil, nil
		case <-appended:
		}
	}
}

// Claim hands out again up to count entries delivered, not acknowledged, and idle for
// at least minIdle.
func (q *Queue) Claim(ctx context.Context, minIdle time.Duration, count int) ([]ports.Delivery, error) {
	now := time.Now()
	ds, _, err := q.take(ctx, count, false, func(e *entry) bool {
		return e.delivered && !e.acked && now.Sub(e.deliveredAt) >= minIdle
	})
	return ds, err
}

// take delivers up to count entries that want picks, of each voucher (perVoucher) or
// in all; when there are none it also returns a channel closed by the next Append.
func (q *Queue) take(ctx context.Context, count int, perVoucher bool, want func(*entry) bool) ([]ports.Delivery, <-chan struct{}, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.Err != nil {
		return nil, nil, q.Err
	}
	if err := ctx.Err(); err != nil {
		return nil, nil, fmt.Errorf("read queue: %w", err)
	}
	var out []ports.Delivery
	taken := map[domain.VoucherID]int{}
	now := time.Now()
	for _, e := range q.entries {
		if len(out) == count && !perVoucher {
			break
		}
		if want(e) && (!perVoucher || taken[e.d.VoucherID] < count) {
			taken[e.d.VoucherID]++
			e.delivered, e.deliveredAt = true, now
			e.d.Deliveries++
			out = append(out, e.d)
		}
	}
	if len(out) > 0 {
		return out, nil, nil
	}
	if q.appended == nil {
		q.appended = make(chan struct{})
	}
	return nil, q.appended, nil
}

// Ack acknowledges deliveries.
func (q *Queue) Ack(_ context.Context, ds ...ports.Delivery) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.Err != nil {
		return q.Err
	}
	for _, d := range ds {
		for _, e := range q.entries {
			if e.d.ID == d.ID {
				e.acked = true
			}
		}
	}
	return nil
}

// DeadLetter records d and acknowledges it.
func (q *Queue) DeadLetter(ctx context.Context, d ports.Delivery, reason string) error {
	if err := q.Ack(ctx, d); err != nil {
		return err
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	q.Dead = append(q.Dead, DeadLetter{Delivery: d, Reason: reason})
	return nil
}

// Refresh has nothing to do: the fake knows every entry at once.
func (q *Queue) Refresh(context.Context) error { return nil }

// Pending counts a voucher's entries not yet acknowledged.
func (q *Queue) Pending(voucher domain.VoucherID) int64 {
	q.mu.Lock()
	defer q.mu.Unlock()
	var n int64
	for _, e := range q.entries {
		if !e.acked && e.d.VoucherID == voucher {
			n++
		}
	}
	return n
}
