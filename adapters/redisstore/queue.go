package redisstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
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
	// Clock is the sale's clock, which entries' ages are told by (OldestQueued) and
	// which says when a sale may have ended; the host's clock when nil.
	Clock ports.Clock
}

// Queue is a ports.Queue over the reservation streams of the active vouchers under its
// prefix, consumed through one consumer group. It finds the streams in the sorted set
// Stock.Warm maintains (Keys.Active), re-read at most every DiscoverEvery a page of
// activePage members per command: the vouchers whose sale has not ended, and those
// whose sale has ended but whose stream still holds reservations not yet delivered or
// acknowledged. Such a voucher leaves the set once settle.lua finds it done — ended by
// the sale's clock, every entry acknowledged — and marks it settled, so no grab
// appends to it again; an idle poll then costs a command or two whatever the number of
// vouchers ever sold.
//
// On one Redis server a Read is one XREADGROUP over every stream (past streamsPerRead
// streams, one per streamsPerRead of them, pipelined), waiting for entries. On Redis
// Cluster the streams of different vouchers live in different slots, which one command
// cannot span (CROSSSLOT, even on one node): a Read there sends one XREADGROUP per
// stream, without waiting, pipelined (one round trip per node), then, when none had
// entries, waits in an XREADGROUP on the stream that last had some; with a single
// stream it waits in XREADGROUP as on one server. Claim, Ack, DeadLetter and Trim work
// stream by stream everywhere.
//
// A Queue is safe for concurrent use.
type Queue struct {
	client   redis.UniversalClient
	keys     Keys
	group    string
	consumer string
	every    time.Duration
	clock    ports.Clock
	// cluster: one command cannot read the streams of several vouchers.
	cluster bool

	mu        sync.Mutex
	known     []domain.VoucherID // sorted
	checkedAt time.Time          // when known was read from the active set; zero: never
	// pruneFrom is where the next Trim goes on pruning the registry (an SSCAN cursor).
	pruneFrom uint64
	// adopted: the registry's vouchers were added to the active set (see adopt).
	adopted bool

	// hot is the voucher whose stream last had entries when reads take several
	// commands (see readEach).
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
		clock:    opts.Clock,
	}
}

// now reads the queue's clock.
func (q *Queue) now() time.Time {
	if q.clock == nil {
		return time.Now()
	}
	return q.clock.Now()
}

// Consumer returns this process's consumer name.
func (q *Queue) Consumer() string { return q.consumer }

// Read returns the entries never delivered before, up to count from each voucher's
// stream (a count below 1 counts as 1), waiting at most block while there are none;
// block ≤ 0 does not wait. On one server that is one XREADGROUP over every known
// stream, or, past streamsPerRead streams, one per streamsPerRead of them; on a
// cluster, one per stream (see Queue). No entries is not an error. An entry that
// cannot be decoded is returned with Malformed set.
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
		return q.readEach(ctx, ids, 1, count, block)
	}
	if len(ids) > streamsPerRead {
		return q.readEach(ctx, ids, streamsPerRead, count, block)
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
			return fresh(streams, func(key string) domain.VoucherID { return byKey[key] }), nil
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

// streamsPerRead is how many streams one XREADGROUP reads at most on one server: the
// command's time grows with its streams (16.5 ms on average for 10,000 on a quiet
// two-core machine, Redis serving no one else meanwhile), so with many vouchers on
// sale a read is a pipeline of such commands, each short.
var streamsPerRead = 100

// readEach reads the streams of ids, pipelined, one XREADGROUP for every per streams
// (per is 1 on a cluster, where one command reaches one slot). When none had entries
// it waits up to block in an XREADGROUP on the stream that last had some (in a flash
// sale, the hot one, so its next entries are read at once), or, with no such stream
// among ids, simply waits block. A stream that lost its group is repaired (on one
// server, every stream of a command that failed so: its error does not say which),
// and read at the next call.
func (q *Queue) readEach(ctx context.Context, ids []domain.VoucherID, per, count int, block time.Duration) ([]ports.Delivery, error) {
	pipe := q.client.Pipeline()
	chunks := slices.Collect(slices.Chunk(ids, per))
	cmds := make([]*redis.XStreamSliceCmd, len(chunks))
	byKey := make(map[string]domain.VoucherID, len(ids))
	for i, chunk := range chunks {
		streams := make([]string, 0, 2*len(chunk))
		for _, id := range chunk {
			key := q.keys.Stream(id)
			byKey[key] = id
			streams = append(streams, key)
		}
		for range chunk {
			streams = append(streams, ">")
		}
		cmds[i] = pipe.XReadGroup(ctx, &redis.XReadGroupArgs{
			Group:    q.group,
			Consumer: q.consumer,
			Streams:  streams,
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
			lost = append(lost, chunks[i]...)
			continue
		default:
			return nil, fmt.Errorf("read queue: %w", err)
		}
		ds = append(ds, fresh(streams, func(key string) domain.VoucherID { return byKey[key] })...)
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
		return q.waitHot(ctx, hot, count, block)
	}
	if err := wait(ctx, block); err != nil {
		return nil, fmt.Errorf("read queue: %w", err)
	}
	return nil, nil
}

// waitHot waits at most block in an XREADGROUP on the stream of voucher hot, the one
// that last had entries, and returns what it read.
func (q *Queue) waitHot(ctx context.Context, hot domain.VoucherID, count int, block time.Duration) ([]ports.Delivery, error) {
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
	return fresh(streams, func(string) domain.VoucherID { return hot }), nil
}

// fresh decodes the entries an XREADGROUP for new entries (">") returned: each is
// delivered for the first time. voucher names the voucher of a stream's key.
func fresh(streams []redis.XStream, voucher func(key string) domain.VoucherID) []ports.Delivery {
	var ds []ports.Delivery
	for _, st := range streams {
		for _, m := range st.Messages {
			d := decodeEntry(voucher(st.Stream), m)
			d.Deliveries = 1
			ds = append(ds, d)
		}
	}
	return ds
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
