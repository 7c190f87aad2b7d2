package redisstore

import (
	"context"

	"github.com/seckill/seckill/domain"
)

// UserOrders returns the key of a user's index of the orders they reserved: a hash from
// order id to voucher id (decimal), under the user's own hash tag {u<id>}, so reading a
// user's reservations never walks the vouchers. It says where to look, not what is
// held: the voucher's orders hash does (see Reservations.ForUser). It expires
// Options.Grace after the user's last grab.
func (k Keys) UserOrders(user domain.UserID) string {
	return k.prefix() + ":{u" + user.String() + "}:orders"
}

// indexReserved writes each of rs, the grabs one reserve call took, to its user's
// index (Keys.UserOrders), in one round trip. The reserve script cannot: on Redis
// Cluster a script reaches only its voucher's slot, and a user's index lives in the
// user's. So it is written after the script, before the grabs are answered; an index
// entry therefore never names an order that was not reserved. Should the write fail
// (Redis failed between the two), the grabs are answered all the same, as reserved
// (they are, and will be persisted): Reservations.Find falls back to the vouchers on
// sale, and ForUser lists the order from the database once it is persisted.
// What cleans the index: ForUser drops the entries whose reservation is gone, and the
// whole key expires Options.Grace after the user's last grab.
func (s *Stock) indexReserved(ctx context.Context, rs []domain.Reservation) {
	if len(rs) == 0 {
		return
	}
	pipe := s.client.Pipeline()
	for _, r := range rs {
		key := s.keys.UserOrders(r.UserID)
		pipe.HSet(ctx, key, string(r.OrderID), r.VoucherID.String())
		pipe.PExpire(ctx, key, s.grace)
	}
	// Best effort, as said above.
	_, _ = pipe.Exec(ctx)
}
