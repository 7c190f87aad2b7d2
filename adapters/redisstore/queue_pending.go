package redisstore

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/domain"
	"github.com/seckill/seckill/ports"
)

// Claim takes over up to count entries (a count below 1 counts as 1) that have been
// pending longer than minIdle, from any consumer, stream by stream with XAUTOCLAIM.
// Entries deleted from their stream meanwhile are acknowledged away and not returned;
// so are entries their previous owner acknowledged while they were being claimed. The
// Deliveries of each entry come from XPENDING and include this delivery.
func (q *Queue) Claim(ctx context.Context, minIdle time.Duration, count int) ([]ports.Delivery, error) {
	count = max(count, 1)
	ids, err := q.vouchers(ctx)
	if err != nil {
		return nil, fmt.Errorf("claim queue entries: %w", err)
	}
	var ds []ports.Delivery
	first := 0
	if len(ids) > 0 {
		first = int(q.next.Add(1) % uint64(len(ids)))
	}
	for i := range ids {
		if len(ds) >= count {
			break
		}
		got, err := q.claim(ctx, ids[(first+i)%len(ids)], minIdle, count-len(ds))
		if err != nil {
			// What was claimed stays pending under this consumer and is claimed again
			// once idle: nothing is lost by dropping it here.
			return nil, fmt.Errorf("claim queue entries: %w", err)
		}
		ds = append(ds, got...)
	}
	return ds, nil
}

// claim takes over up to n idle entries of one voucher's stream.
func (q *Queue) claim(ctx context.Context, id domain.VoucherID, minIdle time.Duration, n int) ([]ports.Delivery, error) {
	stream := q.keys.Stream(id)
	var claimed []redis.XMessage
	var deleted []string
	for start := "0-0"; len(claimed) < n; {
		msgs, next, gone, err := q.client.XAutoClaimWithDeleted(ctx, &redis.XAutoClaimArgs{
			Stream:   stream,
			Group:    q.group,
			Consumer: q.consumer,
			MinIdle:  minIdle,
			Start:    start,
			Count:    int64(n - len(claimed)),
		}).Result()
		if redis.HasErrorPrefix(err, "NOGROUP") {
			// No group, so no pending entries: the stream expired or lost its group.
			// Repair it for the next Read and move on.
			_, err = q.repair(ctx, []domain.VoucherID{id})
			return nil, err
		}
		if err != nil {
			return nil, err
		}
		for _, m := range msgs {
			// Redis 6.2 answers a deleted entry with no fields (an entry always has
			// some); Redis 7 lists it apart, in gone.
			if len(m.Values) == 0 {
				deleted = append(deleted, m.ID)
				continue
			}
			claimed = append(claimed, m)
		}
		deleted = append(deleted, gone...)
		if next == "0-0" {
			break
		}
		start = next
	}
	if len(claimed) == 0 && len(deleted) == 0 {
		return nil, nil
	}

	pipe := q.client.Pipeline()
	if len(deleted) > 0 {
		// Redis 7 already dropped them from the pending list; the XACK is for 6.2 and
		// harmless otherwise.
		pipe.XAck(ctx, stream, q.group, deleted...)
	}
	counts := make([]*redis.XPendingExtCmd, len(claimed))
	for i, m := range claimed {
		counts[i] = pipe.XPendingExt(ctx, &redis.XPendingExtArgs{
			Stream: stream, Group: q.group, Start: m.ID, End: m.ID, Count: 1,
		})
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, err
	}
	ds := make([]ports.Delivery, 0, len(claimed))
	for i, m := range claimed {
		pending := counts[i].Val()
		if len(pending) == 0 {
			// Its previous owner acknowledged it after XAUTOCLAIM: it is done.
			continue
		}
		d := decodeEntry(id, m)
		d.Deliveries = pending[0].RetryCount
		ds = append(ds, d)
	}
	return ds, nil
}

// Ack acknowledges ds, one script per stream (XACK, and the tally: see tally.go), in
// one round trip. Acknowledging an entry twice is harmless.
func (q *Queue) Ack(ctx context.Context, ds ...ports.Delivery) error {
	if len(ds) == 0 {
		return nil
	}
	byVoucher := make(map[domain.VoucherID][]ports.Delivery)
	var order []domain.VoucherID
	for _, d := range ds {
		if _, seen := byVoucher[d.VoucherID]; !seen {
			order = append(order, d.VoucherID)
		}
		byVoucher[d.VoucherID] = append(byVoucher[d.VoucherID], d)
	}
	if len(order) == 1 {
		if err := ackRun(ctx, q.client, q.keys, q.group, order[0], ds); err != nil {
			return fmt.Errorf("ack queue entries: %w", err)
		}
		return nil
	}
	pipe := q.client.Pipeline()
	for _, id := range order {
		ackTally(ctx, pipe, q.keys, q.group, id, byVoucher[id])
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("ack queue entries: %w", err)
	}
	return nil
}

// DeadLetter appends d's entry to the voucher's dead-letter stream (Keys.Dead) with its
// original fields plus reason, stream, entry_id and deliveries, and acknowledges it, in
// one MULTI/EXEC. The dead-letter stream expires with the voucher's stream. When the
// entry is no longer in the stream, the decoded reservation stands in for its fields.
func (q *Queue) DeadLetter(ctx context.Context, d ports.Delivery, reason string) error {
	stream, dead := q.keys.Stream(d.VoucherID), q.keys.Dead(d.VoucherID)
	pipe := q.client.Pipeline()
	entry := pipe.XRangeN(ctx, stream, d.ID, d.ID, 1)
	expire := pipe.PExpireTime(ctx, stream)
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("dead-letter queue entry: %w", err)
	}

	var values []any
	if msgs := entry.Val(); len(msgs) == 1 {
		// The fields come back as a map; sort them so the copy reads the same each time.
		names := make([]string, 0, len(msgs[0].Values))
		for name := range msgs[0].Values {
			names = append(names, name)
		}
		sort.Strings(names)
		for _, name := range names {
			values = append(values, name, msgs[0].Values[name])
		}
	} else if d.Malformed == "" {
		values = append(values, entryValues(d.Reservation, "")...)
	}
	// Appended last, so a garbage field of the same name reads as ours.
	values = append(values, "reason", reason, "stream", stream, "entry_id", d.ID, "deliveries", d.Deliveries)

	_, err := q.client.TxPipelined(ctx, func(tx redis.Pipeliner) error {
		tx.XAdd(ctx, &redis.XAddArgs{Stream: dead, Values: values})
		// PEXPIRETIME answers -1 (no expiry) or -2 (no key) below zero: no TTL then.
		if at := expire.Val(); at > 0 {
			tx.PExpireAt(ctx, dead, time.UnixMilli(at.Milliseconds()))
		}
		ackTally(ctx, tx, q.keys, q.group, d.VoucherID, []ports.Delivery{d})
		return nil
	})
	if err != nil {
		return fmt.Errorf("dead-letter queue entry: %w", err)
	}
	return nil
}

// OldestQueued returns how long the oldest entry not yet acknowledged has waited, over
// the streams of the active vouchers (as Read sees them), by its entry id's time (the
// sale's clock: Redis's) against the queue's clock; 0 when every entry is
// acknowledged. See Backlog.
func (q *Queue) OldestQueued(ctx context.Context) (time.Duration, error) {
	b, err := q.Backlog(ctx)
	if err != nil {
		return 0, fmt.Errorf("oldest queued entry: %w", err)
	}
	if b.Oldest.IsZero() {
		return 0, nil
	}
	return max(q.now().Sub(b.Oldest), 0), nil
}
