package redisstore

import (
	"context"
	_ "embed"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/domain"
	"github.com/seckill/seckill/ports"
)

// The tally: two fields of a voucher's sale state (Keys.Meta) count its queue's
// entries not yet acknowledged, "queued" their units and "queued_entries" the entries.
// The scripts that append an entry (reserve.lua, requeue.lua, and the WATCH strategy's
// transaction) add to them in the same atomic step; ack.lua takes an entry off when,
// and only when, its XACK acknowledges it (Queue.Ack, Queue.DeadLetter). So the stats
// read two fields instead of the stream.
//
// The tally counts what the grab path appended. Entries it cannot account for are
// an entry deleted from the stream before it was acknowledged (no one but an operator
// deletes one: counted, never taken off) and entries delivered again after the
// consumer group itself was lost (acknowledged twice, so taken off twice). Such an
// error lasts until the queue next holds nothing to acknowledge: Tally then sees the
// queue's own count at 0 and sets the tally to 0 (tally.lua). It never reports below
// zero.

const (
	tallyUnits   = "queued"
	tallyEntries = "queued_entries"
)

// ackScript acknowledges entries of one voucher and takes them off its tally.
// KEYS, ARGV and reply are documented at the top of ack.lua.
//
//go:embed ack.lua
var ackSrc string
var ackScript = redis.NewScript(ackSrc)

// ackTally queues on p the acknowledgement of ds, all of voucher id, that takes
// them off the voucher's tally; a malformed delivery counts nothing.
func ackTally(ctx context.Context, p redis.Scripter, keys Keys, group string, id domain.VoucherID, ds []ports.Delivery) *redis.Cmd {
	args := make([]any, 0, 1+2*len(ds))
	args = append(args, group)
	for _, d := range ds {
		units := 0
		if d.Malformed == "" {
			units = d.Reservation.Quantity
		}
		args = append(args, d.ID, units)
	}
	// EVAL, not EVALSHA: a pipeline or transaction cannot retry a NOSCRIPT, and the
	// script is short.
	return ackScript.Eval(ctx, p, []string{keys.Stream(id), keys.Meta(id)}, args...)
}

// tallyScript reads a voucher's tally and sets it right at a quiet moment.
// KEYS, ARGV and reply are documented at the top of tally.lua.
//
//go:embed tally.lua
var tallySrc string
var tallyScript = redis.NewScript(tallySrc)

// Tally returns what Redis counts for voucher id, in two round trips whatever the
// number of its reservations and entries: the sale state's stock and remaining units,
// its tally, and the queue's own count of entries not yet acknowledged (tally.lua,
// which also forgets a tally the queue's count shows wrong: none waits); then the
// oldest entry not yet acknowledged — the group's oldest pending entry (XPENDING's
// summary) or, when none is pending, the first one after the group's last delivered
// entry — whose "at" field says when it was reserved. Pending is the tally's count of
// entries (the queue's own is not exact on every server: the embedded one reports the
// stream's length as the lag). A voucher whose sale state is missing or partial is
// not Present.
func (a *Audit) Tally(ctx context.Context, id domain.VoucherID) (ports.StockTally, error) {
	stream := a.keys.Stream(id)
	reply, err := tallyScript.Run(ctx, a.client, []string{a.keys.Meta(id), stream}, a.group).Int64Slice()
	if err != nil {
		return ports.StockTally{}, fmt.Errorf("tally stock: %w", err)
	}
	if len(reply) < 5 {
		return ports.StockTally{}, nil
	}
	t := ports.StockTally{Present: true, Stock: int(reply[0]), Remaining: int(reply[1]),
		Queued: max(int(reply[2]), 0), Pending: max(reply[3], 0)}
	if t.Pending == 0 {
		return t, nil
	}

	pipe := a.client.Pipeline()
	groups := pipe.XInfoGroups(ctx, stream)
	pending := pipe.XPending(ctx, stream, a.group)
	// Exec reports the first failed command; XINFO and XPENDING fail on a missing
	// stream or group, which only means no entry is pending.
	_, _ = pipe.Exec(ctx)
	var first *redis.XMessageSliceCmd
	if p, err := pending.Result(); err == nil && p.Count > 0 {
		first = a.client.XRangeN(ctx, stream, p.Lower, p.Lower, 1)
	} else if gs, err := groups.Result(); err == nil {
		for _, g := range gs {
			if g.Name != a.group {
				continue
			}
			last, err := parseStreamID(g.LastDeliveredID)
			if err != nil {
				return ports.StockTally{}, fmt.Errorf("tally stock: %s: %w", stream, err)
			}
			first = a.client.XRangeN(ctx, stream, last.next().String(), "+", 1)
		}
	}
	if first == nil {
		return t, nil
	}
	msgs, err := first.Result()
	if err != nil {
		return ports.StockTally{}, fmt.Errorf("tally stock: %w", err)
	}
	if len(msgs) == 1 {
		if r, err := decodeFields(id, msgs[0].Values); err == nil {
			t.Oldest = r.At
		} else if sid, err := parseStreamID(msgs[0].ID); err == nil {
			t.Oldest = time.UnixMilli(int64(sid.ms))
		}
	}
	return t, nil
}
