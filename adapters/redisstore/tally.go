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
var ackScript = newScript(ackSrc)

// ackTally queues on p the acknowledgement of ds, all of voucher id, that takes
// them off the voucher's tally; a malformed delivery counts nothing. It sends the
// script's text (EVAL): a pipeline or transaction cannot retry a NOSCRIPT. ackRun
// sends it by its hash, for a call of its own.
func ackTally(ctx context.Context, p redis.Scripter, keys Keys, group string, id domain.VoucherID, ds []ports.Delivery) *redis.Cmd {
	return ackScript.Eval(ctx, p, []string{keys.Stream(id), keys.Meta(id)}, ackArgs(group, ds)...)
}

// ackRun is ackTally in a call of its own: EVALSHA, and the text only when the server
// answers NOSCRIPT, so the usual acknowledgement does not carry the script (with the
// prelude, some kilobytes) for Redis to read and hash again.
func ackRun(ctx context.Context, c redis.Scripter, keys Keys, group string, id domain.VoucherID, ds []ports.Delivery) error {
	return ackScript.Run(ctx, c, []string{keys.Stream(id), keys.Meta(id)}, ackArgs(group, ds)...).Err()
}

// ackArgs are ack.lua's arguments for ds: group, then each entry's id and units.
func ackArgs(group string, ds []ports.Delivery) []any {
	args := make([]any, 0, 1+2*len(ds))
	args = append(args, group)
	for _, d := range ds {
		units := 0
		if d.Malformed == "" {
			units = d.Reservation.Quantity
		}
		args = append(args, d.ID, units)
	}
	return args
}

// tallyScript reads a voucher's tally and sets it right at a quiet moment.
// KEYS, ARGV and reply are documented at the top of tally.lua.
//
//go:embed tally.lua
var tallySrc string
var tallyScript = newScript(tallySrc)

// Tally returns what Redis counts for voucher id, in one round trip whatever the
// number of its reservations and entries: the sale state's stock and remaining units,
// its tally, and when the oldest entry not yet acknowledged was reserved (tally.lua,
// which also forgets a tally the queue's own count shows wrong: none waits). Pending
// is the tally's count of entries. A voucher without sale state is not Present.
func (a *Audit) Tally(ctx context.Context, id domain.VoucherID) (ports.StockTally, error) {
	reply, err := tallyScript.Run(ctx, a.client, []string{a.keys.Meta(id), a.keys.Stream(id)}, a.group).Int64Slice()
	if err != nil {
		return ports.StockTally{}, fmt.Errorf("tally stock: %w", err)
	}
	if len(reply) < 6 {
		return ports.StockTally{}, nil
	}
	t := ports.StockTally{Present: true, Stock: int(reply[0]), Remaining: int(reply[1]),
		Queued: max(int(reply[2]), 0), Pending: max(reply[3], 0)}
	if t.Pending > 0 && reply[5] > 0 {
		t.Oldest = time.UnixMilli(reply[5]).UTC()
	}
	return t, nil
}
