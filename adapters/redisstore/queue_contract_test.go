package redisstore_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/seckill/seckill/adapters/queuetest"
	"github.com/seckill/seckill/adapters/testenv"
	"github.com/seckill/seckill/domain"
	"github.com/seckill/seckill/ports"
)

// TestQueueContract runs the ports.Queue contract suite against the Redis streams: the
// reserve script appends, consumers of one group read.
func TestQueueContract(t *testing.T) {
	queuetest.Run(t, func(t *testing.T) queuetest.Subject {
		client, s := newStock(t, 0)
		// The consumers have a client of their own, which Break closes.
		consumers := testenv.Redis(t)
		var mu sync.Mutex
		warmed := map[domain.VoucherID]bool{}
		return queuetest.Subject{
			Consumer: func(_ *testing.T, name string) ports.Queue { return newQueue(consumers, s, name) },
			Append: func(t *testing.T, id domain.VoucherID, user domain.UserID) domain.Reservation {
				mu.Lock()
				if !warmed[id] {
					warm(t, client, s, voucher(id, 100, 1))
					warmed[id] = true
				}
				mu.Unlock()
				r := grab(id, user, 1)
				r.OrderID = domain.OrderID(fmt.Sprintf("v%d-%s", id, r.OrderID))
				check(t, s.Reserve(context.Background(), r))
				return r
			},
			Break: func(t *testing.T) { check(t, consumers.Close()) },
		}
	})
}
