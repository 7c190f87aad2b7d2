package sqlstock_test

import (
	"context"
	"testing"

	"github.com/seckill/seckill/adapters/audittest"
	"github.com/seckill/seckill/domain"
)

// TestStockAuditContract runs the ports.StockAudit contract suite against the postgres
// strategy's audit, declaring how it differs: its sale state is the vouchers rows
// (Vouchers) and its reservations the live orders (Orders).
func TestStockAuditContract(t *testing.T) {
	audittest.Run(t, func(t *testing.T) audittest.Subject {
		f := newStockFixture(t)
		return audittest.Subject{
			Audit: f.stock, Stock: f.stock, Vouchers: f.vouchers, Orders: f.orders,
			SetRemaining: func(t *testing.T, id domain.VoucherID, remaining int) {
				if _, err := f.db.NewRaw("UPDATE vouchers SET sold = stock - ? WHERE id = ?", remaining, int64(id)).Exec(context.Background()); err != nil {
					t.Fatalf("set remaining: %v", err)
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
