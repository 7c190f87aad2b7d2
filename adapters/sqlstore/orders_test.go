package sqlstore_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"github.com/seckill/seckill/adapters/sqlstore"
	"github.com/seckill/seckill/domain"
	"github.com/seckill/seckill/ports"
)

// The reasons Persist gives, as the callers read them.
const (
	reasonLiveOrder    = "user already holds a live order for this voucher"
	reasonFailedBefore = "stored as failed by an earlier delivery"
	reasonSoldFull     = "sold counter full"
)

// orderID returns the n-th order id: 26 characters that sort as n does, like the
// time-ordered ULIDs the application mints.
func orderID(n int) domain.OrderID {
	return domain.OrderID(fmt.Sprintf("01KB%022d", n))
}

// reserve returns the reservation of order n: qty units of voucher v for user, made
// n seconds after t0.
func reserve(n int, v domain.VoucherID, user int64, qty int) domain.Reservation {
	return domain.Reservation{
		OrderID:   orderID(n),
		VoucherID: v,
		UserID:    domain.UserID(user),
		Quantity:  qty,
		At:        t0.Add(time.Duration(n) * time.Second),
	}
}

// orderFixture is a migrated database with the repositories over it.
type orderFixture struct {
	db       *bun.DB
	orders   *sqlstore.Orders
	vouchers *sqlstore.Vouchers
}

func newOrderFixture(t *testing.T) orderFixture {
	t.Helper()
	db := openMigrated(t)
	return orderFixture{db: db, orders: sqlstore.NewOrders(db), vouchers: sqlstore.NewVouchers(db)}
}

// voucher creates a voucher with stock units.
func (f orderFixture) voucher(t *testing.T, stock int) domain.VoucherID {
	t.Helper()
	v := newVoucher(fmt.Sprintf("stock %d", stock), t0, t0.Add(time.Hour))
	v.Stock, v.PerUserLimit = stock, 1
	return create(t, f.vouchers, v).ID
}

func (f orderFixture) persist(t *testing.T, rs ...domain.Reservation) []ports.PersistResult {
	t.Helper()
	got, err := f.orders.Persist(context.Background(), rs)
	if err != nil {
		t.Fatalf("Persist: %v", err)
	}
	if len(got) != len(rs) {
		t.Fatalf("Persist returned %d results for %d reservations: %+v", len(got), len(rs), got)
	}
	for i, r := range rs {
		if got[i].OrderID != r.OrderID {
			t.Fatalf("result %d is for order %s, want %s (input order): %+v", i, got[i].OrderID, r.OrderID, got)
		}
	}
	return got
}

func (f orderFixture) sold(t *testing.T, v domain.VoucherID) int {
	t.Helper()
	got, err := f.vouchers.Get(context.Background(), v)
	if err != nil {
		t.Fatalf("Get voucher %d: %v", v, err)
	}
	return got.Sold
}

func (f orderFixture) count(t *testing.T) int {
	t.Helper()
	n, err := f.db.NewSelect().Table("orders").Count(context.Background())
	if err != nil {
		t.Fatalf("count orders: %v", err)
	}
	return int(n)
}

func (f orderFixture) get(t *testing.T, id domain.OrderID) domain.Order {
	t.Helper()
	o, err := f.orders.Get(context.Background(), id)
	if err != nil {
		t.Fatalf("Get(%s): %v", id, err)
	}
	return o
}

// result is what Persist should answer for one reservation.
func result(r domain.Reservation, outcome ports.PersistOutcome, reason string) ports.PersistResult {
	return ports.PersistResult{OrderID: r.OrderID, Outcome: outcome, Reason: reason}
}

// asOrder is the order r becomes with status, as read back from the database.
func asOrder(r domain.Reservation, status domain.OrderStatus) domain.Order {
	return domain.Order{
		ID:        r.OrderID,
		VoucherID: r.VoucherID,
		UserID:    r.UserID,
		Quantity:  r.Quantity,
		Status:    status,
		CreatedAt: r.At.UTC().Truncate(time.Microsecond),
	}
}

func TestPersistBatch(t *testing.T) {
	f := newOrderFixture(t)
	v, w := f.voucher(t, 100), f.voucher(t, 100)
	// Out of id and user order, over two vouchers: results still follow the input.
	rs := []domain.Reservation{reserve(3, v, 30, 3), reserve(1, w, 10, 1), reserve(2, v, 20, 2), reserve(4, w, 5, 4)}

	got := f.persist(t, rs...)
	for i, r := range rs {
		if want := result(r, ports.Persisted, ""); got[i] != want {
			t.Fatalf("result %d = %+v, want %+v", i, got[i], want)
		}
		if got, want := f.get(t, r.OrderID), asOrder(r, domain.StatusAwaitingPayment); got != want {
			t.Fatalf("stored order =\n%+v, want\n%+v", got, want)
		}
	}
	if got, want := f.sold(t, v), 3+2; got != want {
		t.Fatalf("sold of voucher v = %d, want %d", got, want)
	}
	if got, want := f.sold(t, w), 1+4; got != want {
		t.Fatalf("sold of voucher w = %d, want %d", got, want)
	}
	if o := f.get(t, rs[0].OrderID); o.CreatedAt.Location() != time.UTC {
		t.Fatalf("CreatedAt %v is not in UTC", o.CreatedAt)
	}
}

// A redelivered batch changes nothing and says so.
func TestPersistRedelivery(t *testing.T) {
	f := newOrderFixture(t)
	v := f.voucher(t, 100)
	rs := []domain.Reservation{reserve(1, v, 1, 2), reserve(2, v, 2, 1), reserve(3, v, 3, 1)}
	f.persist(t, rs...)

	for round := range 2 {
		got := f.persist(t, rs...)
		for i, r := range rs {
			if want := result(r, ports.AlreadyPersisted, ""); got[i] != want {
				t.Fatalf("redelivery %d: result %d = %+v, want %+v", round, i, got[i], want)
			}
		}
		if got, want := f.sold(t, v), 4; got != want {
			t.Fatalf("redelivery %d: sold = %d, want %d", round, got, want)
		}
		if got, want := f.count(t), 3; got != want {
			t.Fatalf("redelivery %d: %d orders stored, want %d", round, got, want)
		}
	}
}

// Two workers handed the same batch at once (a claimed message whose first consumer
// was only slow) store each order once and count its units once; each order is
// reported Persisted by exactly one of them.
func TestPersistSameBatchConcurrently(t *testing.T) {
	f := newOrderFixture(t)
	vs := []domain.VoucherID{f.voucher(t, 10_000), f.voucher(t, 10_000)}
	const rounds, size = 20, 10
	want := map[domain.VoucherID]int{}
	n := 0
	for round := range rounds {
		var batch []domain.Reservation
		for range size {
			n++
			r := reserve(n, vs[n%2], int64(n), 1+n%3)
			batch = append(batch, r)
			want[r.VoucherID] += r.Quantity
		}
		// The second worker sees the batch in another order: Persist must lock in an
		// order of its own, or the two would deadlock.
		other := slices.Clone(batch)
		rand.Shuffle(len(other), func(i, j int) { other[i], other[j] = other[j], other[i] })

		var results [2][]ports.PersistResult
		var errs [2]error
		var wg sync.WaitGroup
		for i, b := range [][]domain.Reservation{batch, other} {
			wg.Go(func() { results[i], errs[i] = f.orders.Persist(context.Background(), b) })
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Fatalf("round %d: worker %d: Persist: %v", round, i, err)
			}
		}
		outcomes := map[domain.OrderID][]ports.PersistOutcome{}
		for _, rs := range results {
			for _, res := range rs {
				outcomes[res.OrderID] = append(outcomes[res.OrderID], res.Outcome)
			}
		}
		for _, r := range batch {
			got := outcomes[r.OrderID]
			slices.Sort(got)
			if want := []ports.PersistOutcome{ports.Persisted, ports.AlreadyPersisted}; !slices.Equal(got, want) {
				t.Fatalf("round %d: order %s outcomes %v, want one Persisted and one AlreadyPersisted", round, r.OrderID, got)
			}
		}
	}

	if got, want := f.count(t), rounds*size; got != want {
		t.Fatalf("%d orders stored, want %d", got, want)
	}
	for _, v := range vs {
		if got, want := f.sold(t, v), want[v]; got != want {
			t.Fatalf("sold of voucher %d = %d, want %d", v, got, want)
		}
	}
}

func TestPersistUserHoldsLiveOrder(t *testing.T) {
	f := newOrderFixture(t)
	v := f.voucher(t, 100)
	const user = 7
	first := reserve(1, v, user, 1)
	f.persist(t, first)

	// Another id for the same user and voucher fails, and is kept visibly failed.
	second := reserve(2, v, user, 2)
	if got, want := f.persist(t, second)[0], result(second, ports.Failed, reasonLiveOrder); got != want {
		t.Fatalf("second live order: %+v, want %+v", got, want)
	}
	if got, want := f.get(t, second.OrderID), asOrder(second, domain.StatusFailed); got != want {
		t.Fatalf("stored =\n%+v, want\n%+v", got, want)
	}
	if got, want := f.sold(t, v), 1; got != want {
		t.Fatalf("sold = %d after a failed order, want %d", got, want)
	}
	// Its redelivery answers Failed again, so the caller's (idempotent) release is
	// retried should the first delivery have died before it; nothing else changes.
	if got, want := f.persist(t, second)[0], result(second, ports.Failed, reasonFailedBefore); got != want {
		t.Fatalf("redelivered failed order: %+v, want %+v", got, want)
	}

	// Two ids of one user in one batch: the first (older) wins.
	u := int64(user + 1)
	both := f.persist(t, reserve(4, v, u, 1), reserve(3, v, u, 1))
	if got, want := []ports.PersistOutcome{both[0].Outcome, both[1].Outcome}, []ports.PersistOutcome{ports.Failed, ports.Persisted}; !slices.Equal(got, want) {
		t.Fatalf("two live orders of one user in a batch: %+v, want the older persisted", both)
	}

	// Once the live order is closed, the user may order again.
	setStatus(t, f.db, string(first.OrderID), domain.StatusCancelled)
	third := reserve(5, v, user, 1)
	if got, want := f.persist(t, third)[0], result(third, ports.Persisted, ""); got != want {
		t.Fatalf("order after cancelling: %+v, want %+v", got, want)
	}
	if got, want := f.get(t, third.OrderID).Status, domain.StatusAwaitingPayment; got != want {
		t.Fatalf("new order is %s, want %s", got, want)
	}
	// The test cancelled by hand without returning units, so sold keeps them.
	if got, want := f.sold(t, v), 1+1+1; got != want {
		t.Fatalf("sold = %d, want %d", got, want)
	}
}

// The sold counter's guard: a batch the counter cannot take whole keeps the oldest
// orders that fit and fails the rest, whatever order it arrives in.
func TestPersistGuard(t *testing.T) {
	t.Run("single units", func(t *testing.T) {
		f := newOrderFixture(t)
		v := f.voucher(t, 3)
		var rs []domain.Reservation
		for n := 1; n <= 5; n++ {
			rs = append(rs, reserve(n, v, int64(n), 1))
		}
		rand.Shuffle(len(rs), func(i, j int) { rs[i], rs[j] = rs[j], rs[i] })

		got := f.persist(t, rs...)
		for i, r := range rs {
			want := result(r, ports.Persisted, "")
			status := domain.StatusAwaitingPayment
			if r.OrderID > orderID(3) {
				want = result(r, ports.Failed, reasonSoldFull)
				status = domain.StatusFailed
			}
			if got[i] != want {
				t.Fatalf("result %d = %+v, want %+v", i, got[i], want)
			}
			if got, want := f.get(t, r.OrderID), asOrder(r, status); got != want {
				t.Fatalf("stored =\n%+v, want\n%+v", got, want)
			}
		}
		if got, want := f.sold(t, v), 3; got != want {
			t.Fatalf("sold = %d, want %d", got, want)
		}

		// Nothing fits any more: a new order fails outright.
		late := reserve(6, v, 6, 1)
		if got, want := f.persist(t, late)[0], result(late, ports.Failed, reasonSoldFull); got != want {
			t.Fatalf("order on a full counter: %+v, want %+v", got, want)
		}
		if got, want := f.sold(t, v), 3; got != want {
			t.Fatalf("sold = %d, want %d", got, want)
		}
	})

	t.Run("quantities", func(t *testing.T) {
		f := newOrderFixture(t)
		v := f.voucher(t, 5)
		f.persist(t, reserve(1, v, 1, 1))
		// 4 left: 2 fits, 3 does not, the next 2 still does.
		rs := []domain.Reservation{reserve(2, v, 2, 2), reserve(3, v, 3, 3), reserve(4, v, 4, 2)}
		got := f.persist(t, rs...)
		want := []ports.PersistResult{
			result(rs[0], ports.Persisted, ""),
			result(rs[1], ports.Failed, reasonSoldFull),
			result(rs[2], ports.Persisted, ""),
		}
		if !slices.Equal(got, want) {
			t.Fatalf("Persist =\n%+v, want\n%+v", got, want)
		}
		if got, want := f.sold(t, v), 5; got != want {
			t.Fatalf("sold = %d, want %d", got, want)
		}
	})
}

// Workers persisting different batches of one voucher at once never oversell it.
func TestPersistCompetingBatches(t *testing.T) {
	f := newOrderFixture(t)
	const stock, workers, size = 10, 4, 5
	v := f.voucher(t, stock)

	var wg sync.WaitGroup
	results := make([][]ports.PersistResult, workers)
	errs := make([]error, workers)
	for w := range workers {
		var batch []domain.Reservation
		for i := range size {
			n := w*size + i + 1
			batch = append(batch, reserve(n, v, int64(n), 1))
		}
		wg.Go(func() { results[w], errs[w] = f.orders.Persist(context.Background(), batch) })
	}
	wg.Wait()

	counts := map[ports.PersistOutcome]int{}
	for w, err := range errs {
		if err != nil {
			t.Fatalf("worker %d: Persist: %v", w, err)
		}
		for _, res := range results[w] {
			counts[res.Outcome]++
		}
	}
	if want := map[ports.PersistOutcome]int{ports.Persisted: stock, ports.Failed: workers*size - stock}; !maps.Equal(counts, want) {
		t.Fatalf("outcomes %v, want %v", counts, want)
	}
	if got, want := f.sold(t, v), stock; got != want {
		t.Fatalf("sold = %d, want %d", got, want)
	}
	if got, want := f.count(t), workers*size; got != want {
		t.Fatalf("%d orders stored, want %d", got, want)
	}
}

func TestPersistVoucherGone(t *testing.T) {
	f := newOrderFixture(t)
	v := f.voucher(t, 100)
	gone := v + 1000
	rs := []domain.Reservation{reserve(1, v, 1, 1), reserve(2, gone, 2, 1), reserve(3, v, 3, 2), reserve(4, gone+1, 4, 1)}

	got := f.persist(t, rs...)
	wantOutcomes := []ports.PersistOutcome{ports.Persisted, ports.VoucherGone, ports.Persisted, ports.VoucherGone}
	for i, res := range got {
		if res.Outcome != wantOutcomes[i] {
			t.Fatalf("result %d = %+v, want outcome %d", i, res, wantOutcomes[i])
		}
		if res.Outcome == ports.VoucherGone && res.Reason == "" {
			t.Fatalf("result %d = %+v, want a reason", i, res)
		}
	}
	for _, r := range []domain.Reservation{rs[1], rs[3]} {
		if _, err := f.orders.Get(context.Background(), r.OrderID); !errors.Is(err, domain.ErrNotFound) {
			t.Fatalf("Get(%s) of a gone voucher's order: %v, want domain.ErrNotFound", r.OrderID, err)
		}
	}
	if got, want := f.sold(t, v), 3; got != want {
		t.Fatalf("sold = %d, want %d", got, want)
	}
	if got, want := f.count(t), 2; got != want {
		t.Fatalf("%d orders stored, want %d", got, want)
	}

	// A batch of nothing but gone vouchers stores nothing either.
	only := reserve(5, gone, 5, 1)
	if got := f.persist(t, only)[0]; got.Outcome != ports.VoucherGone {
		t.Fatalf("lone reservation of a gone voucher: %+v", got)
	}
}

func TestPersistDuplicateIDsInBatch(t *testing.T) {
	f := newOrderFixture(t)
	v := f.voucher(t, 100)
	a, b, gone := reserve(1, v, 1, 2), reserve(2, v, 2, 1), reserve(3, v+1000, 3, 1)
	rs := []domain.Reservation{a, b, a, gone, gone, b}

	got := f.persist(t, rs...)
	want := []ports.PersistOutcome{ports.Persisted, ports.Persisted, ports.AlreadyPersisted,
		ports.VoucherGone, ports.VoucherGone, ports.AlreadyPersisted}
	for i, res := range got {
		if res.Outcome != want[i] {
			t.Fatalf("result %d = %+v, want outcome %d (all: %+v)", i, res, want[i], got)
		}
	}
	if got, want := f.sold(t, v), 3; got != want {
		t.Fatalf("sold = %d, want %d", got, want)
	}
	if got, want := f.count(t), 2; got != want {
		t.Fatalf("%d orders stored, want %d", got, want)
	}
}

func TestPersistEmpty(t *testing.T) {
	// A closed database proves nothing is touched.
	db := openMigrated(t)
	if err := db.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	for _, rs := range [][]domain.Reservation{nil, {}} {
		got, err := sqlstore.NewOrders(db).Persist(context.Background(), rs)
		if err != nil {
			t.Fatalf("Persist(%#v): %v", rs, err)
		}
		if len(got) != 0 {
			t.Fatalf("Persist(%#v) = %+v, want no results", rs, got)
		}
	}
}

// A batch that cannot be stored stores nothing, not even its good reservations.
func TestPersistErrorStoresNothing(t *testing.T) {
	f := newOrderFixture(t)
	v := f.voucher(t, 100)

	bad := reserve(2, v, 2, 0)
	_, err := f.orders.Persist(context.Background(), []domain.Reservation{reserve(1, v, 1, 1), bad})
	var verr *domain.ValidationError
	if !errors.As(err, &verr) || verr.Field != "quantity" {
		t.Fatalf("Persist with quantity 0: %v, want a *domain.ValidationError on quantity", err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = f.orders.Persist(ctx, []domain.Reservation{reserve(3, v, 3, 1)})
	if err == nil || !strings.HasPrefix(err.Error(), "persist orders: ") {
		t.Fatalf("Persist with a cancelled context: %v, want a persist orders error", err)
	}

	if got, want := f.count(t), 0; got != want {
		t.Fatalf("%d orders stored, want %d", got, want)
	}
	if got, want := f.sold(t, v), 0; got != want {
		t.Fatalf("sold = %d, want %d", got, want)
	}
}

func TestOrdersGetNotFound(t *testing.T) {
	f := newOrderFixture(t)
	if _, err := f.orders.Get(context.Background(), orderID(1)); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("Get of an unknown order: %v, want domain.ErrNotFound", err)
	}
}

func TestOrdersListByUser(t *testing.T) {
	f := newOrderFixture(t)
	ctx := context.Background()
	v, w := f.voucher(t, 100), f.voucher(t, 100)
	const user = 7
	rs := []domain.Reservation{
		reserve(1, v, user, 1),
		reserve(2, w, user, 2),
		reserve(3, v, user+1, 1),
		reserve(4, v, user, 1), // fails: the user holds order 1
	}
	f.persist(t, rs...)

	list := func(user domain.UserID, voucher domain.VoucherID) []domain.Order {
		t.Helper()
		got, err := f.orders.ListByUser(ctx, user, ports.OrderQuery{Voucher: voucher, Limit: 100})
		if err != nil {
			t.Fatalf("ListByUser(%d, %d): %v", user, voucher, err)
		}
		return got
	}
	all := []domain.Order{
		asOrder(rs[3], domain.StatusFailed),
		asOrder(rs[1], domain.StatusAwaitingPayment),
		asOrder(rs[0], domain.StatusAwaitingPayment),
	}
	if got := list(user, 0); !slices.Equal(got, all) {
		t.Fatalf("all of the user's orders =\n%+v, want newest first\n%+v", got, all)
	}
	if got, want := list(user, v), []domain.Order{all[0], all[2]}; !slices.Equal(got, want) {
		t.Fatalf("the user's orders of v =\n%+v, want\n%+v", got, want)
	}
	if got := list(user+2, 0); got == nil || len(got) != 0 {
		t.Fatalf("orders of a user without any = %#v, want an empty, non-nil slice", got)
	}
	if got := list(user, v+1000); got == nil || len(got) != 0 {
		t.Fatalf("orders of an unknown voucher = %#v, want an empty, non-nil slice", got)
	}
	var ve *domain.ValidationError
	if _, err := f.orders.ListByUser(ctx, user, ports.OrderQuery{}); !errors.As(err, &ve) || ve.Field != "limit" {
		t.Fatalf("ListByUser with limit 0: %v, want a validation error on limit", err)
	}
}

// A user's orders page newest first by (created_at, id): ties on created_at are
// broken by id, a page resumes after the key of the previous page's last order, and
// created_at rules over id (an order id is minted by another clock than created_at).
func TestOrdersListByUserPages(t *testing.T) {
	f := newOrderFixture(t)
	ctx := context.Background()
	v, w := f.voucher(t, 100), f.voucher(t, 100)
	const user = 9
	at := map[int]time.Duration{1: time.Second, 2: 2 * time.Second, 3: 3 * time.Second, 4: 3 * time.Second,
		5: 3 * time.Second, 6: 1500 * time.Millisecond, 7: 7 * time.Second}
	var rs []domain.Reservation
	for n := 1; n <= 7; n++ {
		r := reserve(n, v, user, 1) // all but the first fail (one live order per voucher): rows all the same
		r.At = t0.Add(at[n])
		rs = append(rs, r)
	}
	rs = append(rs, reserve(8, w, user, 1), reserve(9, v, user+1, 1))
	f.persist(t, rs...)

	walk := func(voucher domain.VoucherID, limit int) []domain.OrderID {
		t.Helper()
		var ids []domain.OrderID
		q := ports.OrderQuery{Voucher: voucher, Limit: limit}
		for page := 0; ; page++ {
			if page > 10 {
				t.Fatalf("more than 10 pages: %v", ids)
			}
			got, err := f.orders.ListByUser(ctx, user, q)
			if err != nil {
				t.Fatalf("ListByUser(%+v): %v", q, err)
			}
			if len(got) > limit {
				t.Fatalf("page of %d orders, limit %d", len(got), limit)
			}
			for _, o := range got {
				ids = append(ids, o.ID)
			}
			if len(got) < limit {
				return ids
			}
			key := ports.KeyOf(got[len(got)-1])
			q.After = &key
		}
	}
	want := []domain.OrderID{orderID(8), orderID(7), orderID(5), orderID(4), orderID(3), orderID(2), orderID(6), orderID(1)}
	for _, limit := range []int{1, 2, 3, 8, 200} {
		if got := walk(0, limit); !slices.Equal(got, want) {
			t.Fatalf("pages of %d = %v, want %v", limit, got, want)
		}
	}
	wantV := slices.DeleteFunc(slices.Clone(want), func(id domain.OrderID) bool { return id == orderID(8) })
	if got := walk(v, 2); !slices.Equal(got, wantV) {
		t.Fatalf("pages of 2 of voucher v = %v, want %v", got, wantV)
	}
}

func TestOrdersUnitsByStatus(t *testing.T) {
	f := newOrderFixture(t)
	ctx := context.Background()
	v, w := f.voucher(t, 5), f.voucher(t, 100)
	f.persist(t,
		reserve(1, v, 1, 2),
		reserve(2, v, 2, 1),
		reserve(3, v, 1, 1), // fails: user 1 holds order 1
		reserve(4, v, 3, 3), // fails: 2 left
		reserve(5, v, 4, 2),
		reserve(6, w, 1, 9),
	)
	setStatus(t, f.db, string(orderID(2)), domain.StatusPaid)

	got, err := f.orders.UnitsByStatus(ctx, v)
	if err != nil {
		t.Fatalf("UnitsByStatus: %v", err)
	}
	want := map[domain.OrderStatus]int{domain.StatusAwaitingPayment: 2 + 2, domain.StatusPaid: 1, domain.StatusFailed: 1 + 3}
	if !maps.Equal(got, want) {
		t.Fatalf("UnitsByStatus = %v, want %v", got, want)
	}

	got, err = f.orders.UnitsByStatus(ctx, w+1000)
	if err != nil {
		t.Fatalf("UnitsByStatus of an unknown voucher: %v", err)
	}
	if len(got) != 0 {
		t.Fatalf("UnitsByStatus of an unknown voucher = %v, want empty", got)
	}
}

// benchOrders numbers the benchmark's reservations, so every batch is fresh.
var benchOrders atomic.Int64

// BenchmarkPersist persists fresh batches of distinct reservations of one voucher
// with stock to spare; orders/s is the throughput of a single worker.
func BenchmarkPersist(b *testing.B) {
	ctx := context.Background()
	db := openMigrated(b)
	orders, vouchers := sqlstore.NewOrders(db), sqlstore.NewVouchers(db)
	v := domain.Voucher{Title: "bench", Stock: math.MaxInt32, BeginsAt: t0, EndsAt: t0.Add(time.Hour), PerUserLimit: 1}
	if err := vouchers.Create(ctx, &v); err != nil {
		b.Fatalf("create voucher: %v", err)
	}

	for _, size := range []int{1, 10, 100} {
		b.Run(fmt.Sprintf("batch=%d", size), func(b *testing.B) {
			batch := make([]domain.Reservation, size)
			ops := 0
			for b.Loop() {
				for i := range batch {
					n := int(benchOrders.Add(1))
					batch[i] = reserve(n, v.ID, int64(n), 1)
				}
				results, err := orders.Persist(ctx, batch)
				if err != nil {
					b.Fatalf("Persist: %v", err)
				}
				if results[size-1].Outcome != ports.Persisted {
					b.Fatalf("Persist: %+v, want persisted", results[size-1])
				}
				ops++
			}
			b.ReportMetric(float64(ops*size)/b.Elapsed().Seconds(), "orders/s")
		})
	}
}

// A page of a user's orders is read through orders_user_id_created_at_id_idx, from the
// cursor on, not by scanning and sorting every order of the user.
func TestOrdersListByUserUsesIndex(t *testing.T) {
	ctx := context.Background()
	f := newOrderFixture(t)
	log := &queryLog{}
	after := ports.OrderKey{CreatedAt: t0, ID: orderID(1)}
	if _, err := sqlstore.NewOrders(f.db.WithQueryHook(log)).ListByUser(ctx, 7, ports.OrderQuery{After: &after, Limit: 51}); err != nil {
		t.Fatalf("ListByUser: %v", err)
	}
	if len(log.queries) != 1 {
		t.Fatalf("ListByUser ran %d queries, want 1: %q", len(log.queries), log.queries)
	}
	const index = "orders_user_id_created_at_id_idx"
	if sqlstore.IsSQLite(f.db) {
		var plan []struct {
			ID      int    `bun:"id"`
			Parent  int    `bun:"parent"`
			NotUsed int    `bun:"notused"`
			Detail  string `bun:"detail"`
		}
		if err := f.db.NewRaw("EXPLAIN QUERY PLAN "+log.queries[0]).Scan(ctx, &plan); err != nil {
			t.Fatalf("explain: %v", err)
		}
		var details []string
		for _, p := range plan {
			details = append(details, p.Detail)
		}
		joined := strings.Join(details, "\n")
		if !strings.Contains(joined, index) || strings.Contains(joined, "TEMP B-TREE") {
			t.Errorf("ListByUser's plan does not read %s in order:\n%s", index, joined)
		}
		return
	}
	err := f.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		// An empty table would be scanned whole; forbid that, as a big one would.
		if _, err := tx.ExecContext(ctx, "SET LOCAL enable_seqscan = off"); err != nil {
			return err
		}
		var plan []string
		if err := tx.NewRaw("EXPLAIN "+log.queries[0]).Scan(ctx, &plan); err != nil {
			return err
		}
		joined := strings.Join(plan, "\n")
		if !strings.Contains(joined, index) || strings.Contains(joined, "Sort") {
			t.Errorf("ListByUser's plan does not read %s in order:\n%s", index, joined)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("explain: %v", err)
	}
}
