package memory

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"

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
