package redisstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Backlog is the work the fulfillment workers have not finished, across every voucher
// the queue knows.
type Backlog struct {
	// Unacked counts the reservations not yet acknowledged: delivered and pending, or
	// not yet delivered.
	Unacked int64
	// Oldest is when the oldest of them was appended (its entry id's time); zero when
	// there are none.
	Oldest time.Time
}

// Backlog measures the queue's unfinished work for monitoring. Its cost is bounded by
// the number of vouchers, never by the backlog's length: two pipelined round trips,
// the first asking each stream for its group's counters (XINFO GROUPS) and oldest
// pending entry (XPENDING summary), the second for each stream's oldest undelivered
// entry (XRANGE … COUNT 1). Where Redis cannot tell a group's lag (after entries were
// deleted mid-stream), the undelivered entries are counted as one while any exists.
// The in-process Redis (miniredis) overstates the lag while entries wait undelivered
// (it reports the stream's length); once all are delivered its count is right again.
func (q *Queue) Backlog(ctx context.Context) (Backlog, error) {
	ids, err := q.vouchers(ctx)
	if err != nil || len(ids) == 0 {
		return Backlog{}, err
	}
	streams := make([]string, len(ids))
	infos := make([]*redis.XInfoGroupsCmd, len(ids))
	pendings := make([]*redis.XPendingCmd, len(ids))
	pipe := q.client.Pipeline()
	for i, id := range ids {
		streams[i] = q.keys.Stream(id)
		infos[i] = pipe.XInfoGroups(ctx, streams[i])
		pendings[i] = pipe.XPending(ctx, streams[i], q.group)
	}
	// A stream that expired or lost its group fails its own commands; it has no
	// backlog, which is what skipping it below says.
	_, _ = pipe.Exec(ctx)

	var b Backlog
	var oldest int64 // ms; 0: none
	older := func(id string) {
		if ms := entryMillis(id); ms > 0 && (oldest == 0 || ms < oldest) {
			oldest = ms
		}
	}
	next := q.client.Pipeline()
	var firsts []*redis.XMessageSliceCmd
	var lags []int64
	for i := range ids {
		gs, err := infos[i].Result()
		if err != nil {
			if isConnError(err) {
				return Backlog{}, fmt.Errorf("measure backlog: %w", err)
			}
			continue
		}
		for _, g := range gs {
			if g.Name != q.group {
				continue
			}
			b.Unacked += g.Pending
			if g.Pending > 0 {
				if p, err := pendings[i].Result(); err == nil {
					older(p.Lower)
				}
			}
			if g.Lag != 0 {
				firsts = append(firsts, next.XRangeN(ctx, streams[i], "("+g.LastDeliveredID, "+", 1))
				lags = append(lags, g.Lag)
			}
		}
	}
	if len(firsts) > 0 {
		if _, err := next.Exec(ctx); err != nil && isConnError(err) {
			return Backlog{}, fmt.Errorf("measure backlog: %w", err)
		}
		for i, cmd := range firsts {
			msgs, err := cmd.Result()
			if err != nil || len(msgs) == 0 {
				continue
			}
			// The lag counts only while an entry follows the group's position: an
			// in-process Redis (miniredis) reports the stream's whole length as lag,
			// acknowledged entries included, even when everything was delivered.
			older(msgs[0].ID)
			b.Unacked += max(lags[i], 1)
		}
	}
	if oldest > 0 {
		b.Oldest = time.UnixMilli(oldest)
	}
	return b, nil
}

// entryMillis is the time part of a stream entry id ("<ms>-<seq>"), 0 when malformed.
func entryMillis(id string) int64 {
	ms, _, _ := strings.Cut(id, "-")
	n, err := strconv.ParseInt(ms, 10, 64)
	if err != nil {
		return 0
	}
	return n
}

// isConnError tells a failure to talk to Redis from a command's own error reply (no
// such key, no such group), which Backlog treats as "nothing here".
func isConnError(err error) bool {
	var reply redis.Error
	return err != nil && !errors.Is(err, redis.Nil) && !errors.As(err, &reply)
}
