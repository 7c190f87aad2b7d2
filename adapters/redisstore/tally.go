package redisstore

import (
	"context"
	_ "embed"
	"fmt"
	"strconv"
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
// left out of it: an entry deleted from the stream while pending (no one but an
// operator deletes one), and entries delivered again after the consumer group itself
// was lost (acknowledged twice, so taken off twice). Tally never reports below zero.

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

// Tally returns what Redis counts for voucher id, in two round trips whatever the
// number of its reservations and entries: the sale state's stock and remaining units
// and its tally, then the oldest entry not yet acknowledged — the group's oldest
// pending entry (XPENDING's summary) or, when none is pending, the first one after
// the group's last delivered entry — whose "at" field says when it was reserved. A
// voucher whose sale state is missing or partial is not Present.
func (a *Audit) Tally(ctx context.Context, id domain.VoucherID) (ports.StockTally, error) {
	stream := a.keys.Stream(id)
	pipe := a.client.Pipeline()
	meta := pipe.HMGet(ctx, a.keys.Meta(id), append(metaFields, tallyUnits, tallyEntries)...)
	groups := pipe.XInfoGroups(ctx, stream)
	pending := pipe.XPending(ctx, stream, a.group)
	// Exec reports the first failed command; XINFO and XPENDING fail on a missing
	// stream or group, which only means nothing waits.
	_, _ = pipe.Exec(ctx)
	if err := meta.Err(); err != nil {
		return ports.StockTally{}, fmt.Errorf("tally stock: %w", err)
	}
	values := meta.Val()
	for _, v := range values[:len(metaFields)] {
		if v == nil {
			return ports.StockTally{}, nil
		}
	}
	stock, err1 := strconv.Atoi(values[0].(string))
	left, err2 := strconv.Atoi(values[1].(string))
	if err1 != nil || err2 != nil {
		return ports.StockTally{}, fmt.Errorf("tally stock: voucher %d: malformed sale state %v", id, values)
	}
	t := ports.StockTally{Present: true, Stock: stock, Remaining: left}
	t.Queued = max(tallyField(values[len(metaFields)]), 0)
	t.Pending = int64(max(tallyField(values[len(metaFields)+1]), 0))

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

// tallyField reads a tally field; a missing one counts 0.
func tallyField(v any) int {
	s, _ := v.(string)
	n, _ := strconv.Atoi(s)
	return n
}
