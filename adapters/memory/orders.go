package memory

import (
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
	// Err, when set, is returned by every call (a database that is down).
	Err error
	// Poison makes Persist fail, alone, for a batch holding one of these ids.
	Poison map[domain.OrderID]error
}

var _ ports.Orders = (*Orders)(nil)

// NewOrders returns an empty repository over vouchers.
func NewOrders(vouchers *Vouchers) *Orders {
	return &Orders{vouchers: vouchers, byID: map[domain.OrderID]domain.Order{}, released: map[domain.OrderID]bool{}}
}

// SetErr sets Err while other goroutines use the repository.
func (r *Orders) SetErr(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.Err = err
}

// Persist follows the PostgreSQL adapter's rules, one reservation at a time; a batch
// holding an invalid reservation (domain.Reservation.Validate) stores nothing.
func (r *Orders) Persist(_ context.Context, rs []domain.Reservation) ([]ports.PersistResult, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
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
	out := make([]ports.PersistResult, len(rs))
	for i, res := range rs {
		out[i] = r.persistOne(res)
	}
	return out, nil
}

func (r *Orders) persistOne(res domain.Reservation) ports.PersistResult {
	result := ports.PersistResult{OrderID: res.OrderID}
	if o, ok := r.byID[res.OrderID]; ok {
		result.Outcome = ports.AlreadyPersisted
		if o.Status == domain.StatusFailed {
			result.Outcome, result.Reason = ports.Failed, "stored as failed before"
		}
		return result
	}
	v, ok := r.vouchers.byID[res.VoucherID]
	if !ok {
		return ports.PersistResult{OrderID: res.OrderID, Outcome: ports.VoucherGone, Reason: "voucher " + res.VoucherID.String() + " does not exist"}
	}
	o := domain.Order{ID: res.OrderID, VoucherID: res.VoucherID, UserID: res.UserID, Quantity: res.Quantity,
		Status: domain.StatusAwaitingPayment, CreatedAt: res.At}
	switch {
	case r.holdsLive(res.VoucherID, res.UserID):
		o.Status, result.Outcome, result.Reason = domain.StatusFailed, ports.Failed, "user already holds a live order for this voucher"
	case v.Sold+res.Quantity > v.Stock:
		o.Status, result.Outcome, result.Reason = domain.StatusFailed, ports.Failed, "sold counter full"
	default:
		v.Sold += res.Quantity
		r.vouchers.byID[v.ID] = v
		result.Outcome = ports.Persisted
	}
	r.byID[o.ID] = o
	return result
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
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.Err != nil {
		return nil, r.Err
	}
	if q.Limit < 1 {
		return nil, domain.Invalid("limit", "must be at least 1")
	}
	out := []domain.Order{}
	for _, o := range r.byID {
		if o.UserID == user && (q.Voucher == 0 || o.VoucherID == q.Voucher) && (q.After == nil || ports.KeyOf(o).Compare(*q.After) > 0) {
			out = append(out, o)
		}
	}
	slices.SortFunc(out, func(a, b domain.Order) int {
		return ports.KeyOf(a).Compare(ports.KeyOf(b))
	})
	return out[:min(len(out), q.Limit)], nil
}

// UnitsByStatus sums the quantities of a voucher's orders by status.
func (r *Orders) UnitsByStatus(_ context.Context, voucher domain.VoucherID) (map[domain.OrderStatus]int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[domain.OrderStatus]int{}
	for _, o := range r.byID {
		if o.VoucherID == voucher {
			out[o.Status] += o.Quantity
		}
	}
	return out, nil
}

// Queue is an in-memory ports.Queue. Claim ignores idle times: it hands over every
// entry pending and not in hand, which is what a test of recovery wants.
type Queue struct {
	mu      sync.Mutex
	seq     int
	entries []*entry
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
}

var _ ports.Queue = (*Queue)(nil)

// Append queues a delivery as the grab path would; an empty ID gets the next one.
func (q *Queue) Append(d ports.Delivery) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.seq++
	if d.ID == "" {
		d.ID = strconv.Itoa(q.seq)
	}
	q.entries = append(q.entries, &entry{d: d})
}

// Read hands out up to count entries never delivered.
func (q *Queue) Read(_ context.Context, count int, _ time.Duration) ([]ports.Delivery, error) {
	return q.take(count, func(e *entry) bool { return !e.delivered })
}

// Claim hands out up to count delivered, unacknowledged entries again.
func (q *Queue) Claim(_ context.Context, _ time.Duration, count int) ([]ports.Delivery, error) {
	return q.take(count, func(e *entry) bool { return e.delivered && !e.acked })
}

func (q *Queue) take(count int, want func(*entry) bool) ([]ports.Delivery, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.Err != nil {
		return nil, q.Err
	}
	var out []ports.Delivery
	for _, e := range q.entries {
		if len(out) == count {
			break
		}
		if want(e) {
			e.delivered = true
			e.d.Deliveries++
			out = append(out, e.d)
		}
	}
	return out, nil
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
