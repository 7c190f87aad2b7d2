package redisstore_test

import (
	"context"
	"testing"

	"github.com/seckill/seckill/adapters/audittest"
	"github.com/seckill/seckill/adapters/redisstore"
	"github.com/seckill/seckill/adapters/testenv"
	"github.com/seckill/seckill/domain"
)

// TestStockAuditContract runs the ports.StockAudit contract suite against the Redis
// audit, over the keys the lua and watch strategies share.
func TestStockAuditContract(t *testing.T) {
	audittest.Run(t, func(t *testing.T) audittest.Subject {
		client, s := newStock(t, 0)
		forgetPrefix(t, client, s.Keys().Prefix)
		// The audit has a client of its own, which Break closes.
		auditClient := testenv.Redis(t)
		return audittest.Subject{
			Audit: redisstore.NewAudit(auditClient, redisstore.Options{Prefix: s.Keys().Prefix}),
			Stock: s,
			Queue: newQueue(client, s, "audit"),
			SetRemaining: func(t *testing.T, id domain.VoucherID, remaining int) {
				check(t, client.HSet(context.Background(), s.Keys().Meta(id), "remaining", remaining).Err())
			},
			Break: func(t *testing.T) { check(t, auditClient.Close()) },
		}
	})
}
