package sqlstore_test

import (
	"context"
	"testing"

	"github.com/seckill/seckill/adapters/ordertest"
	"github.com/seckill/seckill/domain"
)

// TestOrderStoreContract runs the order store's contract suite against the SQL
// adapter, on PostgreSQL or, in the SQLite pass, on SQLite.
func TestOrderStoreContract(t *testing.T) {
	ordertest.Run(t, func(t *testing.T) ordertest.Subject {
		f := newOrderFixture(t)
		return ordertest.Subject{
			Store:    f.orders,
			Vouchers: f.vouchers,
			SetStatus: func(t *testing.T, id domain.OrderID, s domain.OrderStatus) {
				setStatus(t, f.db, string(id), s)
			},
			SetSold: func(t *testing.T, id domain.VoucherID, sold int) {
				if _, err := f.db.NewRaw("UPDATE vouchers SET sold = ? WHERE id = ?", sold, int64(id)).Exec(context.Background()); err != nil {
					t.Fatalf("set sold: %v", err)
				}
			},
			Break: func(t *testing.T) {
				if err := f.db.Close(); err != nil {
					t.Fatalf("close: %v", err)
				}
			},
		}
	})
}
