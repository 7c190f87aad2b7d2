package memory_test

import (
	"errors"
	"testing"

	"github.com/seckill/seckill/adapters/memory"
	"github.com/seckill/seckill/adapters/ordertest"
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

// TestOrderStoreContract holds the fake order store to the contract the SQL adapter
// meets.
func TestOrderStoreContract(t *testing.T) {
	ordertest.Run(t, func(*testing.T) ordertest.Subject {
		vouchers := memory.NewVouchers()
		orders := memory.NewOrders(vouchers)
		return ordertest.Subject{
			Store:    orders,
			Vouchers: vouchers,
			SetStatus: func(_ *testing.T, id domain.OrderID, s domain.OrderStatus) {
				orders.SetStatus(id, s)
			},
			SetSold: func(t *testing.T, id domain.VoucherID, sold int) {
				v, err := vouchers.Get(t.Context(), id)
				if err != nil {
					t.Fatal(err)
				}
				v.Sold = sold
				vouchers.Put(v)
			},
			Break: func(*testing.T) { orders.SetErr(errDown) },
		}
	})
}

// errDown is what a broken fake answers.
var errDown = errors.New("down")
