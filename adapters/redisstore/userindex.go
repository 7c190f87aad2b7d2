package redisstore

import (
	"context"
	"fmt"

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

// indexGrabs writes each of rs, grabs about to be judged, to its user's index
// (Keys.UserOrders), in one round trip, before they are. On one Redis server the
// reserve script indexes each reservation itself, in the same step; on Redis Cluster
// it cannot (a script reaches only its voucher's slot, and a user's index lives in the
// user's), nor can the watch strategy's transaction. Written before, every reservation has its entry,
// whatever happens between the two calls (this process killed, Redis failing); an
// entry may name an order that was never reserved (the grab was refused, or never
// ran), which readers tell by the voucher's orders hash (see Reservations.ForUser).
// When the write fails, the grabs are not sent: the caller answers them unavailable,
// nothing done.
//
// Entries are never deleted one by one (a reader cannot tell an entry whose grab is
// still on its way from one whose grab was refused): the whole key expires
// Options.Grace after the user's last grab, and a user's grabs are few (one per
// voucher at most is reserved, and the per-user rate bounds the rest).
func (s *Stock) indexGrabs(ctx context.Context, rs []domain.Reservation) error {
	if len(rs) == 0 {
		return nil
	}
	pipe := s.client.Pipeline()
	for _, r := range rs {
		key := s.keys.UserOrders(r.UserID)
		pipe.HSet(ctx, key, string(r.OrderID), r.VoucherID.String())
		pipe.PExpire(ctx, key, s.grace)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("index the grabs: %w", err)
	}
	return nil
}
