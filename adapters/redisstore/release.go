package redisstore

import (
	"context"
	_ "embed"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/domain"
)

// releaseScript gives an order's units back and forgets the user's reservation, only
// if the user's reservation still names the order, and then publishes the voucher id
// on the restock channel (a channel is not a key, so it comes as an argument).
// KEYS[1] meta, KEYS[2] buyers, KEYS[3] orders (one voucher, one tag).
// ARGV: user_id, order_id, qty, restock_channel, voucher_id, sharded ("1": SPUBLISH on
// the voucher's channel, as on Redis Cluster; "0": PUBLISH).
// Returns 1 when it released (and published), 0 when there was nothing to release (no
// sale state, or the user holds no reservation or another one; nothing is published).
//
//go:embed release.lua
var releaseSrc string
var releaseScript = redis.NewScript(releaseSrc)

// Release returns o.Quantity units of o.VoucherID to the sale and forgets o.UserID's
// reservation, only if that reservation still names o.ID; it reports whether it did.
// Applied twice, or to an order the user's reservation no longer names (the user has
// grabbed again since), it changes nothing and reports false; so does a voucher without
// sale state. A release that gives units back publishes o.VoucherID on the restock
// channel (Keys.Restock, see SubscribeRestocks), in the same script. It returns a
// *domain.ValidationError for a quantity below 1.
func (s *Stock) Release(ctx context.Context, o domain.Order) (bool, error) {
	// A quantity below 1 would take units instead of giving them back.
	if o.Quantity < 1 {
		return false, domain.Invalid("quantity", "must be at least 1")
	}
	keys := []string{s.keys.Meta(o.VoucherID), s.keys.Buyers(o.VoucherID), s.keys.Orders(o.VoucherID)}
	channel, sharded := restockChannel(s.keys, s.sharded, o.VoucherID)
	released, err := releaseScript.Run(ctx, s.client, keys,
		o.UserID.String(), string(o.ID), o.Quantity, channel, o.VoucherID.String(), sharded).Int()
	if err != nil {
		return false, fmt.Errorf("release stock: %w", err)
	}
	return released == 1, nil
}
