package redisstore

import (
	"context"
	_ "embed"
	"errors"
	"strconv"
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
	if c, n := r.VoucherID.Campaign(); c != 0 && n > 0 {
		// The campaign's kept units taken (campaign_taken in prelude.lua) are summed
		// again by the next script that needs them.
		p.HDel(ctx, k.Campaign(c), "taken")
	}
	p.HIncrBy(ctx, k.Meta(r.VoucherID), tallyUnits, int64(r.Quantity))
	p.HIncrBy(ctx, k.Meta(r.VoucherID), tallyEntries, 1)
	p.HSet(ctx, k.Buyers(r.VoucherID), r.UserID.String(), string(r.OrderID))
	p.HSet(ctx, k.Orders(r.VoucherID), string(r.OrderID), encodeRecord(r))
	p.XAdd(ctx, &redis.XAddArgs{Stream: k.Stream(r.VoucherID), Values: entryValues(r, traceParent(ctx))})
	if waitingRoom {
		p.ZRem(ctx, k.Passes(r.VoucherID.Room()), r.UserID.String())
	}
	for _, key := range []string{k.Buyers(r.VoucherID), k.Orders(r.VoucherID), k.Stream(r.VoucherID)} {
		p.PExpireAt(ctx, key, expire)
	}
}

// CampaignWatch is what a WATCH transaction over a grab of a campaign's voucher needs
// of the campaign: the keys it watches (the campaign's terms and holders, each of its
// vouchers' meta and buyers — every write that moves the campaign's units taken or a
// user's units across it changes one of them), and how many vouchers it believed the
// campaign held when it chose them.
type CampaignWatch struct {
	Keys     []string
	variants int
}

// WatchCampaign returns what a transaction over a grab of voucher id watches of its
// campaign, or nil for a voucher in no campaign.
func (s *Stock) WatchCampaign(id domain.VoucherID) *CampaignWatch {
	campaign, number := id.Campaign()
	if campaign == 0 {
		return nil
	}
	n := s.campaignVariants(campaign, number)
	keys := []string{s.keys.Campaign(campaign), s.keys.CampaignHolders(campaign)}
	for k := 1; k <= n; k++ {
		v := campaign.Variant(k)
		keys = append(keys, s.keys.Meta(v), s.keys.Buyers(v))
	}
	return &CampaignWatch{Keys: keys, variants: n}
}

// ErrCampaignGrew means the campaign holds more vouchers than a CampaignWatch watched:
// the transaction is to be run again with a new one (WatchCampaign learnt the count).
var ErrCampaignGrew = errors.New("the campaign holds more vouchers than watched")

// ReadCampaign reads, on c (the transaction's connection, which watches cw.Keys), the
// campaign's side of user's grab of voucher id, as reserve.lua judges it
// (campaign_terms, campaign_taken, campaign_holding in prelude.lua): the cap's units
// left, the per-user limit, and the units and orders user holds of the campaign's
// other vouchers. ok is false when the campaign has no terms loaded (no sale state);
// restoring is true while one of its vouchers is being restored. It returns
// ErrCampaignGrew when the campaign holds more vouchers than cw watched.
func (s *Stock) ReadCampaign(ctx context.Context, c redis.Cmdable, cw *CampaignWatch, id domain.VoucherID, user domain.UserID) (sale domain.CampaignSale, ok, restoring bool, err error) {
	campaign, number := id.Campaign()
	terms, err := c.HMGet(ctx, s.keys.Campaign(campaign), "variants", "limit", "cap").Result()
	if err != nil {
		return sale, false, false, err
	}
	variants, vok := intField(terms[0])
	limit, lok := intField(terms[1])
	if !vok || !lok || number > variants {
		return sale, false, false, nil
	}
	if variants != cw.variants {
		if err := s.learnVariants(id, cw.variants, strconv.Itoa(variants)); err != nil {
			return sale, false, false, err
		}
		return sale, false, false, ErrCampaignGrew
	}
	sale.PerUserLimit = limit
	u := user.String()
	pipe := c.Pipeline()
	metas := make([]*redis.SliceCmd, variants)
	held := make([]*redis.StringCmd, variants)
	holder := pipe.SIsMember(ctx, s.keys.CampaignHolders(campaign), u)
	for k := range variants {
		v := campaign.Variant(k + 1)
		metas[k] = pipe.HMGet(ctx, s.keys.Meta(v), "stock", "remaining", "restoring")
		if k+1 != number {
			held[k] = pipe.HGet(ctx, s.keys.Buyers(v), u)
		}
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return sale, false, false, err
	}
	taken := 0
	for _, m := range metas {
		f := m.Val()
		stock, sok := intField(f[0])
		remaining, rok := intField(f[1])
		if !sok || !rok {
			return sale, false, false, nil
		}
		if r, _ := f[2].(string); r == "1" {
			return sale, true, true, nil
		}
		taken += stock - remaining
	}
	if capUnits, capped := intField(terms[2]); capped {
		sale.Capped, sale.CapLeft = true, capUnits-taken
	}
	if holder.Val() {
		if sale.UserUnits, sale.UserOrders, err = s.holdings(ctx, c, campaign, held); err != nil {
			return sale, false, false, err
		}
	}
	return sale, true, false, nil
}

// holdings returns the units and the orders held names, the user's buyer entry in
// each of campaign's vouchers in turn (nil or empty: none in that one), reading each
// order's record on c.
func (s *Stock) holdings(ctx context.Context, c redis.Cmdable, campaign domain.CampaignID, held []*redis.StringCmd) (int, []domain.OrderID, error) {
	units, orders := 0, []domain.OrderID(nil)
	for k, h := range held {
		if h == nil || h.Val() == "" {
			continue
		}
		order, v := domain.OrderID(h.Val()), campaign.Variant(k+1)
		record, err := c.HGet(ctx, s.keys.Orders(v), string(order)).Result()
		if err != nil && !errors.Is(err, redis.Nil) {
			return 0, nil, err
		}
		// As record_qty in prelude.lua: a record missing or unread counts one unit.
		n := 1
		if r, err := decodeRecord(order, v, record); err == nil {
			n = r.Quantity
		}
		units += n
		orders = append(orders, order)
	}
	return units, orders, nil
}

// RecordCampaignHolder queues on p, beside RecordReservation's writes, the user's
// place among the holders of r's campaign (reserve.lua's SADD), so its grabs of the
// campaign's other vouchers look for this order; expire is the sale's keys' expiry.
func (s *Stock) RecordCampaignHolder(ctx context.Context, p redis.Pipeliner, r domain.Reservation, expire time.Time) {
	campaign, _ := r.VoucherID.Campaign()
	p.SAdd(ctx, s.keys.CampaignHolders(campaign), r.UserID.String())
	p.PExpireAt(ctx, s.keys.CampaignHolders(campaign), expire)
}

// intField reads an HMGET field holding a decimal integer; false when it is absent
// or not one.
func intField(v any) (int, bool) {
	s, ok := v.(string)
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(s)
	return n, err == nil
}
