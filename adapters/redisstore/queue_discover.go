package redisstore

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/domain"
)

// groupScript makes sure a voucher's stream has the consumer group, creating the
// stream (expiring with the sale state) when only the sale state is left; its
// contract is at the top of group.lua.
//
//go:embed group.lua
var groupSrc string
var groupScript = newScript(groupSrc)

// Refresh re-reads the set of active vouchers now, so the next Read and Claim see every
// voucher warmed so far instead of the list of up to DiscoverEvery ago.
func (q *Queue) Refresh(ctx context.Context) error {
	q.mu.Lock()
	q.checkedAt = time.Time{}
	q.mu.Unlock()
	_, err := q.vouchers(ctx)
	return err
}

// vouchers returns the vouchers whose streams the queue consumes, re-reading the set
// of active vouchers when the last read is older than q.every: those whose sale has not
// ended, and those whose sale ended but whose stream is not drained yet. Vouchers whose
// sale ended and whose stream is drained leave the set.
func (q *Queue) vouchers(ctx context.Context) ([]domain.VoucherID, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if !q.checkedAt.IsZero() && time.Since(q.checkedAt) < q.every {
		return q.known, nil
	}
	if !q.adopted {
		if err := q.adopt(ctx); err != nil {
			return nil, fmt.Errorf("discover streams: %w", err)
		}
		q.adopted = true
	}
	members, err := q.activeMembers(ctx)
	if err != nil {
		return nil, fmt.Errorf("discover streams: %w", err)
	}
	// A candidate only: settle judges the end again by the sale's clock.
	now := float64(q.now().UnixMilli())
	ids := make([]domain.VoucherID, 0, len(members))
	var ended []redis.Z
	for _, m := range members {
		name, _ := m.Member.(string)
		id, err := domain.ParseVoucherID(name)
		if err != nil {
			continue // someone else's stray member is not ours to remove
		}
		if m.Score > now {
			ids = append(ids, id)
		} else {
			ended = append(ended, m)
		}
	}
	if len(ended) > 0 {
		busy, err := q.settle(ctx, ended)
		if err != nil {
			return nil, fmt.Errorf("discover streams: %w", err)
		}
		ids = append(ids, busy...)
	}
	slices.Sort(ids)
	q.known, q.checkedAt = ids, time.Now()
	return ids, nil
}

// activePage is how many members of the active set one command reads.
var activePage int64 = 1000

// activeMembers reads the active set (Keys.Active) with its scores, activePage members
// per command by rank, so no command grows with the number of vouchers on sale. A
// voucher added or removed between two pages shifts the ranks, so this read may miss
// another one (or read one twice: it is kept once); the next read, a refresh later,
// sees it.
func (q *Queue) activeMembers(ctx context.Context) ([]redis.Z, error) {
	var out []redis.Z
	seen := make(map[string]bool)
	for start := int64(0); ; start += activePage {
		page, err := q.client.ZRangeWithScores(ctx, q.keys.Active(), start, start+activePage-1).Result()
		if err != nil {
			return nil, err
		}
		for _, m := range page {
			name, _ := m.Member.(string)
			if !seen[name] {
				seen[name] = true
				out = append(out, m)
			}
		}
		if int64(len(page)) < activePage {
			return out, nil
		}
	}
}

// adopt adds to the active set, scored by the end of their sale, the vouchers of the
// registry whose sale state is still there and that are not in the set: those warmed
// before the set existed (by an earlier version), whose streams may still hold
// reservations to persist. It runs once per Queue, at its first discovery: two
// commands per voucher in the registry, in two round trips.
func (q *Queue) adopt(ctx context.Context) error {
	members, err := q.client.SMembers(ctx, q.keys.Registry()).Result()
	if err != nil || len(members) == 0 {
		return err
	}
	pipe := q.client.Pipeline()
	ends := make(map[string]*redis.StringCmd, len(members))
	for _, m := range members {
		if id, err := domain.ParseVoucherID(m); err == nil {
			ends[m] = pipe.HGet(ctx, q.keys.Meta(id), "ends")
		}
	}
	if len(ends) == 0 {
		return nil
	}
	// Exec reports the first failed command, redis.Nil included; each is checked below.
	_, _ = pipe.Exec(ctx)
	var add []redis.Z
	for m, cmd := range ends {
		end, err := cmd.Int64()
		if errors.Is(err, redis.Nil) {
			continue // the sale's keys are gone: nothing left to read
		}
		if err != nil {
			return err
		}
		add = append(add, redis.Z{Score: float64(end), Member: m})
	}
	if len(add) == 0 {
		return nil
	}
	return q.client.ZAddNX(ctx, q.keys.Active(), add...).Err()
}

// settleScript says whether the queue is done with a voucher and, when it is, marks
// its sale settled; its contract is at the top of settle.lua.
//
//go:embed settle.lua
var settleSrc string
var settleScript = newScript(settleSrc)

// settle takes out of the active set the vouchers of ended sales that settle.lua finds
// done — ended by the sale's clock (Redis's, whatever this host's says) with every
// entry acknowledged, and from then on closed to grabs — and returns the others. A
// reservation requeued between the check and the removal (Audit.Requeue appends it,
// then adds the voucher back) would be lost, so it looks once more afterwards and puts
// back, and returns, those not drained by then.
func (q *Queue) settle(ctx context.Context, ended []redis.Z) ([]domain.VoucherID, error) {
	ids := make([]domain.VoucherID, len(ended))
	pipe := q.client.Pipeline()
	cmds := make([]*redis.Cmd, len(ended))
	for i, m := range ended {
		ids[i], _ = domain.ParseVoucherID(m.Member.(string))
		// EVAL, not EVALSHA: a pipeline cannot fall back when the script is not cached.
		cmds[i] = settleScript.Eval(ctx, pipe, []string{q.keys.Meta(ids[i]), q.keys.Stream(ids[i])}, q.group)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, err
	}
	var busy []domain.VoucherID
	var done []any
	var doneZ []redis.Z
	var doneIDs []domain.VoucherID
	for i, id := range ids {
		if settled, _ := cmds[i].Int(); settled == 1 {
			done = append(done, ended[i].Member)
			doneZ = append(doneZ, ended[i])
			doneIDs = append(doneIDs, id)
		} else {
			busy = append(busy, id)
		}
	}
	if len(done) == 0 {
		return busy, nil
	}
	// Trimmed one last time: Trim looks only at the active vouchers' streams.
	if _, err := q.trim(ctx, doneIDs); err != nil {
		return nil, err
	}
	if err := q.client.ZRem(ctx, q.keys.Active(), done...).Err(); err != nil {
		return nil, err
	}
	again, err := q.drained(ctx, doneIDs)
	if err != nil {
		return nil, err
	}
	var back []redis.Z
	for i, id := range doneIDs {
		if !again[i] {
			back = append(back, doneZ[i])
			busy = append(busy, id)
		}
	}
	if len(back) > 0 {
		if err := q.client.ZAdd(ctx, q.keys.Active(), back...).Err(); err != nil {
			return nil, err
		}
	}
	return busy, nil
}

// drained reports for each of ids whether its stream holds nothing left to persist
// (unacked.lua): no stream, or every entry acknowledged. A stream without the group is
// not drained (Read repairs it). One round trip.
func (q *Queue) drained(ctx context.Context, ids []domain.VoucherID) ([]bool, error) {
	streams := make([]string, len(ids))
	for i, id := range ids {
		streams[i] = q.keys.Stream(id)
	}
	ws, err := unackedOf(ctx, q.client, q.group, 1, streams)
	if err != nil {
		return nil, err
	}
	out := make([]bool, len(ids))
	for i, w := range ws {
		out[i] = w.total() == 0
	}
	return out, nil
}

// pruneBatch is how many members of the registry one Trim looks at.
const pruneBatch = 100

// prune looks at the next pruneBatch members of the registry and removes those whose
// keys (stream and sale state) are gone.
func (q *Queue) prune(ctx context.Context) error {
	q.mu.Lock()
	from := q.pruneFrom
	q.mu.Unlock()
	members, next, err := q.client.SScan(ctx, q.keys.Registry(), from, "", pruneBatch).Result()
	if err != nil {
		return fmt.Errorf("prune the registry: %w", err)
	}
	q.mu.Lock()
	q.pruneFrom = next
	q.mu.Unlock()
	ids := make([]domain.VoucherID, 0, len(members))
	for _, m := range members {
		if id, err := domain.ParseVoucherID(m); err == nil {
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	gone, err := q.expired(ctx, ids)
	if err != nil {
		return fmt.Errorf("prune the registry: %w", err)
	}
	if _, err := q.forget(ctx, gone); err != nil {
		return fmt.Errorf("prune the registry: %w", err)
	}
	return nil
}

// expired returns those of ids whose stream and sale state are both gone, one EXISTS
// each (both keys share the voucher's tag, so one EXISTS serves on a cluster too).
func (q *Queue) expired(ctx context.Context, ids []domain.VoucherID) ([]domain.VoucherID, error) {
	pipe := q.client.Pipeline()
	exists := make([]*redis.IntCmd, len(ids))
	for i, id := range ids {
		exists[i] = pipe.Exists(ctx, q.keys.Stream(id), q.keys.Meta(id))
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, err
	}
	var gone []domain.VoucherID
	for i, id := range ids {
		if exists[i].Val() == 0 {
			gone = append(gone, id)
		}
	}
	return gone, nil
}

// forget removes ids from the registry. A voucher warmed again between the check and
// the removal would be lost, so it looks once more afterwards and puts back, and
// returns, those whose keys exist again: Warm creates the keys before it registers.
func (q *Queue) forget(ctx context.Context, ids []domain.VoucherID) ([]domain.VoucherID, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	members := make([]any, len(ids))
	for i, id := range ids {
		members[i] = id.String()
	}
	if err := q.client.SRem(ctx, q.keys.Registry(), members...).Err(); err != nil {
		return nil, err
	}
	gone, err := q.expired(ctx, ids)
	if err != nil {
		return nil, err
	}
	var back []domain.VoucherID
	members = members[:0]
	for _, id := range ids {
		if !slices.Contains(gone, id) {
			back = append(back, id)
			members = append(members, id.String())
		}
	}
	if len(back) > 0 {
		if err := q.client.SAdd(ctx, q.keys.Registry(), members...).Err(); err != nil {
			return nil, err
		}
	}
	return back, nil
}

// repair makes sure each of ids has the consumer group (creating the stream when only
// the sale state is left) and returns those that have it. Those whose sale is gone
// are left out of the known vouchers until the next discovery, which takes them out of
// the active set once their sale has ended (their keys expire only after that).
func (q *Queue) repair(ctx context.Context, ids []domain.VoucherID) ([]domain.VoucherID, error) {
	var live, gone []domain.VoucherID
	for _, id := range ids {
		ok, err := groupScript.Run(ctx, q.client, []string{q.keys.Stream(id), q.keys.Meta(id)}, q.group).Int()
		if err != nil {
			return nil, fmt.Errorf("create consumer group: %w", err)
		}
		if ok == 1 {
			live = append(live, id)
		} else {
			gone = append(gone, id)
		}
	}
	if len(gone) == 0 {
		return live, nil
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	q.known = slices.DeleteFunc(slices.Clone(q.known), func(id domain.VoucherID) bool {
		return slices.Contains(gone, id)
	})
	return live, nil
}
