package redisstore_test

import (
	"context"
	"testing"

	"github.com/seckill/seckill/adapters/audittest"
	"github.com/seckill/seckill/adapters/redisstore"
	"github.com/seckill/seckill/adapters/strategies/watchstock"
	"github.com/seckill/seckill/adapters/testenv"
	"github.com/seckill/seckill/domain"
	"github.com/seckill/seckill/ports"
)

// TestStockAuditContract runs the ports.StockAudit contract suite against the Redis
// audit, over the keys the lua and watch strategies share, grabbing through each: the
// audit's repairs (Restoring above all) must hold for both.
func TestStockAuditContract(t *testing.T) {
	t.Run("lua", func(t *testing.T) { t.Parallel(); runAuditContract(t, false) })
	t.Run("watch", func(t *testing.T) { t.Parallel(); runAuditContract(t, true) })
}

func runAuditContract(t *testing.T, watch bool) {
	audittest.Run(t, func(t *testing.T) audittest.Subject {
		client, s := newStock(t, 0)
		var stock ports.Stock = s
		if watch {
			stock = watchstock.New(s, 0)
		}
		forgetPrefix(t, client, s.Keys().Prefix)
		// The audit has a client of its own, which Break closes.
		auditClient := testenv.Redis(t)
		return audittest.Subject{
			Audit: redisstore.NewAudit(auditClient, redisstore.Options{Prefix: s.Keys().Prefix}),
			Stock: stock,
			Queue: newQueue(client, s, "audit"),
			SetRemaining: func(t *testing.T, id domain.VoucherID, remaining int) {
				check(t, client.HSet(context.Background(), s.Keys().Meta(id), "remaining", remaining).Err())
			},
			Break: func(t *testing.T) { check(t, auditClient.Close()) },
		}
	})
}
