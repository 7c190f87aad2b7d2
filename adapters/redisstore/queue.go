package redisstore

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/domain"
	"github.com/seckill/seckill/ports"
)

// DefaultDiscoverEvery is how often a Queue re-reads the set of active vouchers when
// QueueOptions.DiscoverEvery is zero.
const DefaultDiscoverEvery = time.Second

// QueueOptions configures a Queue.
type QueueOptions struct {
	// Prefix starts every key; DefaultPrefix when empty. It must match the Stock's.
	Prefix string
	// Group is the consumer group shared by every worker; DefaultGroup when empty. It
	// must match the Stock's Options.Group, which Warm creates.
	Group string
	// Consumer is this process's consumer name within the group. Required, and unique
	// per process (a host name plus a random suffix, say): two processes sharing a name
	// would share one pending list and could not claim each other's entries.
	Consumer string
	// DiscoverEvery bounds how often the set of active vouchers is re-read to find the
	// streams to consume; DefaultDiscoverEvery when zero.
	DiscoverEvery time.Duration
}

// Queue is a ports.Queue over the reservation streams of the active vouchers under its
// prefix, consumed through one consumer group. It finds the streams in the sorted set
// Stock.Warm maintains (Keys.Active), re-read at most every DiscoverEvery with one
// command: the vouchers whose sale has not ended, and those whose sale has ended but
// whose stream still holds reservations not yet delivered or acknowledged. Once such a
// stream is drained the voucher leaves the set, so an idle poll costs one command
// whatever the number of vouchers ever sold.
//
// On one Redis server a Read is one XREADGROUP over every stream, waiting for entries.
// On Redis Cluster the streams of different vouchers live in different slots, which
// one command cannot span (CROSSSLOT, even on one node): a Read there sends one
// XREADGROUP per stream, without waiting, pipelined (one round trip per node), then,
// when none had entries, waits in an XREADGROUP on the stream that last had some; with
// a single stream it waits in XREADGROUP as on one server. Claim, Ack, DeadLetter and Trim work stream by stream everywhere.
//
// A Queue is safe for concurrent use.
type Queue struct {
	client   redis.UniversalClient
	keys     Keys
	group    string
	consumer string
	every    time.Duration
	// cluster: one command cannot read the streams of several vouchers.
	cluster bool

	mu        sync.Mutex
	known     []domain.VoucherID // sorted
	checkedAt time.Time          // when known was read from the active set; zero: never
	// pruneFrom is where the next Trim goes on pruning the registry (an SSCAN cursor).
	pruneFrom uint64
	// adopted: the registry's vouchers were added to the active set (see adopt).
	adopted bool

	// hot is the voucher whose stream last had entries on a cluster (see readEach).
	hot atomic.Uint64
	// next rotates where Claim starts, so one stream's backlog does not starve the rest.
	next atomic.Uint64
}

var _ ports.Queue = (*Queue)(nil)

// NewQueue returns a Queue reading through client as opts.Consumer. It panics when
// opts.Consumer is empty: a constant or missing consumer name is a wiring mistake.
func NewQueue(client redis.UniversalClient, opts QueueOptions) *Queue {
	if opts.Consumer == "" {
		panic("redisstore: QueueOptions.Consumer is required (a name unique to this process)")
	}
	if opts.Group == "" {
		opts.Group = DefaultGroup
	}
	if opts.DiscoverEvery <= 0 {
		opts.DiscoverEvery = DefaultDiscoverEvery
	}
	_, cluster := client.(*redis.ClusterClient)
	return &Queue{
		cluster:  cluster,
		client:   client,
		keys:     Keys{Prefix: opts.Prefix},
		group:    opts.Group,
		consumer: opts.Consumer,
		every:    opts.DiscoverEvery,
	}
}

// groupScript makes sure a voucher's stream has the consumer group, creating the
// stream (expiring with the sale state) when only the sale state is left.
// KEYS[1] stream, KEYS[2] meta (one voucher, one tag). ARGV: group.
// Returns 1 when the group exists now, 0 when the sale is gone (neither key exists).
//
//go:embed group.lua
var groupSrc string
var groupScript = redis.NewScript(groupSrc)

// Consumer returns this process's consumer name.
func (q *Queue) Consumer() string { return q.consumer }

// Read returns the entries never delivered before, up to count from each voucher's
// stream (a count below 1 counts as 1), waiting at most block while there are none;
// block ≤ 0 does not wait. On one server that is one XREADGROUP over every known
// stream; on a cluster, one per stream (see Queue). No entries is not an error. An
// entry that cannot be decoded is returned with Malformed set.
//
// With no stream known it waits block, or until ctx is done (returning ctx's error). A
// cancelled ctx does not cut a blocking XREADGROUP short (go-redis honors only a ctx
// deadline mid-read), so keep block short: a second or two.
func (q *Queue) Read(ctx context.Context, count int, block time.Duration) ([]ports.Delivery, error) {
	count = max(count, 1)
	ids, err := q.vouchers(ctx)
	if err != nil {
		return nil, fmt.Errorf("read queue: %w", err)
	}
	if len(ids) == 0 {
		if err := wait(ctx, block); err != nil {
			return nil, fmt.Errorf("read queue: %w", err)
		}
		return nil, nil
	}
	if q.cluster && len(ids) > 1 {
		return q.readEach(ctx, ids, count, block)
	}
	for repaired := false; ; repaired = true {
		args := &redis.XReadGroupArgs{
			Group:    q.group,
			Consumer: q.consumer,
			Streams:  make([]string, 0, 2*len(ids)),
			Count:    int64(count),
			Block:    -1, // no BLOCK argument: BLOCK 0 would wait forever
		}
		if block > 0 {
			// BLOCK takes whole milliseconds, and 0 means forever: round up.
			args.Block = max(block, time.Millisecond)
		}
		byKey := make(map[string]domain.VoucherID, len(ids))
		for _, id := range ids {
			key := q.keys.Stream(id)
			byKey[key] = id
			args.Streams = append(args.Streams, key)
		}
		for range ids {
			args.Streams = append(args.Streams, ">")
		}
		streams, err := q.client.XReadGroup(ctx, args).Result()
		switch {
		case err == nil:
			var ds []ports.Delivery
			for _, s := range streams {
				for _, m := range s.Messages {
					d := decodeEntry(byKey[s.Stream], m)
					d.Deliveries = 1
					ds = append(ds, d)
				}
			}
			return ds, nil
		case errors.Is(err, redis.Nil):
			return nil, nil
		case redis.HasErrorPrefix(err, "NOGROUP") && !repaired:
			// Some stream lost its group (deleted and recreated by a grab) or expired
			// since discovery. Repair what can be repaired and read once more.
			if ids, err = q.repair(ctx, ids); err != nil {
				return nil, fmt.Errorf("read queue: %w", err)
			}
			if len(ids) == 0 {
				return nil, nil
			}
		default:
			return nil, fmt.Errorf("read queue: %w", err)
		}
	}
}

// readEach reads each stream of ids with an XREADGROUP of its own, pipelined. When none
// had entries it waits up to block in an XREADGROUP on the stream that last had some
// (in a flash sale, the hot one, so its next entries are read at once), or, with no
// such stream among ids, simply waits block. A stream that lost its group is
// repaired, and read at the next call.
func (q *Queue) readEach(ctx context.Context, ids []domain.VoucherID, count int, block time.Duration) ([]ports.Delivery, error) {
	pipe := q.client.Pipeline()
	cmds := make([]*redis.XStreamSliceCmd, len(ids))
	for i, id := range ids {
		cmds[i] = pipe.XReadGroup(ctx, &redis.XReadGroupArgs{
			Group:    q.group,
			Consumer: q.consumer,
			Streams:  []string{q.keys.Stream(id), ">"},
			Count:    int64(count),
			Block:    -1,
		})
	}
	// Exec reports the first failed command, redis.Nil included; each is checked below.
	_, _ = pipe.Exec(ctx)
	var ds []ports.Delivery
	var lost []domain.VoucherID
	for i, cmd := range cmds {
		streams, err := cmd.Result()
		switch {
		case err == nil:
		case errors.Is(err, redis.Nil):
			continue
		case redis.HasErrorPrefix(err, "NOGROUP"):
			lost = append(lost, ids[i])
			continue
		default:
			return nil, fmt.Errorf("read queue: %w", err)
		}
		for _, st := range streams {
			for _, m := range st.Messages {
				d := decodeEntry(ids[i], m)
				d.Deliveries = 1
				ds = append(ds, d)
			}
		}
	}
	if len(lost) > 0 {
		if _, err := q.repair(ctx, lost); err != nil {
			return nil, fmt.Errorf("read queue: %w", err)
		}
	}
	if len(ds) > 0 {
		q.hot.Store(uint64(ds[len(ds)-1].VoucherID))
		return ds, nil
	}
	if hot := domain.VoucherID(q.hot.Load()); block > 0 && slices.Contains(ids, hot) && !slices.Contains(lost, hot) {
		streams, err := q.client.XReadGroup(ctx, &redis.XReadGroupArgs{
			Group:    q.group,
			Consumer: q.consumer,
			Streams:  []string{q.keys.Stream(hot), ">"},
			Count:    int64(count),
			Block:    max(block, time.Millisecond),
		}).Result()
		if err != nil && !errors.Is(err, redis.Nil) && !redis.HasErrorPrefix(err, "NOGROUP") {
			return nil, fmt.Errorf("read queue: %w", err)
		}
		for _, st := range streams {
			for _, m := range st.Messages {
				d := decodeEntry(hot, m)
				d.Deliveries = 1
				ds = append(ds, d)
			}
		}
		return ds, nil
	}
	if err := wait(ctx, block); err != nil {
		return nil, fmt.Errorf("read queue: %w", err)
	}
	return nil, nil
}

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

// Ack acknowledges ds, one XACK per stream, in one round trip. Acknowledging an entry
// twice is harmless.
func (q *Queue) Ack(ctx context.Context, ds ...ports.Delivery) error {
	if len(ds) == 0 {
		return nil
	}
	byVoucher := make(map[domain.VoucherID][]string)
	var order []domain.VoucherID
	for _, d := range ds {
		if _, seen := byVoucher[d.VoucherID]; !seen {
			order = append(order, d.VoucherID)
		}
		byVoucher[d.VoucherID] = append(byVoucher[d.VoucherID], d.ID)
	}
	pipe := q.client.Pipeline()
	for _, id := range order {
		pipe.XAck(ctx, q.keys.Stream(id), q.group, byVoucher[id]...)
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
		r := d.Reservation
		values = append(values, "order", string(r.OrderID), "voucher", r.VoucherID.String(),
			"user", r.UserID.String(), "qty", r.Quantity, "at", r.At.UnixMilli())
	}
	// Appended last, so a garbage field of the same name reads as ours.
	values = append(values, "reason", reason, "stream", stream, "entry_id", d.ID, "deliveries", d.Deliveries)

	_, err := q.client.TxPipelined(ctx, func(tx redis.Pipeliner) error {
		tx.XAdd(ctx, &redis.XAddArgs{Stream: dead, Values: values})
		// PEXPIRETIME answers -1 (no expiry) or -2 (no key) below zero: no TTL then.
		if at := expire.Val(); at > 0 {
			tx.PExpireAt(ctx, dead, time.UnixMilli(at.Milliseconds()))
		}
		tx.XAck(ctx, stream, q.group, d.ID)
		return nil
	})
	if err != nil {
		return fmt.Errorf("dead-letter queue entry: %w", err)
	}
	return nil
}

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

// trim is Trim on the streams of ids.
func (q *Queue) trim(ctx context.Context, ids []domain.VoucherID) (int64, error) {
	if len(ids) == 0 {
		return 0, nil
	}
	pipe := q.client.Pipeline()
	infos := make([]*redis.XInfoGroupsCmd, len(ids))
	for i, id := range ids {
		infos[i] = pipe.XInfoGroups(ctx, q.keys.Stream(id))
	}
	// Exec reports the first failed command; each is checked below.
	_, _ = pipe.Exec(ctx)

	type bound struct {
		stream string
		groups []redis.XInfoGroup
		oldest []*redis.XPendingCmd // per group; nil when the group had nothing pending
	}
	var bounds []bound
	pipe = q.client.Pipeline()
	for i, id := range ids {
		groups, err := infos[i].Result()
		if redis.HasErrorPrefix(err, "no such key") {
			continue // expired since discovery
		}
		if err != nil {
			return 0, fmt.Errorf("trim queue: %w", err)
		}
		if len(groups) == 0 {
			continue
		}
		b := bound{stream: q.keys.Stream(id), groups: groups, oldest: make([]*redis.XPendingCmd, len(groups))}
		for j, g := range groups {
			if g.Pending > 0 {
				b.oldest[j] = pipe.XPending(ctx, b.stream, g.Name)
			}
		}
		bounds = append(bounds, b)
	}
	if len(bounds) == 0 {
		return 0, nil
	}
	if pipe.Len() > 0 {
		// Exec reports the first failed command; each is checked below.
		_, _ = pipe.Exec(ctx)
	}

	pipe = q.client.Pipeline()
	var trims []*redis.IntCmd
next:
	for _, b := range bounds {
		for _, p := range b.oldest {
			if p == nil {
				continue
			}
			if err := p.Err(); err != nil {
				if redis.HasErrorPrefix(err, "NOGROUP") || redis.HasErrorPrefix(err, "no such key") {
					// The group or the stream went away since XINFO: leave it alone.
					continue next
				}
				return 0, fmt.Errorf("trim queue: %w", err)
			}
		}
		var floor streamID
		for j, g := range b.groups {
			// Entries up to the last delivered one are delivered; those not pending are
			// acknowledged. Read before XPENDING, so the bound is conservative.
			lowest, err := parseStreamID(g.LastDeliveredID)
			if err != nil {
				return 0, fmt.Errorf("trim queue: %s group %s: %w", b.stream, g.Name, err)
			}
			lowest = lowest.next()
			if b.oldest[j] != nil {
				if p := b.oldest[j].Val(); p.Count > 0 {
					if lowest, err = parseStreamID(p.Lower); err != nil {
						return 0, fmt.Errorf("trim queue: %s group %s: %w", b.stream, g.Name, err)
					}
				}
			}
			if j == 0 || lowest.less(floor) {
				floor = lowest
			}
		}
		trims = append(trims, pipe.XTrimMinID(ctx, b.stream, floor.String()))
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
	members, err := q.client.ZRangeByScoreWithScores(ctx, q.keys.Active(), &redis.ZRangeBy{Min: "-inf", Max: "+inf"}).Result()
	if err != nil {
		return nil, fmt.Errorf("discover streams: %w", err)
	}
	now := float64(time.Now().UnixMilli())
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

// settle takes the vouchers of ended sales out of the active set once their streams are
// drained, and returns the others. A reservation requeued between the check and the
// removal (Audit.Requeue appends it, then adds the voucher back) would be lost, so it
// checks once more afterwards and puts back, and returns, those not drained by then.
func (q *Queue) settle(ctx context.Context, ended []redis.Z) ([]domain.VoucherID, error) {
	ids := make([]domain.VoucherID, len(ended))
	for i, m := range ended {
		ids[i], _ = domain.ParseVoucherID(m.Member.(string))
	}
	drained, err := q.drained(ctx, ids)
	if err != nil {
		return nil, err
	}
	var busy []domain.VoucherID
	var done []any
	var doneZ []redis.Z
	var doneIDs []domain.VoucherID
	for i, id := range ids {
		if drained[i] {
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

// drained reports for each of ids whether its stream holds nothing left to persist: no
// stream, or the group has delivered its last entry and has none pending. A stream
// without the group is not drained (Read repairs it). Two commands per voucher, in one
// round trip.
func (q *Queue) drained(ctx context.Context, ids []domain.VoucherID) ([]bool, error) {
	pipe := q.client.Pipeline()
	infos := make([]*redis.XInfoGroupsCmd, len(ids))
	lasts := make([]*redis.XMessageSliceCmd, len(ids))
	for i, id := range ids {
		infos[i] = pipe.XInfoGroups(ctx, q.keys.Stream(id))
		lasts[i] = pipe.XRevRangeN(ctx, q.keys.Stream(id), "+", "-", 1)
	}
	// Exec reports the first failed command; each is checked below.
	_, _ = pipe.Exec(ctx)
	out := make([]bool, len(ids))
	for i := range ids {
		groups, err := infos[i].Result()
		if redis.HasErrorPrefix(err, "no such key") {
			out[i] = true
			continue
		}
		if err != nil {
			return nil, err
		}
		last, err := lasts[i].Result()
		if err != nil {
			return nil, err
		}
		if len(last) == 0 {
			out[i] = true
			continue
		}
		for _, g := range groups {
			if g.Name != q.group {
				continue
			}
			delivered, err1 := parseStreamID(g.LastDeliveredID)
			newest, err2 := parseStreamID(last[0].ID)
			out[i] = err1 == nil && err2 == nil && g.Pending == 0 && !delivered.less(newest)
		}
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

// wait waits d, or until ctx is done, when it returns ctx's error.
func wait(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// decodeEntry turns a stream entry of voucher into a Delivery. The first field missing
// or malformed is named in Malformed.
func decodeEntry(voucher domain.VoucherID, m redis.XMessage) ports.Delivery {
	d := ports.Delivery{ID: m.ID, VoucherID: voucher}
	r, err := decodeFields(voucher, m.Values)
	if err != nil {
		d.Malformed = err.Error()
		return d
	}
	d.Reservation = r
	d.TraceParent, _ = m.Values[traceField].(string)
	return d
}

func decodeFields(voucher domain.VoucherID, values map[string]any) (domain.Reservation, error) {
	field := func(name string) (string, error) {
		v, ok := values[name]
		if !ok {
			return "", fmt.Errorf("field %q: missing", name)
		}
		s, ok := v.(string)
		if !ok || s == "" {
			return "", fmt.Errorf("field %q: empty", name)
		}
		return s, nil
	}
	positive := func(name string) (int64, error) {
		s, err := field(name)
		if err != nil {
			return 0, err
		}
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n <= 0 || strings.HasPrefix(s, "+") {
			return 0, fmt.Errorf("field %q: not a positive integer", name)
		}
		return n, nil
	}

	order, err := field("order")
	if err != nil {
		return domain.Reservation{}, err
	}
	if !plausibleOrderID(order) {
		return domain.Reservation{}, fmt.Errorf("field %q: not an order id", "order")
	}
	v, err := positive("voucher")
	if err != nil {
		return domain.Reservation{}, err
	}
	if domain.VoucherID(v) != voucher {
		return domain.Reservation{}, fmt.Errorf("field %q: names voucher %d in the stream of voucher %d", "voucher", v, voucher)
	}
	user, err := positive("user")
	if err != nil {
		return domain.Reservation{}, err
	}
	qty, err := positive("qty")
	if err != nil {
		return domain.Reservation{}, err
	}
	if qty > domain.MaxQuantity {
		return domain.Reservation{}, fmt.Errorf("field %q: above %d", "qty", domain.MaxQuantity)
	}
	at, err := positive("at")
	if err != nil {
		return domain.Reservation{}, fmt.Errorf("field %q: not a Unix time in milliseconds", "at")
	}
	return domain.Reservation{
		OrderID:   domain.OrderID(order),
		VoucherID: voucher,
		UserID:    domain.UserID(user),
		Quantity:  int(qty),
		At:        time.UnixMilli(at).UTC(),
	}, nil
}

// streamID is a stream entry id, milliseconds and sequence.
type streamID struct{ ms, seq uint64 }

// parseStreamID reads "ms-seq", or "ms" alone as "ms-0", as Redis reads an id given to
// XGROUP CREATE: the embedded server reports a group's position as it was given.
func parseStreamID(s string) (streamID, error) {
	msPart, seqPart, ok := strings.Cut(s, "-")
	if !ok {
		seqPart = "0"
	}
	ms, err1 := strconv.ParseUint(msPart, 10, 64)
	seq, err2 := strconv.ParseUint(seqPart, 10, 64)
	if err1 != nil || err2 != nil {
		return streamID{}, fmt.Errorf("malformed stream id %q", s)
	}
	return streamID{ms, seq}, nil
}

// next returns the smallest id after id.
func (id streamID) next() streamID {
	if id.seq == ^uint64(0) {
		return streamID{id.ms + 1, 0}
	}
	return streamID{id.ms, id.seq + 1}
}

func (id streamID) less(o streamID) bool {
	return id.ms < o.ms || id.ms == o.ms && id.seq < o.seq
}

func (id streamID) String() string {
	return strconv.FormatUint(id.ms, 10) + "-" + strconv.FormatUint(id.seq, 10)
}

// OldestQueued returns how long the oldest entry not yet acknowledged has waited, over
// the streams of the active vouchers (as Read sees them), by its entry id's time; 0
// when every entry is acknowledged. The oldest pending entry (XPENDING's summary) is
// older than any entry not yet delivered; a stream with none pending is asked for the
// first entry after its group's last delivered one. Two round trips, a few commands per
// active voucher, whatever the length of the streams.
func (q *Queue) OldestQueued(ctx context.Context) (time.Duration, error) {
	ids, err := q.vouchers(ctx)
	if err != nil || len(ids) == 0 {
		if err != nil {
			err = fmt.Errorf("oldest queued entry: %w", err)
		}
		return 0, err
	}
	pipe := q.client.Pipeline()
	infos := make([]*redis.XInfoGroupsCmd, len(ids))
	pendings := make([]*redis.XPendingCmd, len(ids))
	for i, id := range ids {
		infos[i] = pipe.XInfoGroups(ctx, q.keys.Stream(id))
		pendings[i] = pipe.XPending(ctx, q.keys.Stream(id), q.group)
	}
	// Exec reports the first failed command; each is checked below.
	_, _ = pipe.Exec(ctx)

	var oldest streamID
	found := false
	consider := func(s string) {
		if id, err := parseStreamID(s); err == nil && (!found || id.less(oldest)) {
			oldest, found = id, true
		}
	}
	pipe = q.client.Pipeline()
	var firsts []*redis.XMessageSliceCmd
	for i, id := range ids {
		groups, err := infos[i].Result()
		if redis.HasErrorPrefix(err, "no such key") {
			continue
		}
		if err != nil {
			return 0, fmt.Errorf("oldest queued entry: %w", err)
		}
		if p, err := pendings[i].Result(); err == nil && p.Count > 0 {
			consider(p.Lower)
			continue
		}
		for _, g := range groups {
			if g.Name != q.group {
				continue
			}
			last, err := parseStreamID(g.LastDeliveredID)
			if err != nil {
				return 0, fmt.Errorf("oldest queued entry: %s: %w", q.keys.Stream(id), err)
			}
			firsts = append(firsts, pipe.XRangeN(ctx, q.keys.Stream(id), last.next().String(), "+", 1))
		}
	}
	if len(firsts) > 0 {
		if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
			return 0, fmt.Errorf("oldest queued entry: %w", err)
		}
		for _, f := range firsts {
			if msgs := f.Val(); len(msgs) > 0 {
				consider(msgs[0].ID)
			}
		}
	}
	if !found {
		return 0, nil
	}
	return max(time.Since(time.UnixMilli(int64(oldest.ms))), 0), nil
}
