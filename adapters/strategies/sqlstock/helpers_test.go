package sqlstock_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"github.com/seckill/seckill/adapters/sqlstore"
	"github.com/seckill/seckill/adapters/strategies/sqlstock"
	"github.com/seckill/seckill/adapters/system"
	"github.com/seckill/seckill/adapters/testenv"
	"github.com/seckill/seckill/domain"
)

// The fixtures of sqlstore's tests that these use, declared again: the strategy keeps
// its sale state in sqlstore's tables and is checked through its repositories.

// t0 is a fixed instant off UTC and below the database's microsecond precision, so
// the tests see both conversions.
var t0 = time.Date(2026, 11, 29, 20, 0, 0, 123456789, time.FixedZone("UTC+8", 8*60*60))

// stockWindow is the payment window of the fixture's Stock.
const stockWindow = 15 * time.Minute

// stockFixture is a fresh migrated database of the throwaway server (or a SQLite file
// of its own: testenv.DatabaseURL), with the repositories and the strategy over it.
type stockFixture struct {
	db       *bun.DB
	orders   *sqlstore.Orders
	vouchers *sqlstore.Vouchers
	stock    *sqlstock.Stock
}

func newStockFixture(t *testing.T) stockFixture {
	t.Helper()
	ctx := context.Background()
	db, err := sqlstore.Open(ctx, testenv.DatabaseURL(t))
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	// Closed when the test ends, before testenv drops the database.
	t.Cleanup(func() { _ = db.Close() })
	if _, err := sqlstore.MigrateUp(ctx, db); err != nil {
		t.Fatalf("migrate up: %v", err)
	}
	return stockFixture{db: db, orders: sqlstore.NewOrders(db), vouchers: sqlstore.NewVouchers(db),
		stock: sqlstock.New(db, system.Clock{}, domain.PaymentWindow(stockWindow))}
}

// onSale creates a voucher of stock units, limit units per user, on sale from t0 for
// an hour.
func (f stockFixture) onSale(t *testing.T, stock, limit int) domain.Voucher {
	t.Helper()
	v := domain.Voucher{Title: fmt.Sprintf("stock %d", stock), Stock: stock, PerUserLimit: limit,
		BeginsAt: t0, EndsAt: t0.Add(time.Hour)}
	if err := f.vouchers.Create(context.Background(), &v, domain.Author{}, nil); err != nil {
		t.Fatalf("Create(%q): %v", v.Title, err)
	}
	return v
}

// grabAt is user's grab of qty units of v at, under the n-th order id: 26 characters
// that sort as n does, like the time-ordered ULIDs the application mints.
func grabAt(n int, v domain.VoucherID, user int64, qty int, at time.Time) domain.Reservation {
	return domain.Reservation{OrderID: domain.OrderID(fmt.Sprintf("01KB%022d", n)), VoucherID: v,
		UserID: domain.UserID(user), Quantity: qty, At: at}
}

// get returns order id.
func (f stockFixture) get(t *testing.T, id domain.OrderID) domain.Order {
	t.Helper()
	o, err := f.orders.Get(context.Background(), id)
	if err != nil {
		t.Fatalf("Get(%s): %v", id, err)
	}
	return o
}

// sold returns voucher v's sold counter.
func (f stockFixture) sold(t *testing.T, v domain.VoucherID) int {
	t.Helper()
	got, err := f.vouchers.Get(context.Background(), v)
	if err != nil {
		t.Fatalf("Get voucher %d: %v", v, err)
	}
	return got.Sold
}
