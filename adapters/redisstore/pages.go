package redisstore

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/domain"
)

// How Audit's paged reads and batched writes are cut, so no single command works on
// more than about a millisecond's worth of a voucher's reservations.
var (
	// restoreChunk is how many reservations one restore script call records: about
	// 0.3 ms of Redis's time on an idle server (250 took 0.8 ms on average, and one
	// such call in a million was caught at 10–13 ms).
	restoreChunk = 100
	// restorePipeline is how many restore script calls go in one round trip.
	restorePipeline = 64
	// holdsChunk is how many order ids one HMGET of Holds asks about.
	holdsChunk = 1000
)

// Recount's attempts: recountOptimistic counts while grabs go on, then it marks the
// voucher restoring and counts up to recountAttempts in all.
const (
	recountOptimistic = 3
	recountAttempts   = 8
)

// scanReservations reads voucher id's orders hash with HSCAN, auditPage fields at a
// time, and returns the reservations it decodes, sorted by order id, each once (HSCAN
// may return a field twice when the hash is resized during the scan). A record that
// cannot be decoded is left out.
func (a *Audit) scanReservations(ctx context.Context, id domain.VoucherID) ([]domain.Reservation, error) {
	var out []domain.Reservation
	err := a.scanOrders(ctx, id, func(order, record string) error {
		if r, err := decodeRecord(domain.OrderID(order), id, record); err == nil {
			out = append(out, r)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(out, func(a, b domain.Reservation) int { return strings.Compare(string(a.OrderID), string(b.OrderID)) })
	return slices.CompactFunc(out, func(a, b domain.Reservation) bool { return a.OrderID == b.OrderID }), nil
}

// scanOrders calls fn with each field and value of voucher id's orders hash, a page of
// HSCAN at a time; a field may come twice. It stops at fn's first error.
func (a *Audit) scanOrders(ctx context.Context, id domain.VoucherID, fn func(order, record string) error) error {
	key := a.keys.Orders(id)
	for cursor := uint64(0); ; {
		kv, next, err := a.client.HScan(ctx, key, cursor, "", auditPage).Result()
		if err != nil {
			return err
		}
		for i := 0; i+1 < len(kv); i += 2 {
			if err := fn(kv[i], kv[i+1]); err != nil {
				return err
			}
		}
		if next == 0 {
			return nil
		}
		cursor = next
	}
}

// generation returns voucher id's change counter ('gen' of its meta hash: bumped by
// every script that changes the remaining or held units), "0" when it has none.
func (a *Audit) generation(ctx context.Context, id domain.VoucherID) (string, error) {
	gen, err := a.client.HGet(ctx, a.keys.Meta(id), "gen").Result()
	if errors.Is(err, redis.Nil) {
		return "0", nil
	}
	return gen, err
}

// heldUnits sums the quantities of voucher id's reservation records, read a page at a
// time, each order counted once. A record it cannot read is an error.
func (a *Audit) heldUnits(ctx context.Context, id domain.VoucherID) (int, error) {
	seen := make(map[string]struct{})
	held := 0
	err := a.scanOrders(ctx, id, func(order, record string) error {
		if _, ok := seen[order]; ok {
			return nil
		}
		r, err := decodeRecord(domain.OrderID(order), id, record)
		if err != nil {
			// Counting it as nothing could sell its units twice.
			return err
		}
		seen[order] = struct{}{}
		held += r.Quantity
		return nil
	})
	return held, err
}

// recountPaged counts voucher id's held units with HSCAN, outside any script, and
// applies stock minus that count in one short script guarded by the change counter:
// when a grab, release or restore changed the held units while they were counted, the
// script changes nothing and the count starts again. A script that read the whole
// orders hash would block every grab of every voucher for seconds at a million
// reservations; the guard keeps the result as exact as that script's.
//
// A live sale may change the held units faster than a count takes (seconds at a
// million: see BENCHMARKS.md): after recountOptimistic tries it marks the voucher
// restoring, so its grabs answer unavailable (never a wrong answer) for the one count
// that then succeeds, and clears the mark when done, unless the mark was there before (a heal's:
// the heal clears it). Releases can still move the counter then, rarely; it gives up
// after recountAttempts. Should this process die with the mark set, the periodic
// warm-up finds the voucher restoring and heals it (see Stock.Warm).
func (a *Audit) recountPaged(ctx context.Context, id domain.VoucherID) (left int, err error) {
	_, sharded := a.client.(*redis.ClusterClient)
	channel, flag := restockChannel(a.keys, sharded, id)
	marked := false
	defer func() {
		if marked {
			err = cmp.Or(err, a.Restored(context.WithoutCancel(ctx), id))
		}
	}()
	for attempt := range recountAttempts {
		// Marked by another recount or a heal: theirs to clear, so try again next time
		// (they may clear it before this count is done).
		if attempt >= recountOptimistic && !marked {
			state, err := a.markRestoring(ctx, id)
			if err != nil {
				return 0, err
			}
			if state == 0 {
				return 0, fmt.Errorf("voucher %d: %w", id, domain.ErrNotFound)
			}
			marked = state == 1
		}
		gen, err := a.generation(ctx, id)
		if err != nil {
			return 0, err
		}
		held, err := a.heldUnits(ctx, id)
		if err != nil {
			return 0, err
		}
		left, err := recountScript.Run(ctx, a.client, a.keys.withCampaign(id, a.keys.Meta(id)), channel, id.String(), flag, held, gen).Int()
		if err != nil {
			return 0, err
		}
		switch left {
		case -1:
			return 0, fmt.Errorf("voucher %d: %w", id, domain.ErrNotFound)
		case -2:
			continue
		}
		return left, nil
	}
	return 0, fmt.Errorf("voucher %d: %w: its reservations kept changing during %d counts", id, domain.ErrUnavailable, recountAttempts)
}

// restoreBatched runs restoreScript over os: the orders of each voucher in chunks of
// restoreChunk, restorePipeline chunks per round trip. It returns whether Redis agrees
// with each now, in os's order.
func (a *Audit) restoreBatched(ctx context.Context, os []domain.Order) ([]bool, error) {
	out := make([]bool, len(os))
	type chunk struct {
		voucher domain.VoucherID
		at      []int // indexes into os
	}
	var chunks []chunk
	open := map[domain.VoucherID]int{} // voucher → its chunk being filled
	for i, o := range os {
		c, ok := open[o.VoucherID]
		if !ok || len(chunks[c].at) == restoreChunk {
			chunks = append(chunks, chunk{voucher: o.VoucherID})
			c = len(chunks) - 1
			open[o.VoucherID] = c
		}
		chunks[c].at = append(chunks[c].at, i)
	}
	for len(chunks) > 0 {
		n := min(len(chunks), restorePipeline)
		pipe := a.client.Pipeline()
		cmds := make([]*redis.Cmd, n)
		for j, c := range chunks[:n] {
			keys := []string{a.keys.Meta(c.voucher), a.keys.Buyers(c.voucher), a.keys.Orders(c.voucher), a.keys.Released(c.voucher)}
			if campaign, _ := c.voucher.Campaign(); campaign != 0 {
				keys = append(keys, a.keys.CampaignHolders(campaign))
			}
			args := make([]any, 0, 4*len(c.at))
			for _, i := range c.at {
				o := os[i]
				args = append(args, o.UserID.String(), string(o.ID), encodeRecord(o.Reservation()), luaFlag(o.Status.HoldsStock()))
			}
			// EVAL, not EVALSHA: a pipeline cannot fall back when the script is not
			// cached. Redis caches it by its digest all the same.
			cmds[j] = restoreScript.Eval(ctx, pipe, keys, args...)
		}
		// Each command's own error is checked below.
		_, _ = pipe.Exec(ctx)
		for j, c := range chunks[:n] {
			flags, err := cmds[j].Int64Slice()
			if err != nil {
				return out, err
			}
			if len(flags) != len(c.at) {
				return out, fmt.Errorf("voucher %d: restore answered %d flags for %d orders", c.voucher, len(flags), len(c.at))
			}
			for k, i := range c.at {
				out[i] = flags[k] == 1
			}
		}
		chunks = chunks[n:]
	}
	return out, nil
}

// Holds reports which of orders hold a reservation of voucher id now (their records
// are in its orders hash), holdsChunk per HMGET, all in one round trip. A voucher
// without sale state holds none.
func (a *Audit) Holds(ctx context.Context, id domain.VoucherID, orders []domain.OrderID) (map[domain.OrderID]bool, error) {
	out := make(map[domain.OrderID]bool, len(orders))
	if len(orders) == 0 {
		return out, nil
	}
	pipe := a.client.Pipeline()
	var cmds []*redis.SliceCmd
	for chunk := range slices.Chunk(orders, holdsChunk) {
		fields := make([]string, len(chunk))
		for i, o := range chunk {
			fields[i] = string(o)
		}
		cmds = append(cmds, pipe.HMGet(ctx, a.keys.Orders(id), fields...))
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, fmt.Errorf("reservations held: %w", err)
	}
	i := 0
	for _, cmd := range cmds {
		for _, v := range cmd.Val() {
			out[orders[i]] = v != nil
			i++
		}
	}
	return out, nil
}
