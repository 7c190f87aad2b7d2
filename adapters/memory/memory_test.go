package memory_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/seckill/seckill/adapters/audittest"
	"github.com/seckill/seckill/adapters/idemtest"
	"github.com/seckill/seckill/adapters/memory"
	"github.com/seckill/seckill/adapters/ordertest"
	"github.com/seckill/seckill/adapters/queuetest"
	"github.com/seckill/seckill/adapters/stocktest"
	"github.com/seckill/seckill/domain"
	"github.com/seckill/seckill/ports"
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
			Audit:     s,
			IssuePass: func(_ *testing.T, p domain.Pass) { s.IssuePass(p) },
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

// TestIdempotencyContract holds the fake idempotency keys, and the receipts its
// vouchers and orders keep, to the contract the SQL adapter meets.
func TestIdempotencyContract(t *testing.T) {
	idemtest.Run(t, func(*testing.T) idemtest.Subject {
		vouchers := memory.NewVouchers()
		return idemtest.Subject{Idempotency: vouchers.Idempotency, Vouchers: vouchers, Orders: memory.NewOrders(vouchers)}
	})
}

// errDown is what a broken fake answers.
var errDown = errors.New("down")

// TestQueueContract holds the fake queue to the contract the Redis streams meet.
func TestQueueContract(t *testing.T) {
	queuetest.Run(t, func(*testing.T) queuetest.Subject {
		q := &memory.Queue{}
		return queuetest.Subject{
			Consumer: func(*testing.T, string) ports.Queue { return q },
			Append: func(_ *testing.T, id domain.VoucherID, user domain.UserID) domain.Reservation {
				r := domain.Reservation{OrderID: domain.OrderID(fmt.Sprintf("v%d-u%d", id, user)), VoucherID: id,
					UserID: user, Quantity: 1, At: time.Date(2026, time.November, 29, 12, 0, 0, 0, time.UTC)}
				q.Append(ports.Delivery{VoucherID: id, Reservation: r})
				return r
			},
			Break: func(*testing.T) { q.SetErr(errDown) },
		}
	})
}

// TestStockAuditContract holds the fake stock's audit to the contract the Redis and
// PostgreSQL strategies' audits meet.
func TestStockAuditContract(t *testing.T) {
	audittest.Run(t, func(*testing.T) audittest.Subject {
		s := memory.NewStock()
		s.Queue = &memory.Queue{}
		return audittest.Subject{
			Audit: s, Stock: s, Queue: s.Queue,
			SetRemaining: func(_ *testing.T, id domain.VoucherID, remaining int) { s.SetRemaining(id, remaining) },
			Break:        func(*testing.T) { s.Err = errDown },
		}
	})
}
