package sqlstore_test

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
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
	// The reasons of the orders a campaign's cap or per-user limit refuses.
	reasonCampaignCap   = "campaign cap full"
	reasonCampaignLimit = "campaign per-user limit"
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

// Persist stores a reservation's time in UTC, to the database's microsecond; the
// contract suite's times need neither conversion.
func TestPersistStoresTimesInUTC(t *testing.T) {
	t.Parallel()
	f := newOrderFixture(t)
	v := f.voucher(t, 100)
	r := reserve(1, v, 1, 1)
	f.persist(t, r)
	got := f.get(t, r.OrderID)
	if want := asOrder(r, domain.StatusAwaitingPayment); got != want {
		t.Fatalf("stored order =\n%+v, want\n%+v", got, want)
	}
	if got.CreatedAt.Location() != time.UTC {
		t.Fatalf("CreatedAt %v is not in UTC", got.CreatedAt)
	}
}

// Persist's reasons, as the callers log them.
func TestPersistReasons(t *testing.T) {
	t.Parallel()
	f := newOrderFixture(t)
	v := f.voucher(t, 1)
	first, second, third := reserve(1, v, 1, 1), reserve(2, v, 1, 1), reserve(3, v, 3, 1)
	want := []ports.PersistResult{
		result(first, ports.Persisted, ""),
		result(second, ports.Failed, reasonLiveOrder),
		result(third, ports.Failed, reasonSoldFull),
	}
	if got := f.persist(t, first, second, third); !slices.Equal(got, want) {
		t.Fatalf("Persist =\n%+v, want\n%+v", got, want)
	}
	if got, want := f.persist(t, second)[0], result(second, ports.Failed, reasonFailedBefore); got != want {
		t.Fatalf("redelivered failed order: %+v, want %+v", got, want)
	}
}

func TestPersistEmpty(t *testing.T) {
	t.Parallel()
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

// A batch that cannot be stored stores nothing, and says why.
func TestPersistErrorStoresNothing(t *testing.T) {
	t.Parallel()
	f := newOrderFixture(t)
	v := f.voucher(t, 100)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := f.orders.Persist(ctx, []domain.Reservation{reserve(3, v, 3, 1)})
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

// benchOrders numbers the benchmark's reservations, so every batch is fresh.
var benchOrders atomic.Int64

// BenchmarkPersist persists fresh batches of distinct reservations of one voucher
// with stock to spare; orders/s is the throughput of a single worker.
func BenchmarkPersist(b *testing.B) {
	ctx := context.Background()
	db := openMigrated(b)
	orders, vouchers := sqlstore.NewOrders(db), sqlstore.NewVouchers(db)
	v := domain.Voucher{Title: "bench", Stock: math.MaxInt32, BeginsAt: t0, EndsAt: t0.Add(time.Hour), PerUserLimit: 1}
	if err := vouchers.Create(ctx, &v, domain.Author{}, nil); err != nil {
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

// BenchmarkPersistWebhooks is BenchmarkPersist with webhooks off and on, side by side
// for each batch size so that both meet the same machine: on, each batch's transaction
// also inserts its events (one order.awaiting_payment per order) in one statement.
func BenchmarkPersistWebhooks(b *testing.B) {
	ctx := context.Background()
	db := openMigrated(b)
	plain, vouchers := sqlstore.NewOrders(db), sqlstore.NewVouchers(db)
	v := domain.Voucher{Title: "bench", Stock: math.MaxInt32, BeginsAt: t0, EndsAt: t0.Add(time.Hour), PerUserLimit: 1}
	if err := vouchers.Create(ctx, &v, domain.Author{}, nil); err != nil {
		b.Fatalf("create voucher: %v", err)
	}
	for _, size := range []int{1, 10, 100} {
		for _, hooks := range []string{"off", "on"} {
			orders := plain
			if hooks == "on" {
				orders = plain.WithOutbox()
			}
			b.Run(fmt.Sprintf("batch=%d/webhooks=%s", size, hooks), func(b *testing.B) {
				batch := make([]domain.Reservation, size)
				ops := 0
				for b.Loop() {
					for i := range batch {
						n := int(benchOrders.Add(1))
						batch[i] = reserve(n, v.ID, int64(n), 1)
					}
					if _, err := orders.Persist(ctx, batch); err != nil {
						b.Fatalf("Persist: %v", err)
					}
					ops++
				}
				b.ReportMetric(float64(ops*size)/b.Elapsed().Seconds(), "orders/s")
			})
		}
	}
}

// A page of a user's orders is read through orders_user_id_created_at_id_idx, from the
// cursor on, not by scanning and sorting every order of the user.
func TestOrdersListByUserUsesIndex(t *testing.T) {
	t.Parallel()
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
		joined := strings.Join(sqlitePlan(t, f.db, log.queries[0]), "\n")
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

// A page of a voucher's orders is read in id order from the cursor on, through an
// index — never by a scan of the voucher's every order (or, filtered, of the table)
// sorted for each page, which PostgreSQL's planner prefers while the table's
// statistics say it is small (orders just arrived, not yet analyzed) unless the page
// says otherwise — and on SQLite it is one statement, holding no transaction.
func TestOrdersListByVoucherReadsInOrder(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newOrderFixture(t)
	big, small := f.voucher(t, 5000), f.voucher(t, 10)
	var os []domain.Order
	for i := range 3000 {
		status := domain.StatusPaid
		if i%10 == 0 {
			status = domain.StatusCancelled
		}
		os = append(os, domain.Order{ID: orderID(i + 1), VoucherID: big, UserID: domain.UserID(i + 1), Quantity: 1, Status: status, CreatedAt: t0})
	}
	for i := range 5 {
		os = append(os, domain.Order{ID: orderID(5000 + i), VoucherID: small, UserID: domain.UserID(i + 1), Quantity: 1, Status: domain.StatusPaid, CreatedAt: t0})
	}
	if err := f.orders.Import(ctx, os); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		voucher domain.VoucherID
		status  domain.OrderStatus
	}{{big, ""}, {big, domain.StatusPaid}, {big, domain.StatusCancelled}, {small, ""}, {small, domain.StatusPaid}} {
		listReadsInOrder(t, f.db, tc.voucher, ports.VoucherOrderQuery{Status: tc.status, After: orderID(1), Limit: 1000})
	}
}

// listReadsInOrder fails unless ListByVoucher's page q of voucher is read in index
// order from its cursor, with no sort (see TestOrdersListByVoucherReadsInOrder).
func listReadsInOrder(t *testing.T, db *bun.DB, voucher domain.VoucherID, q ports.VoucherOrderQuery) {
	t.Helper()
	ctx := context.Background()
	log := &queryLog{}
	if _, err := sqlstore.NewOrders(db.WithQueryHook(log)).ListByVoucher(ctx, voucher, q); err != nil {
		t.Fatalf("ListByVoucher: %v", err)
	}
	var sets, selects []string
	for _, s := range log.queries {
		switch {
		case strings.Contains(s, "set_config("):
			sets = append(sets, s)
		case strings.HasPrefix(s, "SELECT "):
			selects = append(selects, s)
		}
	}
	if len(selects) != 1 {
		t.Fatalf("ListByVoucher ran %d selects, want 1: %q", len(selects), log.queries)
	}
	const index = "orders_voucher_id_id_idx"
	if sqlstore.IsSQLite(db) {
		if len(log.queries) != 1 {
			t.Fatalf("ListByVoucher ran %q on SQLite, want its one select (a transaction would take the write lock)", log.queries)
		}
		joined := strings.Join(sqlitePlan(t, db, selects[0]), "\n")
		if !strings.Contains(joined, index) || strings.Contains(joined, "TEMP B-TREE") {
			t.Errorf("ListByVoucher's plan does not read %s in order:\n%s", index, joined)
		}
		return
	}
	// The plan of the page's select under what its own transaction set, as the
	// statistics stand: none yet for the orders just imported.
	err := db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		for _, s := range sets {
			if _, err := tx.ExecContext(ctx, s); err != nil {
				return err
			}
		}
		var plan []string
		if err := tx.NewRaw("EXPLAIN "+selects[0]).Scan(ctx, &plan); err != nil {
			return err
		}
		joined := strings.Join(plan, "\n")
		if !strings.Contains(joined, "Index Scan using ") || strings.Contains(joined, "Sort") ||
			strings.Contains(joined, "Bitmap") || strings.Contains(joined, "Seq Scan") {
			t.Errorf("the page %+v of voucher %s is not read in index order:\n%s", q, voucher, joined)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("explain: %v", err)
	}
}
