package ordertest

import (
	"errors"
	"maps"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/seckill/seckill/domain"
	"github.com/seckill/seckill/ports"
)

// ordersTests hold ports.Orders and ports.VoucherOrders to their contracts.
var ordersTests = []test{
	{"PersistBatch", testPersistBatch},
	{"PersistRedelivery", testPersistRedelivery},
	{"PersistSameBatchConcurrently", testPersistSameBatchConcurrently},
	{"PersistUserHoldsLiveOrder", testPersistUserHoldsLiveOrder},
	{"PersistGuardSingleUnits", testPersistGuardSingleUnits},
	{"PersistGuardQuantities", testPersistGuardQuantities},
	{"PersistCompetingBatches", testPersistCompetingBatches},
	{"PersistVoucherGone", testPersistVoucherGone},
	{"PersistDuplicateIDsInBatch", testPersistDuplicateIDsInBatch},
	{"PersistEmpty", testPersistEmpty},
	{"PersistInvalidStoresNothing", testPersistInvalidStoresNothing},
	{"GetNotFound", testGetNotFound},
	{"ListByUser", testListByUser},
	{"ListByUserPages", testListByUserPages},
	{"UnitsByStatus", testUnitsByStatus},
	{"ListByVoucher", testListByVoucher},
	{"ListByVoucherPages", testListByVoucherPages},
}

func testPersistBatch(t *testing.T, f *fixture) {
	v, w := f.voucher(t, 100), f.voucher(t, 100)
	// Out of id and user order, over two vouchers: results still follow the input.
	rs := []domain.Reservation{reserve(3, v, 30, 3), reserve(1, w, 10, 1), reserve(2, v, 20, 2), reserve(4, w, 5, 4)}

	got := f.persist(t, rs...)
	for i, r := range rs {
		if want := result(r, ports.Persisted); !sameResult(got[i], want) {
			t.Fatalf("result %d = %+v, want %+v", i, got[i], want)
		}
		f.wantStored(t, r, domain.StatusAwaitingPayment)
	}
	f.wantSold(t, v, 3+2)
	f.wantSold(t, w, 1+4)
}

// A redelivered batch changes nothing and says so.
func testPersistRedelivery(t *testing.T, f *fixture) {
	v := f.voucher(t, 100)
	rs := []domain.Reservation{reserve(1, v, 1, 2), reserve(2, v, 2, 1), reserve(3, v, 3, 1)}
	f.persisted(t, rs...)

	for round := range 2 {
		got := f.persist(t, rs...)
		for i, r := range rs {
			if want := result(r, ports.AlreadyPersisted); !sameResult(got[i], want) {
				t.Fatalf("redelivery %d: result %d = %+v, want %+v", round, i, got[i], want)
			}
		}
		f.wantSold(t, v, 4)
		if got, want := f.count(t), 3; got != want {
			t.Fatalf("redelivery %d: %d orders stored, want %d", round, got, want)
		}
	}
}

// Two workers handed the same batch at once (a claimed entry whose first consumer was
// only slow) store each order once and count its units once; each order is reported
// Persisted by exactly one of them.
func testPersistSameBatchConcurrently(t *testing.T, f *fixture) {
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
			wg.Go(func() { results[i], errs[i] = f.Store.Persist(f.ctx, b) })
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
		f.wantSold(t, v, want[v])
	}
}

func testPersistUserHoldsLiveOrder(t *testing.T, f *fixture) {
	v := f.voucher(t, 100)
	const user = 7
	first := reserve(1, v, user, 1)
	f.persisted(t, first)

	// Another id for the same user and voucher fails, and is kept visibly failed.
	second := reserve(2, v, user, 2)
	wantResults(t, f.persist(t, second), result(second, ports.Failed))
	f.wantStored(t, second, domain.StatusFailed)
	f.wantSold(t, v, 1)
	// Its redelivery answers Failed again, so the caller's (idempotent) release is
	// retried should the first delivery have died before it; nothing else changes.
	wantResults(t, f.persist(t, second), result(second, ports.Failed))
	f.wantSold(t, v, 1)

	// Two ids of one user in one batch: the first (older) wins.
	u := int64(user + 1)
	older, newer := reserve(3, v, u, 1), reserve(4, v, u, 1)
	wantResults(t, f.persist(t, newer, older), result(newer, ports.Failed), result(older, ports.Persisted))

	// Once the live order is closed, the user may order again.
	f.SetStatus(t, first.OrderID, domain.StatusCancelled)
	third := reserve(5, v, user, 1)
	wantResults(t, f.persist(t, third), result(third, ports.Persisted))
	f.wantStored(t, third, domain.StatusAwaitingPayment)
	// The test cancelled by hand without returning units, so sold keeps them.
	f.wantSold(t, v, 1+1+1)
}

// The sold counter's guard: a batch the counter cannot take whole keeps the oldest
// orders that fit and fails the rest, whatever order it arrives in.
func testPersistGuardSingleUnits(t *testing.T, f *fixture) {
	v := f.voucher(t, 3)
	var rs []domain.Reservation
	for n := 1; n <= 5; n++ {
		rs = append(rs, reserve(n, v, int64(n), 1))
	}
	rand.Shuffle(len(rs), func(i, j int) { rs[i], rs[j] = rs[j], rs[i] })

	got := f.persist(t, rs...)
	for i, r := range rs {
		want, status := result(r, ports.Persisted), domain.StatusAwaitingPayment
		if r.OrderID > orderID(3) {
			want, status = result(r, ports.Failed), domain.StatusFailed
		}
		if !sameResult(got[i], want) {
			t.Fatalf("result %d = %+v, want %+v", i, got[i], want)
		}
		f.wantStored(t, r, status)
	}
	f.wantSold(t, v, 3)

	// Nothing fits any more: a new order fails outright.
	late := reserve(6, v, 6, 1)
	wantResults(t, f.persist(t, late), result(late, ports.Failed))
	f.wantSold(t, v, 3)
}

func testPersistGuardQuantities(t *testing.T, f *fixture) {
	v := f.voucher(t, 5)
	f.persisted(t, reserve(1, v, 1, 1))
	// 4 left: 2 fits, 3 does not, the next 2 still does.
	rs := []domain.Reservation{reserve(2, v, 2, 2), reserve(3, v, 3, 3), reserve(4, v, 4, 2)}
	wantResults(t, f.persist(t, rs...),
		result(rs[0], ports.Persisted), result(rs[1], ports.Failed), result(rs[2], ports.Persisted))
	f.wantSold(t, v, 5)
}

// Workers persisting different batches of one voucher at once never oversell it.
func testPersistCompetingBatches(t *testing.T, f *fixture) {
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
		wg.Go(func() { results[w], errs[w] = f.Store.Persist(f.ctx, batch) })
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
	f.wantSold(t, v, stock)
	if got, want := f.count(t), workers*size; got != want {
		t.Fatalf("%d orders stored, want %d", got, want)
	}
}

func testPersistVoucherGone(t *testing.T, f *fixture) {
	v := f.voucher(t, 100)
	gone := v + 1000
	rs := []domain.Reservation{reserve(1, v, 1, 1), reserve(2, gone, 2, 1), reserve(3, v, 3, 2), reserve(4, gone+1, 4, 1)}

	wantResults(t, f.persist(t, rs...), result(rs[0], ports.Persisted), result(rs[1], ports.VoucherGone),
		result(rs[2], ports.Persisted), result(rs[3], ports.VoucherGone))
	for _, r := range []domain.Reservation{rs[1], rs[3]} {
		if _, err := f.Store.Get(f.ctx, r.OrderID); !errors.Is(err, domain.ErrNotFound) {
			t.Fatalf("Get(%s) of a gone voucher's order: %v, want domain.ErrNotFound", r.OrderID, err)
		}
	}
	f.wantSold(t, v, 3)
	if got, want := f.count(t), 2; got != want {
		t.Fatalf("%d orders stored, want %d", got, want)
	}

	// A batch of nothing but gone vouchers stores nothing either.
	only := reserve(5, gone, 5, 1)
	wantResults(t, f.persist(t, only), result(only, ports.VoucherGone))
}

func testPersistDuplicateIDsInBatch(t *testing.T, f *fixture) {
	v := f.voucher(t, 100)
	a, b, gone := reserve(1, v, 1, 2), reserve(2, v, 2, 1), reserve(3, v+1000, 3, 1)

	wantResults(t, f.persist(t, a, b, a, gone, gone, b),
		result(a, ports.Persisted), result(b, ports.Persisted), result(a, ports.AlreadyPersisted),
		result(gone, ports.VoucherGone), result(gone, ports.VoucherGone), result(b, ports.AlreadyPersisted))
	f.wantSold(t, v, 3)
	if got, want := f.count(t), 2; got != want {
		t.Fatalf("%d orders stored, want %d", got, want)
	}
}

func testPersistEmpty(t *testing.T, f *fixture) {
	for _, rs := range [][]domain.Reservation{nil, {}} {
		got, err := f.Store.Persist(f.ctx, rs)
		if err != nil {
			t.Fatalf("Persist(%#v): %v", rs, err)
		}
		if len(got) != 0 {
			t.Fatalf("Persist(%#v) = %+v, want no results", rs, got)
		}
	}
}

// A batch holding an invalid reservation stores nothing, not even its good ones.
func testPersistInvalidStoresNothing(t *testing.T, f *fixture) {
	v := f.voucher(t, 100)
	good := reserve(1, v, 1, 1)
	noID := reserve(4, v, 4, 1)
	noID.OrderID = ""
	for field, bad := range map[string]domain.Reservation{
		"quantity": reserve(2, v, 2, 0),
		"user":     reserve(3, v, 0, 1),
		"order_id": noID,
	} {
		_, err := f.Store.Persist(f.ctx, []domain.Reservation{good, bad})
		var verr *domain.ValidationError
		if !errors.As(err, &verr) || verr.Field != field {
			t.Fatalf("Persist with a bad %s: %v, want a *domain.ValidationError on %s", field, err, field)
		}
	}
	if got, want := f.count(t), 0; got != want {
		t.Fatalf("%d orders stored, want %d", got, want)
	}
	f.wantSold(t, v, 0)
}

func testGetNotFound(t *testing.T, f *fixture) {
	if _, err := f.Store.Get(f.ctx, orderID(1)); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("Get of an unknown order: %v, want domain.ErrNotFound", err)
	}
}

func testListByUser(t *testing.T, f *fixture) {
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
		got, err := f.Store.ListByUser(f.ctx, user, ports.OrderQuery{Voucher: voucher, Limit: 100})
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
	wantOrders(t, "all of the user's orders, newest first", list(user, 0), all...)
	wantOrders(t, "the user's orders of v", list(user, v), all[0], all[2])
	wantEmpty(t, "orders of a user without any", list(user+2, 0))
	wantEmpty(t, "orders of an unknown voucher", list(user, v+1000))
	var ve *domain.ValidationError
	if _, err := f.Store.ListByUser(f.ctx, user, ports.OrderQuery{}); !errors.As(err, &ve) || ve.Field != "limit" {
		t.Fatalf("ListByUser with limit 0: %v, want a validation error on limit", err)
	}
}

// A user's orders page newest first by (created_at, id): ties on created_at are
// broken by id, a page resumes after the key of the previous page's last order, and
// created_at rules over id (an order id is minted by another clock than created_at).
func testListByUserPages(t *testing.T, f *fixture) {
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
			got, err := f.Store.ListByUser(f.ctx, user, q)
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

func testUnitsByStatus(t *testing.T, f *fixture) {
	v, w := f.voucher(t, 5), f.voucher(t, 100)
	f.persist(t,
		reserve(1, v, 1, 2),
		reserve(2, v, 2, 1),
		reserve(3, v, 1, 1), // fails: user 1 holds order 1
		reserve(4, v, 3, 3), // fails: 2 left
		reserve(5, v, 4, 2),
		reserve(6, w, 1, 9),
	)
	f.SetStatus(t, orderID(2), domain.StatusPaid)

	got, err := f.Store.UnitsByStatus(f.ctx, v, nil)
	if err != nil {
		t.Fatalf("UnitsByStatus: %v", err)
	}
	want := map[domain.OrderStatus]int{domain.StatusAwaitingPayment: 2 + 2, domain.StatusPaid: 1, domain.StatusFailed: 1 + 3}
	if !maps.Equal(got, want) {
		t.Fatalf("UnitsByStatus = %v, want %v", got, want)
	}

	got, err = f.Store.UnitsByStatus(f.ctx, w+1000, nil)
	if err != nil {
		t.Fatalf("UnitsByStatus of an unknown voucher: %v", err)
	}
	if len(got) != 0 {
		t.Fatalf("UnitsByStatus of an unknown voucher = %v, want empty", got)
	}
}

// testDown: a store that is down answers every call that has work to do with an
// error, and stored nothing meanwhile.
func testDown(t *testing.T, f *fixture) {
	v := f.voucher(t, 10)
	r := reserve(1, v, 1, 1)
	f.persisted(t, r)
	f.Break(t)
	calls := map[string]func() error{
		"Persist": func() error {
			_, err := f.Store.Persist(f.ctx, []domain.Reservation{reserve(2, v, 2, 1)})
			return err
		},
		"Get": func() error {
			_, err := f.Store.Get(f.ctx, r.OrderID)
			return err
		},
		"ListByUser": func() error {
			_, err := f.Store.ListByUser(f.ctx, r.UserID, ports.OrderQuery{Limit: 10})
			return err
		},
		"UnitsByStatus": func() error {
			_, err := f.Store.UnitsByStatus(f.ctx, v, nil)
			return err
		},
		"ListByVoucher": func() error {
			_, err := f.Store.ListByVoucher(f.ctx, v, ports.VoucherOrderQuery{Limit: 10})
			return err
		},
		"Transition": func() error {
			_, err := f.Store.Transition(f.ctx, r.OrderID, r.UserID, domain.StatusPaid, nil)
			return err
		},
		"ExpireDue": func() error {
			_, err := f.Store.ExpireDue(f.ctx, t0.Add(time.Hour), 0, 10)
			return err
		},
		"Unreleased": func() error {
			_, err := f.Store.Unreleased(f.ctx, 10)
			return err
		},
		"MarkReleased": func() error { return f.Store.MarkReleased(f.ctx, r.OrderID) },
		"Ledger": func() error {
			_, err := f.Store.Ledger(f.ctx, v)
			return err
		},
		"RecountSold": func() error {
			_, err := f.Store.RecountSold(f.ctx, v)
			return err
		},
	}
	for _, name := range slices.Sorted(maps.Keys(calls)) {
		if err := calls[name](); err == nil {
			t.Errorf("%s while the store is down: no error", name)
		}
	}
}

// A voucher's orders are listed oldest (lowest id) first — by id, whatever their
// created_at — of that voucher only, in one status when asked.
func testListByVoucher(t *testing.T, f *fixture) {
	v, w := f.voucher(t, 100), f.voucher(t, 100)
	rs := []domain.Reservation{
		reserve(3, v, 1, 1),
		reserve(1, v, 2, 2),
		reserve(2, w, 1, 1),
		reserve(4, v, 3, 1),
		reserve(5, v, 1, 1), // fails: user 1 holds order 3
	}
	rs[1].At = t0.Add(time.Hour) // created last, listed first: by id
	f.persist(t, rs...)
	if _, err := f.Store.Transition(f.ctx, rs[3].OrderID, 0, domain.StatusPaid, nil); err != nil {
		t.Fatal(err)
	}
	list := func(status domain.OrderStatus) []domain.Order {
		t.Helper()
		got, err := f.Store.ListByVoucher(f.ctx, v, ports.VoucherOrderQuery{Status: status, Limit: 100})
		if err != nil {
			t.Fatalf("ListByVoucher(%s): %v", status, err)
		}
		return got
	}
	wantOrders(t, "the voucher's orders", list(""),
		asOrder(rs[1], domain.StatusAwaitingPayment), asOrder(rs[0], domain.StatusAwaitingPayment),
		asOrder(rs[3], domain.StatusPaid), asOrder(rs[4], domain.StatusFailed))
	wantOrders(t, "those awaiting payment", list(domain.StatusAwaitingPayment),
		asOrder(rs[1], domain.StatusAwaitingPayment), asOrder(rs[0], domain.StatusAwaitingPayment))
	wantOrders(t, "the paid ones", list(domain.StatusPaid), asOrder(rs[3], domain.StatusPaid))
	wantEmpty(t, "the cancelled ones", list(domain.StatusCancelled))
	got, err := f.Store.ListByVoucher(f.ctx, v+1000, ports.VoucherOrderQuery{Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	wantEmpty(t, "orders of an unknown voucher", got)
	var ve *domain.ValidationError
	if _, err := f.Store.ListByVoucher(f.ctx, v, ports.VoucherOrderQuery{}); !errors.As(err, &ve) || ve.Field != "limit" {
		t.Fatalf("ListByVoucher with limit 0: %v, want a validation error on limit", err)
	}
}

// Pages of a voucher's orders resume after the previous page's last id, each order on
// one page, with or without a status filter.
func testListByVoucherPages(t *testing.T, f *fixture) {
	v := f.voucher(t, 100)
	var rs []domain.Reservation
	for n := 1; n <= 9; n++ {
		rs = append(rs, reserve(n, v, int64(n), 1))
	}
	f.persist(t, rs...)
	paid := map[domain.OrderID]bool{}
	for _, n := range []int{2, 3, 7} {
		if _, err := f.Store.Transition(f.ctx, orderID(n), 0, domain.StatusPaid, nil); err != nil {
			t.Fatal(err)
		}
		paid[orderID(n)] = true
	}
	walk := func(status domain.OrderStatus, limit int) []domain.OrderID {
		t.Helper()
		var ids []domain.OrderID
		q := ports.VoucherOrderQuery{Status: status, Limit: limit}
		for page := 0; ; page++ {
			if page > 10 {
				t.Fatalf("more than 10 pages: %v", ids)
			}
			got, err := f.Store.ListByVoucher(f.ctx, v, q)
			if err != nil {
				t.Fatalf("ListByVoucher(%+v): %v", q, err)
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
			q.After = got[len(got)-1].ID
		}
	}
	var all, unpaid []domain.OrderID
	for _, r := range rs {
		all = append(all, r.OrderID)
		if !paid[r.OrderID] {
			unpaid = append(unpaid, r.OrderID)
		}
	}
	for _, limit := range []int{1, 2, 4, 9, 200} {
		if got := walk("", limit); !slices.Equal(got, all) {
			t.Fatalf("pages of %d = %v, want %v", limit, got, all)
		}
		if got := walk(domain.StatusAwaitingPayment, limit); !slices.Equal(got, unpaid) {
			t.Fatalf("pages of %d awaiting payment = %v, want %v", limit, got, unpaid)
		}
	}
}
