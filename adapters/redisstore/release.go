package redisstore

import (
	"context"
	_ "embed"
	"fmt"

	"github.com/seckill/seckill/domain"
)

// releaseScript gives an order's units back and forgets the user's reservation, only
// if the user's reservation still names the order, and then publishes the voucher id
// on the restock channel; its contract is at the top of release.lua.
//
//go:embed release.lua
var releaseSrc string
var releaseScript = newScript(releaseSrc)

// Release returns o.Quantity units of o.VoucherID to the sale and forgets o.UserID's
// reservation, only if that reservation still names o.ID; it reports whether it did.
// Applied twice, or to an order the user's reservation no longer names (the user has
// grabbed again since), it changes nothing and reports false; so does a voucher without
// sale state. Whenever the voucher has sale state, o.ID joins its released set
// (Keys.Released), so no later Restore records the closed order again. A release that gives units back publishes o.VoucherID on the restock
// channel (Keys.Restock, see SubscribeRestocks), in the same script. It returns a
// *domain.ValidationError for a quantity below 1.
func (s *Stock) Release(ctx context.Context, o domain.Order) (bool, error) {
	// A quantity below 1 would take units instead of giving them back.
	if o.Quantity < 1 {
		return false, domain.Invalid("quantity", "must be at least 1")
	}
	keys := []string{s.keys.Meta(o.VoucherID), s.keys.Buyers(o.VoucherID), s.keys.Orders(o.VoucherID), s.keys.Released(o.VoucherID)}
	channel, sharded := restockChannel(s.keys, s.sharded, o.VoucherID)
	released, err := releaseScript.Run(ctx, s.client, keys,
		o.UserID.String(), string(o.ID), o.Quantity, channel, o.VoucherID.String(), sharded).Int()
	if err != nil {
		return false, fmt.Errorf("release stock: %w", err)
	}
	return released == 1, nil
}
