package redisstore

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/domain"
)

// Trim deletes from every known stream the entries that no consumer group needs any
// more, and returns how many it deleted. For each group the bound is its oldest pending
// entry, or when none is pending the entry after its last delivered one; a stream is
// trimmed (XTRIM MINID, exact) below the lowest bound of its groups, so entries pending
// or not yet delivered are never deleted. A stream without any group is left alone.
// It takes three round trips whatever the number of streams.
//
// Each call also looks at up to pruneBatch vouchers of the registry (Keys.Registry) and
// removes those whose keys have expired, so the registry keeps only the vouchers whose
// reservations can still be looked up, at a bounded cost per call.
func (q *Queue) Trim(ctx context.Context) (int64, error) {
	if err := q.prune(ctx); err != nil {
		return 0, fmt.Errorf("trim queue: %w", err)
	}
	ids, err := q.vouchers(ctx)
	if err != nil {
		return 0, fmt.Errorf("trim queue: %w", err)
	}
	return q.trim(ctx, ids)
}

// trim is Trim on the streams of ids: it reads where each stream's groups stand
// (trimBounds), finds below which entry none of them needs the stream (floor), and
// trims each stream there, in one round trip.
func (q *Queue) trim(ctx context.Context, ids []domain.VoucherID) (int64, error) {
	if len(ids) == 0 {
		return 0, nil
	}
	bounds, err := q.trimBounds(ctx, ids)
	if err != nil || len(bounds) == 0 {
		return 0, err
	}

	pipe := q.client.Pipeline()
	var trims []*redis.IntCmd
	for _, b := range bounds {
		floor, ok, err := b.floor()
		if err != nil {
			return 0, err
		}
		if ok {
			trims = append(trims, pipe.XTrimMinID(ctx, b.stream, floor.String()))
		}
	}
	if len(trims) == 0 {
		return 0, nil
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return 0, fmt.Errorf("trim queue: %w", err)
	}
	var total int64
	for _, t := range trims {
		total += t.Val()
	}
	return total, nil
}

// trimBound is where the consumer groups of one stream stand, as trim reads it.
type trimBound struct {
	stream string
	groups []redis.XInfoGroup
	oldest []*redis.XPendingCmd // per group; nil when the group had nothing pending
}

// trimBounds reads the groups of each stream of ids (XINFO GROUPS), then the summary
// of each group's pending entries (XPENDING) where it has some: two round trips. A
// stream gone since discovery, or without any group, is left out.
func (q *Queue) trimBounds(ctx context.Context, ids []domain.VoucherID) ([]trimBound, error) {
	pipe := q.client.Pipeline()
	infos := make([]*redis.XInfoGroupsCmd, len(ids))
	for i, id := range ids {
		infos[i] = pipe.XInfoGroups(ctx, q.keys.Stream(id))
	}
	// Exec reports the first failed command; each is checked below.
	_, _ = pipe.Exec(ctx)

	var bounds []trimBound
	pipe = q.client.Pipeline()
	for i, id := range ids {
		groups, err := infos[i].Result()
		if redis.HasErrorPrefix(err, "no such key") {
			continue // expired since discovery
		}
		if err != nil {
			return nil, fmt.Errorf("trim queue: %w", err)
		}
		if len(groups) == 0 {
			continue
		}
		b := trimBound{stream: q.keys.Stream(id), groups: groups, oldest: make([]*redis.XPendingCmd, len(groups))}
		for j, g := range groups {
			if g.Pending > 0 {
				b.oldest[j] = pipe.XPending(ctx, b.stream, g.Name)
			}
		}
		bounds = append(bounds, b)
	}
	if len(bounds) == 0 {
		return nil, nil
	}
	if pipe.Len() > 0 {
		// Exec reports the first failed command; each is checked below.
		_, _ = pipe.Exec(ctx)
	}
	return bounds, nil
}

// floor returns the entry id below which no group of b's stream needs its entries:
// the lowest, over the groups, of the oldest pending entry or, when none is pending,
// the entry after the last delivered one. It reports false when a group or the stream
// went away since XINFO: that stream is left alone.
func (b trimBound) floor() (streamID, bool, error) {
	for _, p := range b.oldest {
		if p == nil {
			continue
		}
		if err := p.Err(); err != nil {
			if redis.HasErrorPrefix(err, "NOGROUP") || redis.HasErrorPrefix(err, "no such key") {
				// The group or the stream went away since XINFO: leave it alone.
				return streamID{}, false, nil
			}
			return streamID{}, false, fmt.Errorf("trim queue: %w", err)
		}
	}
	var floor streamID
	for j, g := range b.groups {
		// Entries up to the last delivered one are delivered; those not pending are
		// acknowledged. Read before XPENDING, so the bound is conservative.
		lowest, err := parseStreamID(g.LastDeliveredID)
		if err != nil {
			return streamID{}, false, fmt.Errorf("trim queue: %s group %s: %w", b.stream, g.Name, err)
		}
		lowest = lowest.next()
		if b.oldest[j] != nil {
			if p := b.oldest[j].Val(); p.Count > 0 {
				if lowest, err = parseStreamID(p.Lower); err != nil {
					return streamID{}, false, fmt.Errorf("trim queue: %s group %s: %w", b.stream, g.Name, err)
				}
			}
		}
		if j == 0 || lowest.less(floor) {
			floor = lowest
		}
	}
	return floor, true, nil
}
