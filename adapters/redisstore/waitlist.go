package redisstore

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/domain"
	"github.com/seckill/seckill/ports"
)

// Waitlist returns the key of a voucher's waitlist: a sorted set of the user ids
// (decimal) waiting for a unit to come back, scored by the order they joined in.
func (k Keys) Waitlist(id domain.VoucherID) string { return k.key(id, "waitlist") }

// Waiting returns the key of the hash from each user on the voucher's waitlist to the
// order id a unit handed to it becomes, with the field "seq", the last score the
// waitlist gave.
func (k Keys) Waiting(id domain.VoucherID) string { return k.key(id, "waiting") }

// UserWaits returns the key of the set of the vouchers (decimal) whose waitlists a
// user joined, under the user's own hash tag {u<id>}, so Waitlist.Drop finds them
// without walking the vouchers. It says where to look: a user handed a unit, or taken
// off, stays in it until it expires, Options.Grace after the user's last join.
func (k Keys) UserWaits(user domain.UserID) string {
	return k.prefix() + ":{u" + user.String() + "}:waits"
}

// waitlistScript puts a user on a voucher's waitlist; its contract is at the top of
// waitlist.lua.
//
//go:embed waitlist.lua
var waitlistSrc string
var waitlistScript = newScript(waitlistSrc)

// Outcomes of waitlistScript.
const (
	waitlisted = iota
	waitHeld
	waitNotSoldOut
	waitEnded
	waitNoSale
	waitRestoring
	waitCampaignLimit
	waitCampaignChanged
)

// Waitlist is a ports.Waitlist kept in Redis beside the sale state of the stock it is
// made from, whose Release and Edit hand units to it (hand_off in prelude.lua).
type Waitlist struct {
	s *Stock
}

var _ ports.Waitlist = (*Waitlist)(nil)

// NewWaitlist returns the waitlists of s's vouchers.
func NewWaitlist(s *Stock) *Waitlist { return &Waitlist{s: s} }

// Join puts user on voucher's waitlist with order as the id of the order a unit
// handed to it becomes, in one script judged by the sale state (waitlist.lua). First
// it indexes order in the user's reservations (Keys.UserOrders) and the voucher in the
// user's waitlists (Keys.UserWaits), as a grab on Redis Cluster indexes itself before
// it is judged (indexGrabs): the hand-off cannot reach the user's slot, and an index
// entry of an order never handed off is told apart by the voucher's orders hash. Its
// answers are ports.Waitlist.Join's.
func (w *Waitlist) Join(ctx context.Context, voucher domain.VoucherID, user domain.UserID, order domain.OrderID) (int, error) {
	s := w.s
	pipe := s.client.Pipeline()
	pipe.HSet(ctx, s.keys.UserOrders(user), string(order), voucher.String())
	pipe.PExpire(ctx, s.keys.UserOrders(user), s.grace)
	pipe.SAdd(ctx, s.keys.UserWaits(user), voucher.String())
	pipe.PExpire(ctx, s.keys.UserWaits(user), s.grace)
	if _, err := pipe.Exec(ctx); err != nil {
		return 0, fmt.Errorf("join the waitlist: %w: %w", domain.ErrUnavailable, err)
	}
	keys := []string{s.keys.Meta(voucher), s.keys.Buyers(voucher), s.keys.Waitlist(voucher), s.keys.Waiting(voucher)}
	var code int64
	var extra string
	for {
		tail, variants, number := s.campaignTail(voucher)
		reply, err := waitlistScript.Run(ctx, s.client, append(keys, tail...), user.String(), string(order), variants, number).Slice()
		if err != nil {
			return 0, fmt.Errorf("join the waitlist: %w: %w", domain.ErrUnavailable, err)
		}
		if len(reply) != 2 {
			return 0, fmt.Errorf("join the waitlist: unexpected reply %v", reply)
		}
		code, _ = reply[0].(int64)
		extra, _ = reply[1].(string)
		if code != waitCampaignChanged {
			break
		}
		if err := s.learnVariants(voucher, variants, reply[1]); err != nil {
			return 0, fmt.Errorf("join the waitlist: %w", err)
		}
	}
	switch code {
	case waitlisted:
		return strconv.Atoi(extra)
	case waitHeld:
		return 0, &domain.AlreadyPurchasedError{OrderID: domain.OrderID(extra)}
	case waitNotSoldOut:
		return 0, domain.ErrNotSoldOut
	case waitEnded:
		return 0, domain.ErrEnded
	case waitNoSale:
		return 0, domain.ErrNotFound
	case waitCampaignLimit:
		if held := strings.Fields(extra); len(held) > 0 {
			orders := make([]domain.OrderID, len(held))
			for i, id := range held {
				orders[i] = domain.OrderID(id)
			}
			return 0, &domain.AlreadyPurchasedError{OrderID: orders[0], Orders: orders}
		}
	case waitRestoring:
		return 0, fmt.Errorf("join the waitlist: voucher %s: %w: its sale state is being restored", voucher, domain.ErrUnavailable)
	}
	return 0, fmt.Errorf("join the waitlist: unexpected outcome %d %q", code, extra)
}

// Position returns user's position on voucher's waitlist (from 1), or
// domain.ErrNotFound.
func (w *Waitlist) Position(ctx context.Context, voucher domain.VoucherID, user domain.UserID) (int, error) {
	rank, err := w.s.client.ZRank(ctx, w.s.keys.Waitlist(voucher), user.String()).Result()
	if errors.Is(err, redis.Nil) {
		return 0, domain.ErrNotFound
	}
	if err != nil {
		return 0, fmt.Errorf("waitlist position: %w: %w", domain.ErrUnavailable, err)
	}
	return int(rank) + 1, nil
}

// Leave takes user off voucher's waitlist, its order id with it, in one transaction.
func (w *Waitlist) Leave(ctx context.Context, voucher domain.VoucherID, user domain.UserID) error {
	pipe := w.s.client.TxPipeline()
	pipe.ZRem(ctx, w.s.keys.Waitlist(voucher), user.String())
	pipe.HDel(ctx, w.s.keys.Waiting(voucher), user.String())
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("leave the waitlist: %w: %w", domain.ErrUnavailable, err)
	}
	return nil
}

// Drop takes user off the waitlist of every voucher in its Keys.UserWaits, one
// transaction per voucher.
func (w *Waitlist) Drop(ctx context.Context, user domain.UserID) error {
	vouchers, err := w.s.client.SMembers(ctx, w.s.keys.UserWaits(user)).Result()
	if err != nil {
		return fmt.Errorf("drop from the waitlists: %w: %w", domain.ErrUnavailable, err)
	}
	for _, v := range vouchers {
		id, err := domain.ParseVoucherID(v)
		if err != nil {
			continue
		}
		if err := w.Leave(ctx, id, user); err != nil {
			return err
		}
	}
	return nil
}

// Length returns how many users wait on voucher's waitlist.
func (w *Waitlist) Length(ctx context.Context, voucher domain.VoucherID) (int, error) {
	n, err := w.s.client.ZCard(ctx, w.s.keys.Waitlist(voucher)).Result()
	if err != nil {
		return 0, fmt.Errorf("waitlist length: %w: %w", domain.ErrUnavailable, err)
	}
	return int(n), nil
}

// HandOffs returns how many units s handed to a waitlist since it was made (Release
// and Edit).
func (s *Stock) HandOffs() int64 { return s.handoffs.Load() }

// handedOff reads the users and orders a release or an edit handed units to, from
// pairs (user, order, user, order, …), counts them, and indexes each order in its
// user's reservations (Keys.UserOrders) again: the user joined with it indexed, but
// the index may have expired since. A failure of that write is no failure of the
// hand-off, which stands: the fulfillment workers persist the order all the same.
func (s *Stock) handedOff(ctx context.Context, voucher domain.VoucherID, pairs []any) {
	if len(pairs) < 2 {
		return
	}
	s.handoffs.Add(int64(len(pairs) / 2))
	pipe := s.client.Pipeline()
	for i := 0; i+1 < len(pairs); i += 2 {
		u, _ := pairs[i].(string)
		order, _ := pairs[i+1].(string)
		user, err := domain.ParseUserID(u)
		if err != nil {
			continue
		}
		pipe.HSet(ctx, s.keys.UserOrders(user), order, voucher.String())
		pipe.PExpire(ctx, s.keys.UserOrders(user), s.grace)
	}
	_, _ = pipe.Exec(ctx) //nolint:errcheck // see above: the index is a hint
}

// Waiting returns how many users wait on the waitlists of every voucher whose
// reservations the queue reads (Keys.Active: those on sale, and those whose sale
// ended a moment ago), in two round trips: the vouchers, then each one's length.
func (w *Waitlist) Waiting(ctx context.Context) (int, error) {
	ids, err := w.s.client.ZRange(ctx, w.s.keys.Active(), 0, -1).Result()
	if err != nil {
		return 0, fmt.Errorf("waitlists' length: %w: %w", domain.ErrUnavailable, err)
	}
	pipe := w.s.client.Pipeline()
	cards := make([]*redis.IntCmd, 0, len(ids))
	for _, v := range ids {
		id, err := domain.ParseVoucherID(v)
		if err != nil {
			continue
		}
		cards = append(cards, pipe.ZCard(ctx, w.s.keys.Waitlist(id)))
	}
	if len(cards) == 0 {
		return 0, nil
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return 0, fmt.Errorf("waitlists' length: %w: %w", domain.ErrUnavailable, err)
	}
	n := 0
	for _, c := range cards {
		n += int(c.Val())
	}
	return n, nil
}
