package sqlstore_test

import (
	"testing"

	"github.com/seckill/seckill/adapters/idemtest"
	"github.com/seckill/seckill/adapters/sqlstore"
)

// TestIdempotencyContract runs the idempotency keys' contract suite (claims, leases,
// tokens, and the receipts of Vouchers.Create and Orders.Transition) against the SQL
// adapter, on PostgreSQL or, in the SQLite pass, on SQLite.
func TestIdempotencyContract(t *testing.T) {
	idemtest.Run(t, func(t *testing.T) idemtest.Subject {
		db := openMigrated(t)
		return idemtest.Subject{
			Idempotency: sqlstore.NewIdempotency(db),
			Vouchers:    sqlstore.NewVouchers(db),
			Orders:      sqlstore.NewOrders(db),
		}
	})
}
