package redisstore

import (
	"context"
	"sync"

	"github.com/seckill/seckill/domain"
)

// maxUnindexed bounds the grabs a Stock keeps to write to their users' indexes again.
const maxUnindexed = 100_000

// UserOrders returns the key of a user's index of the orders they reserved: a hash from
// order id to voucher id (decimal), under the user's own hash tag {u<id>}, so reading a
// user's reservations never walks the vouchers. It says where to look, not what is
// held: the voucher's orders hash does (see Reservations.ForUser). It expires
// Options.Grace after the user's last grab.
func (k Keys) UserOrders(user domain.UserID) string {
	return k.prefix() + ":{u" + user.String() + "}:orders"
}

// unindexed is the grabs whose index write failed, oldest first.
type unindexed struct {
	mu sync.Mutex
	rs []domain.Reservation
}

// indexReserved writes each of rs, the grabs one reserve call took, to its user's
// index (Keys.UserOrders), in one round trip. The reserve script cannot: on Redis
// Cluster a script reaches only its voucher's slot, and a user's index lives in the
// user's. So it is written after the script, before the grabs are answered; an index
// entry therefore never names an order that was not reserved.
//
// Should the write fail (Redis failed between the two), the grabs are answered all the
// same, as reserved (they are, and will be persisted), and their entries are kept here
// (up to maxUnindexed) and written again with the next reserve call's. Until then, or
// for good if this process ends first, the user's reads miss the order while it is
// queued: Find answers domain.ErrNotFound and ForUser leaves it out, both to its
// owner, until the worker persists it and the database answers — the same moments
// Redis needed to come back. Nothing wrong is ever listed: entries are checked against
// the orders hash.
//
// What cleans the index: ForUser drops the entries whose reservation is gone, and the
// whole key expires Options.Grace after the user's last grab.
func (s *Stock) indexReserved(ctx context.Context, rs []domain.Reservation) {
	s.unindexed.mu.Lock()
	again := s.unindexed.rs
	s.unindexed.rs = nil
	s.unindexed.mu.Unlock()
	rs = append(again, rs...)
	if len(rs) == 0 {
		return
	}
	pipe := s.client.Pipeline()
	for _, r := range rs {
		key := s.keys.UserOrders(r.UserID)
		pipe.HSet(ctx, key, string(r.OrderID), r.VoucherID.String())
		pipe.PExpire(ctx, key, s.grace)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		s.unindexed.mu.Lock()
		s.unindexed.rs = append(rs, s.unindexed.rs...)
		if n := len(s.unindexed.rs); n > maxUnindexed {
			s.unindexed.rs = s.unindexed.rs[n-maxUnindexed:]
		}
		s.unindexed.mu.Unlock()
	}
}
