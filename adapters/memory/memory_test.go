package memory_test

import (
	"testing"

	"github.com/seckill/seckill/adapters/memory"
	"github.com/seckill/seckill/adapters/stocktest"
	"github.com/seckill/seckill/domain"
)

// TestStockContract holds the fake to the contract the Redis and PostgreSQL
// strategies meet, so the use-case tests built on it test against the real thing.
func TestStockContract(t *testing.T) {
	stocktest.Run(t, func(*testing.T) stocktest.Subject {
		s := memory.NewStock()
		return stocktest.Subject{
			Stock: s,
			// Like the Redis adapter, the fake loads a voucher with live orders
			// restoring, until Restored.
			Audit: s,
			// Read once the calls are done: Reserve appends under the fake's mutex.
			Recorded: func(_ *testing.T, id domain.VoucherID) []domain.Reservation {
				var out []domain.Reservation
				for _, r := range s.Reserved {
					if r.VoucherID == id {
						out = append(out, r)
					}
				}
				return out
			},
		}
	})
}
