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

// DefaultDiscoverEvery is how often a Queue re-reads the voucher registry when
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
	// DiscoverEvery bounds how often the registry of vouchers is re-read to find the
	// streams to consume; DefaultDiscoverEvery when zero.
	DiscoverEvery time.Duration
}

// Queue is a ports.Queue over the reservation streams of every voucher warmed under its
// prefix, consumed through one consumer group. It finds the streams in the registry
// set Stock.Warm maintains (Keys.Registry), re-read at most every DiscoverEvery, and
// forgets the vouchers whose keys have expired.
//
// One Read blocks on all streams at once, which needs a single Redis (or Sentinel): on
// Redis Cluster the streams of different vouchers live in different slots.
//
// A Queue is safe for concurrent use.
type Queue struct {
	client   redis.UniversalClient
	keys     Keys
	group    string
	consumer string
	every    time.Duration

	mu        sync.Mutex
	known     []domain.VoucherID // sorted
	checkedAt time.Time          // when known was read from the registry; zero: never

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
	return &Queue{
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
// stream (a count below 1 counts as 1), in one XREADGROUP over every known stream that
// waits at most block while there are none; block ≤ 0 does not wait. No entries is not
// an error. An entry that cannot be decoded is returned with Malformed set.
//
// With no stream known it waits block, or until ctx is done (returning ctx's error). A
// cancelled ctx does not cut a blocking XREADGROUP short (go-redis honours only a ctx
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
func (q *Queue) Trim(ctx context.Context) (int64, error) {
	ids, err := q.vouchers(ctx)
	if err != nil || len(ids) == 0 {
		if err != nil {
			err = fmt.Errorf("trim queue: %w", err)
		}
		return 0, err
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

// vouchers returns the vouchers whose streams the queue consumes, re-reading the
// registry when the last read is older than q.every. Vouchers whose stream and sale
// state are both gone (the sale's keys expired) are removed from the registry.
// Refresh re-reads the registry now, so the next Read and Claim see every voucher
// warmed so far instead of the list of up to DiscoverEvery ago.
func (q *Queue) Refresh(ctx context.Context) error {
	q.mu.Lock()
	q.checkedAt = time.Time{}
	q.mu.Unlock()
	_, err := q.vouchers(ctx)
	return err
}

func (q *Queue) vouchers(ctx context.Context) ([]domain.VoucherID, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if !q.checkedAt.IsZero() && time.Since(q.checkedAt) < q.every {
		return q.known, nil
	}
	members, err := q.client.SMembers(ctx, q.keys.Registry()).Result()
	if err != nil {
		return nil, fmt.Errorf("discover streams: %w", err)
	}
	ids := make([]domain.VoucherID, 0, len(members))
	for _, m := range members {
		// Someone else's stray member is not ours to remove; skip it.
		if id, err := domain.ParseVoucherID(m); err == nil {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)

	pipe := q.client.Pipeline()
	exists := make([]*redis.IntCmd, len(ids))
	for i, id := range ids {
		// Both keys share the voucher's tag, so one EXISTS serves on a cluster too.
		exists[i] = pipe.Exists(ctx, q.keys.Stream(id), q.keys.Meta(id))
	}
	if len(ids) > 0 {
		if _, err := pipe.Exec(ctx); err != nil {
			return nil, fmt.Errorf("discover streams: %w", err)
		}
	}
	live := make([]domain.VoucherID, 0, len(ids))
	var gone []domain.VoucherID
	for i, id := range ids {
		if exists[i].Val() > 0 {
			live = append(live, id)
		} else {
			gone = append(gone, id)
		}
	}
	if len(gone) > 0 {
		back, err := q.forget(ctx, gone)
		if err != nil {
			return nil, fmt.Errorf("discover streams: %w", err)
		}
		live = append(live, back...)
		slices.Sort(live)
	}
	q.known, q.checkedAt = live, time.Now()
	return live, nil
}

// forget removes ids from the registry. A voucher warmed again between the check and
// the removal would be lost, so it looks once more afterwards and puts back, and
// returns, those whose keys exist again: Warm creates the keys before it registers.
func (q *Queue) forget(ctx context.Context, ids []domain.VoucherID) ([]domain.VoucherID, error) {
	members := make([]any, len(ids))
	for i, id := range ids {
		members[i] = id.String()
	}
	if err := q.client.SRem(ctx, q.keys.Registry(), members...).Err(); err != nil {
		return nil, err
	}
	pipe := q.client.Pipeline()
	exists := make([]*redis.IntCmd, len(ids))
	for i, id := range ids {
		exists[i] = pipe.Exists(ctx, q.keys.Stream(id), q.keys.Meta(id))
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, err
	}
	var back []domain.VoucherID
	for i, id := range ids {
		if exists[i].Val() > 0 {
			back = append(back, id)
		}
	}
	if len(back) > 0 {
		members = members[:0]
		for _, id := range back {
			members = append(members, id.String())
		}
		if err := q.client.SAdd(ctx, q.keys.Registry(), members...).Err(); err != nil {
			return nil, err
		}
	}
	return back, nil
}

// repair makes sure each of ids has the consumer group (creating the stream when only
// the sale state is left), forgets those whose sale is gone, and returns the rest.
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
	back, err := q.forget(ctx, gone)
	if err != nil {
		return nil, fmt.Errorf("discover streams: %w", err)
	}
	live = append(live, back...)
	slices.Sort(live)

	q.mu.Lock()
	defer q.mu.Unlock()
	q.known = slices.DeleteFunc(slices.Clone(q.known), func(id domain.VoucherID) bool {
		return slices.Contains(gone, id) && !slices.Contains(back, id)
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
