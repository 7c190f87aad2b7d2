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
// (Keys.Released), so no later Restore records the closed order again. The units go
// first, one each, to the first users of the voucher's waitlist who may still buy
// (Waitlist; hand_off in prelude.lua), in the same script: each becomes a reservation
// under the order id the user joined with, appended to the stream as a grab's. A
// release that puts units back on sale publishes o.VoucherID on the restock channel
// (Keys.Restock, see SubscribeRestocks), in the same script. It returns a
// *domain.ValidationError for a quantity below 1. A campaign's voucher hands its units
// only to users below the campaign's per-user limit.
func (s *Stock) Release(ctx context.Context, o domain.Order) (bool, error) {
	// A quantity below 1 would take units instead of giving them back.
	if o.Quantity < 1 {
		return false, domain.Invalid("quantity", "must be at least 1")
	}
	id := o.VoucherID
	keys := []string{s.keys.Meta(id), s.keys.Buyers(id), s.keys.Orders(id), s.keys.Released(id),
		s.keys.Stream(id), s.keys.Waitlist(id), s.keys.Waiting(id)}
	channel, sharded := restockChannel(s.keys, s.sharded, id)
	for {
		tail, variants, number := s.campaignTail(id)
		reply, err := releaseScript.Run(ctx, s.client, append(keys, tail...),
			o.UserID.String(), string(o.ID), o.Quantity, channel, id.String(), sharded, s.window, variants, number).Slice()
		if err != nil {
			return false, fmt.Errorf("release stock: %w", err)
		}
		if len(reply) == 0 {
			return false, fmt.Errorf("release stock: unexpected reply %v", reply)
		}
		released, _ := reply[0].(int64)
		if released == -1 && len(reply) == 2 {
			if err := s.learnVariants(id, variants, reply[1]); err != nil {
				return false, fmt.Errorf("release stock: %w", err)
			}
			continue
		}
		s.handedOff(ctx, id, reply[1:])
		return released == 1, nil
	}
}
