package redisstore

import (
	"context"
	_ "embed"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/domain"
)

// What a grab strategy that takes stock over Stock's own keys by other means than the
// reserve script needs of it (the WATCH/MULTI strategy, adapters/strategies/watchstock):
// the client, the users' index, the rate limiter, the backlog's brake, the records a
// reservation writes, and the answers the script gives. The default path does not use
// them; reserve.go does the same inside one script.

// Client returns the client Stock keeps its state through.
func (s *Stock) Client() redis.UniversalClient { return s.client }

// IndexGrabs adds each reservation's order to its user's index of orders, as Reserve
// does before it judges (on a cluster, the index lives on another node).
func (s *Stock) IndexGrabs(ctx context.Context, rs []domain.Reservation) error {
	return s.indexGrabs(ctx, rs)
}

// rateScript counts a grab against its user's rate with reserve.lua's limiter; its
// contract is at the top of rate.lua.
//
//go:embed rate.lua
var rateSrc string
var rateScript = newScript(rateSrc)

// RateWait counts r against its user's rate on c (a transaction's own connection,
// say) with reserve.lua's limiter, and returns how long the user must wait before a
// grab is taken: 0 when r is within the rate. With no limit configured it counts
// nothing and returns 0.
func (s *Stock) RateWait(ctx context.Context, c redis.Scripter, r domain.Reservation) (time.Duration, error) {
	if s.interval <= 0 {
		return 0, nil
	}
	ms, err := rateScript.Run(ctx, c, []string{s.keys.Rates(r.VoucherID), s.keys.Meta(r.VoucherID)},
		r.UserID.String(), s.interval, s.tolerance, atMillis(r.At)).Int64()
	if err != nil {
		return 0, err
	}
	return time.Duration(max(ms, 0)) * time.Millisecond, nil
}

// Backlogged reports whether more of the voucher's reservations wait to be persisted
// than Options.MaxBacklog allows, as reserve.lua counts them: the stream's length
// bounds them, and only past the bound are they counted (unacked.lua). With no bound
// it reads nothing and reports false.
func (s *Stock) Backlogged(ctx context.Context, c redis.Cmdable, id domain.VoucherID) (bool, error) {
	if s.maxBacklog <= 0 {
		return false, nil
	}
	n, err := c.XLen(ctx, s.keys.Stream(id)).Result()
	if err != nil || n <= int64(s.maxBacklog) {
		return false, err
	}
	ws, err := unackedOf(ctx, c, s.group, int64(s.maxBacklog)+1, []string{s.keys.Stream(id)})
	if err != nil {
		return false, err
	}
	return ws[0].total() > int64(s.maxBacklog), nil
}

// RestoringAnswer is the answer to r while its voucher's sale state is being restored
// (warm.lua, restoring.lua), as the reserve script gives it.
func RestoringAnswer(r domain.Reservation) error { return reserveOutcome(r, restoring, "") }

// BackloggedAnswer is the answer to r while the voucher's backlog is over
// Options.MaxBacklog, as the reserve script gives it.
func BackloggedAnswer(r domain.Reservation) error { return reserveOutcome(r, backlogged, "") }

// RecordReservation queues on p the writes that take r, as reserve.lua writes them:
// the sale state's remaining units, generation and tally, the buyer entry, the
// reservation's record (with the deadline of Options.PaymentWindow when r has none)
// and its stream entry, the pass it uses up in a waiting room, and the keys' expiry at
// expire.
func (s *Stock) RecordReservation(ctx context.Context, p redis.Pipeliner, r domain.Reservation, waitingRoom bool, expire time.Time) {
	k := s.keys
	if r.Expires.IsZero() && s.window > 0 {
		r.Expires = r.At.Add(time.Duration(s.window) * time.Millisecond)
	}
	p.HIncrBy(ctx, k.Meta(r.VoucherID), "remaining", -int64(r.Quantity))
	p.HIncrBy(ctx, k.Meta(r.VoucherID), "gen", 1)
	p.HIncrBy(ctx, k.Meta(r.VoucherID), tallyUnits, int64(r.Quantity))
	p.HIncrBy(ctx, k.Meta(r.VoucherID), tallyEntries, 1)
	p.HSet(ctx, k.Buyers(r.VoucherID), r.UserID.String(), string(r.OrderID))
	p.HSet(ctx, k.Orders(r.VoucherID), string(r.OrderID), encodeRecord(r))
	p.XAdd(ctx, &redis.XAddArgs{Stream: k.Stream(r.VoucherID), Values: entryValues(r, traceParent(ctx))})
	if waitingRoom {
		p.ZRem(ctx, k.Passes(r.VoucherID), r.UserID.String())
	}
	for _, key := range []string{k.Buyers(r.VoucherID), k.Orders(r.VoucherID), k.Stream(r.VoucherID)} {
		p.PExpireAt(ctx, key, expire)
	}
}
