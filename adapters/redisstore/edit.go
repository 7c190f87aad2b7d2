package redisstore

import (
	"context"
	_ "embed"
	"fmt"

	"github.com/seckill/seckill/domain"
	"github.com/seckill/seckill/ports"
)

// editScript carries a voucher's terms into its sale state; its contract is at the
// top of edit.lua.
//
//go:embed edit.lua
var editSrc string
var editScript = newScript(editSrc)

// editModes are edit.lua's names of the ports.EditMode values.
var editModes = map[ports.EditMode]string{
	ports.EditIfNewer: "newer", ports.EditHeld: "held", ports.EditHeldStrict: "strict",
}

// Edit carries v's terms (stock, window, per-user limit) and v.Version into its sale
// state as mode says, in one script (edit.lua): the remaining units move by the change
// of the stock (never below 0), units added go first to the voucher's waitlist, as a
// release's do (see Release), a settled sale whose end moves past now is open again,
// the keys expire at the new end plus the grace (not before now plus the grace), and
// units that come back on sale are published on the restock channel (see
// SubscribeRestocks). A change also puts the voucher back in the set of active
// vouchers, scored by its new end, so the workers read its stream while it sells. It
// reports whether it changed anything; without sale state it changes nothing. In mode
// ports.EditHeldStrict it returns domain.ErrNotEnoughUnits when fewer units remain
// than the stock loses, and an error wrapping domain.ErrUnavailable while the state is
// being restored, changing nothing.
func (s *Stock) Edit(ctx context.Context, v domain.Voucher, mode ports.EditMode) (bool, error) {
	channel, sharded := restockChannel(s.keys, s.sharded, v.ID)
	keys := []string{s.keys.Meta(v.ID), s.keys.Buyers(v.ID), s.keys.Orders(v.ID), s.keys.Released(v.ID),
		s.keys.Stream(v.ID), s.keys.Dead(v.ID), s.keys.Waitlist(v.ID), s.keys.Waiting(v.ID)}
	var reply []any
	for {
		tail, variants, number := s.campaignTail(v.ID)
		var err error
		reply, err = editScript.Run(ctx, s.client, append(keys, tail...), v.Stock, v.BeginsAt.UnixMilli(), v.EndsAt.UnixMilli(),
			v.PerUserLimit, s.grace.Milliseconds(), v.Version, editModes[mode], channel, v.ID.String(), sharded,
			string(admissionOf(v)), string(challengeOf(v)), s.window, variants, number).Slice()
		if err != nil {
			return false, fmt.Errorf("edit stock: %w", err)
		}
		if len(reply) == 0 {
			return false, fmt.Errorf("edit stock: unexpected reply %v", reply)
		}
		if code, _ := reply[0].(int64); code != -4 || len(reply) != 2 {
			break
		}
		if err := s.learnVariants(v.ID, variants, reply[1]); err != nil {
			return false, fmt.Errorf("edit stock: %w", err)
		}
	}
	res, _ := reply[0].(int64)
	s.handedOff(ctx, v.ID, reply[1:])
	switch res {
	case -2:
		return false, domain.ErrNotEnoughUnits
	case -3:
		return false, fmt.Errorf("edit stock: voucher %s: %w: its sale state is being restored", v.ID, domain.ErrUnavailable)
	case 1:
		if err := s.register(ctx, v); err != nil {
			return true, fmt.Errorf("edit stock: %w", err)
		}
		return true, nil
	}
	return false, nil
}
