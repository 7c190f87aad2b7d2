// Package redisstore keeps the sellable stock of each voucher in Redis. One Lua script
// judges and takes a grab atomically and appends the reservation to the voucher's
// stream in the same step, so no reservation is ever taken without being queued. The
// streams are consumed through one consumer group by Queue, and Reservations reads
// what the grab path recorded. A release that puts units back on sale announces it on
// a Pub/Sub channel (Stock.SubscribeRestocks). Audit reads a voucher's whole state and
// repairs it, for reconciliation.
package redisstore

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/domain"
	"github.com/seckill/seckill/ports"
)

// DefaultPrefix starts every key when no prefix is given.
const DefaultPrefix = "seckill"

// DefaultGrace is how long a voucher's keys outlive its sale when Options.Grace is zero.
const DefaultGrace = 24 * time.Hour

// DefaultReplicaTimeout bounds the WAIT for replicas of Options.MinReplicas. It is
// shorter than a tuned client's read timeout (TunedTimeout), so a WAIT that times out
// (no replica in sync, as right after a failover) answers its count, with the
// script's reply before it, instead of failing the whole call as a read timeout.
const DefaultReplicaTimeout = 500 * time.Millisecond

// DefaultGroup names the consumer group of every voucher's stream when none is given.
// All fulfillment workers share the group; each process reads as its own consumer.
// Its value keeps the spelling of the streams already in use: renaming it would
// orphan their pending entries.
const DefaultGroup = "fulfil"

// Keys names the Redis keys of a voucher. All keys of one voucher share the hash tag
// {v<id>}, so a script touching them runs on Redis Cluster too. The zero value uses
// DefaultPrefix.
type Keys struct {
	Prefix string
}

// Meta returns the key of the voucher's sale state: a hash of stock, remaining,
// begins and ends (Unix ms), limit (units per user) and expire (Unix ms).
func (k Keys) Meta(id domain.VoucherID) string { return k.key(id, "meta") }

// Buyers returns the key of the hash from user id to the order id the user holds.
func (k Keys) Buyers(id domain.VoucherID) string { return k.key(id, "buyers") }

// Orders returns the key of the hash from order id to "user_id:qty:at_ms".
func (k Keys) Orders(id domain.VoucherID) string { return k.key(id, "orders") }

// Stream returns the key of the stream of the voucher's reservations, one entry with
// fields order, voucher, user, qty and at (Unix ms) per reservation.
func (k Keys) Stream(id domain.VoucherID) string { return k.key(id, "stream") }

// Dead returns the key of the voucher's dead-letter stream: the entries of Stream that
// could not be fulfilled, with their original fields plus reason, stream, entry_id and
// deliveries.
func (k Keys) Dead(id domain.VoucherID) string { return k.key(id, "dead") }

// Restock returns the name of the Pub/Sub channel on which a release that gave units
// back (or a recount that raised the remaining units) announces the voucher's id
// (decimal), so every instance can drop its sold-out flag, on one Redis server. It is a
// channel, not a key: it has no hash tag and holds nothing.
func (k Keys) Restock() string { return k.prefix() + ":restock" }

// VoucherRestock returns the name of the sharded Pub/Sub channel (SPUBLISH) on which
// the restocks of one voucher are announced on Redis Cluster: it has the voucher's
// hash tag, so the announcement stays on the voucher's shard.
func (k Keys) VoucherRestock(id domain.VoucherID) string { return k.key(id, "restock") }

// Rate names a user's rate counter for one voucher (a GCRA "theoretical arrival
// time"), in the voucher's slot so the reserve script can check it.
func (k Keys) Rate(id domain.VoucherID, user domain.UserID) string {
	return k.key(id, "rate:"+user.String())
}

// Registry returns the key of the set of voucher ids warmed (decimal) whose keys have
// not expired yet, in which reservations are looked up. It has no hash tag: it lives
// in its own slot, so no script touches it together with a voucher's keys. The queue
// removes the vouchers whose keys expired, a few at a time (Queue.Trim).
func (k Keys) Registry() string { return k.prefix() + ":vouchers" }

// Active returns the key of the sorted set of the vouchers whose reservations the
// queue reads: member the voucher id (decimal), score the end of its sale (Unix ms).
// Warm adds a voucher; the queue removes it once its sale has ended and every
// reservation in its stream has been delivered and acknowledged. Like the registry it
// has no hash tag.
func (k Keys) Active() string { return k.prefix() + ":active" }

func (k Keys) key(id domain.VoucherID, name string) string {
	return k.prefix() + ":{v" + id.String() + "}:" + name
}

func (k Keys) prefix() string {
	if k.Prefix == "" {
		return DefaultPrefix
	}
	return k.Prefix
}

// Options configures a Stock, and the Reservations and Audit sharing its keys.
type Options struct {
	// Prefix starts every key; DefaultPrefix when empty.
	Prefix string
	// Grace is how long a voucher's keys outlive its sale: they expire at EndsAt+Grace.
	// DefaultGrace when zero.
	Grace time.Duration
	// Group names the consumer group Warm creates on each voucher's stream; DefaultGroup
	// when empty. It must match the Queue's QueueOptions.Group.
	Group string
	// UserRate and UserBurst limit each user's grabs of one voucher, in the reserve
	// script itself (GCRA), so the limit is shared by every instance and costs no extra
	// round trip: UserRate grabs a second on average, UserBurst at once. 0 turns it off.
	UserRate  float64
	UserBurst int
	// MaxBacklog refuses new grabs of a voucher (domain.ErrUnavailable) while more than
	// this many of its reservations wait to be persisted; 0 turns it off.
	MaxBacklog int
	// MaxBatch bounds how many concurrent grabs of one voucher share one Redis call;
	// DefaultMaxBatch when 0. 1 turns the sharing off: every grab makes its own call,
	// at once, as many at a time as the client's pool allows.
	MaxBatch int
	// MinReplicas, when above 0, makes a grab count as reserved only once that many
	// replicas acknowledged it: each reserve call is followed, on the same connection,
	// by one WAIT for the whole batch (so its cost is shared). A WAIT that times out
	// (ReplicaTimeout) or counts fewer turns the batch's reservations into errors
	// wrapping domain.ErrUnavailable: they stand on the master, and a retry is answered
	// with the order.
	MinReplicas int
	// Restarts, when set, gates the grabs: while it reports the server changed and not
	// yet healed, Reserve answers an error wrapping domain.ErrUnavailable without
	// calling Redis.
	Restarts *Restarts
	// ReplicaTimeout bounds the WAIT; DefaultReplicaTimeout when 0.
	ReplicaTimeout time.Duration
	// MaxWait bounds how long a grab waits for its turn behind the call in flight
	// for its voucher; past it, when that call comes back, it is answered with
	// domain.ErrUnavailable without being sent. 0: until its context ends.
	MaxWait time.Duration
}

// Stock is a ports.Stock kept in Redis.
type Stock struct {
	client redis.UniversalClient
	keys   Keys
	grace  time.Duration
	group  string
	// interval and tolerance are the per-user GCRA's emission interval and burst
	// tolerance in milliseconds; interval 0 turns it off.
	interval, tolerance int64
	maxBacklog          int
	// batches coalesces concurrent grabs of a voucher; nil when Options.MaxBatch is 1.
	batches *coalescer
	// restarts: Options.Restarts.
	restarts *Restarts
	// minReplicas and replicaTimeout: Options.MinReplicas and ReplicaTimeout.
	minReplicas    int
	replicaTimeout time.Duration
	// sharded: on Redis Cluster restocks go through sharded Pub/Sub, one channel per
	// voucher (Keys.VoucherRestock); on one server through one classic channel.
	sharded bool
	// warmed hears of each voucher warmed here, so SubscribeRestocks subscribes to its
	// channel at once rather than at its next look at the active vouchers.
	warmed chan domain.VoucherID
}

var _ ports.Stock = (*Stock)(nil)

// NewStock returns a Stock that keeps its state through client.
func NewStock(client redis.UniversalClient, opts Options) *Stock {
	if opts.Prefix == "" {
		opts.Prefix = DefaultPrefix
	}
	if opts.Grace == 0 {
		opts.Grace = DefaultGrace
	}
	if opts.Group == "" {
		opts.Group = DefaultGroup
	}
	_, sharded := client.(*redis.ClusterClient)
	s := &Stock{client: client, keys: Keys{Prefix: opts.Prefix}, grace: opts.Grace, group: opts.Group, maxBacklog: opts.MaxBacklog,
		sharded: sharded, warmed: make(chan domain.VoucherID, 64)}
	if opts.UserRate > 0 {
		s.interval = max(1, int64(1000/opts.UserRate))
		s.tolerance = s.interval * int64(max(opts.UserBurst, 1)-1)
	}
	s.minReplicas, s.replicaTimeout, s.restarts = opts.MinReplicas, opts.ReplicaTimeout, opts.Restarts
	if s.replicaTimeout <= 0 {
		s.replicaTimeout = DefaultReplicaTimeout
	}
	if opts.MaxBatch == 0 {
		opts.MaxBatch = DefaultMaxBatch
	}
	if opts.MaxBatch > 1 {
		s.batches = newCoalescer(opts.MaxBatch, opts.MaxWait, s.reserveBatch)
	}
	return s
}

// Keys returns the key names s uses, for adapters that share them (the stream queue).
func (s *Stock) Keys() Keys { return s.keys }

// warmScript loads a voucher's sale state unless it already exists, and every time
// makes sure the stream and its consumer group exist (XGROUP CREATE … 0-0 MKSTREAM,
// BUSYGROUP ignored, so a live group keeps its position).
// KEYS[1] meta, KEYS[2] stream. ARGV: stock, remaining, begins_ms, ends_ms,
// per_user_limit, expire_at_ms, group, paused ("1" or "0").
// Returns 1 when it loaded the state, 0 when the state was already there (untouched).
// The stream expires with the meta hash (at the meta's own expire when it exists).
//
//go:embed warm.lua
var warmSrc string
var warmScript = redis.NewScript(warmSrc)

// Warm loads v's sale state only if it is absent, so a live counter is never reset:
// stock v.Stock and remaining v.Stock - v.Sold (never below 0), since the units the
// database's live orders hold are not on sale again. It reports whether it loaded
// anything. The keys expire at v.EndsAt plus the grace. With v.Sold above 0 the state
// is loaded "restoring": grabs answer an error wrapping domain.ErrUnavailable until
// Audit.Restored, after the live orders' reservations are restored (Audit.Restore); a
// state still restoring makes Warm report true again, so a caller that died midway is
// followed by one that finishes.
// Whether or not it loaded, it creates the voucher's stream and consumer group if they
// are missing, adds v.ID to the registry (Keys.Registry) and to the set of active
// vouchers the queue takes the streams to read from (Keys.Active); all are idempotent,
// so a repeated warm-up repairs a lost group and changes nothing else.
func (s *Stock) Warm(ctx context.Context, v domain.Voucher) (bool, error) {
	left := max(v.Stock-v.Sold, 0)
	// Live orders hold units: their reservations must be restored before grabs are
	// taken, so the state is loaded "restoring" until Audit.Restored.
	restoring := pausedFlag(v.Sold > 0)
	loaded, err := warmScript.Run(ctx, s.client, []string{s.keys.Meta(v.ID), s.keys.Stream(v.ID)},
		v.Stock, left, v.BeginsAt.UnixMilli(), v.EndsAt.UnixMilli(), v.PerUserLimit,
		v.EndsAt.Add(s.grace).UnixMilli(), s.group, pausedFlag(v.Paused), restoring).Int()
	if err != nil {
		return false, fmt.Errorf("warm stock: %w", err)
	}
	// The registry and the set of active vouchers are in other slots, so they cannot
	// join the script. They are written after the stream exists: the queue takes an id
	// without a stream for an expired sale and forgets it.
	pipe := s.client.Pipeline()
	pipe.SAdd(ctx, s.keys.Registry(), v.ID.String())
	pipe.ZAdd(ctx, s.keys.Active(), redis.Z{Score: float64(v.EndsAt.UnixMilli()), Member: v.ID.String()})
	if _, err := pipe.Exec(ctx); err != nil {
		return false, fmt.Errorf("warm stock: register voucher: %w", err)
	}
	if s.sharded {
		select {
		case s.warmed <- v.ID:
		default: // the subscriber is busy or absent: it looks at the active vouchers anyway
		}
	}
	return loaded >= 1, nil
}

func pausedFlag(p bool) string {
	if p {
		return "1"
	}
	return "0"
}

// pauseScript sets a voucher's paused flag, only if its sale state exists.
// KEYS[1] meta. ARGV: "1" paused or "0" not. Returns 1 when set, 0 without sale state.
//
//go:embed pause.lua
var pauseSrc string
var pauseScript = redis.NewScript(pauseSrc)

// SetPaused pauses or resumes the grab path of a voucher. It reports false when the
// voucher has no sale state (Warm then loads the flag from the voucher).
func (s *Stock) SetPaused(ctx context.Context, id domain.VoucherID, paused bool) (bool, error) {
	set, err := pauseScript.Run(ctx, s.client, []string{s.keys.Meta(id)}, pausedFlag(paused)).Int()
	if err != nil {
		return false, fmt.Errorf("pause sale: %w", err)
	}
	return set == 1, nil
}

// Outcomes of reserveScript, per grab.
const (
	reserved = iota
	alreadyPurchased
	soldOut
	notStarted
	ended
	unknownVoucher
	overLimit
	rateLimited
	paused
	backlogged
	restoring
)

// reserveScript judges a batch of grabs of one voucher in order and takes each one
// that passes: it takes the units, records the buyer and the order, and appends the
// reservation to the stream, all in one step. A single grab is a batch of one. Its
// KEYS, ARGV and reply are documented at the top of reserve.lua.
//
//go:embed reserve.lua
var reserveSrc string
var reserveScript = redis.NewScript(reserveSrc)

// Reserve takes r.Quantity units of r.VoucherID for r.UserID atomically and appends
// the reservation to the voucher's stream. The sale window is judged at r.At.
// Concurrent Reserves of one voucher share Redis calls (see Options.MaxBatch): while
// one call is in flight, the grabs that arrive go together in the next.
// It returns domain.ErrSoldOut, an *domain.AlreadyPurchasedError naming the existing
// order, domain.ErrNotStarted, domain.ErrEnded, domain.ErrNotFound (no sale state), a
// *domain.ValidationError (quantity below 1 or above the per-user limit), a
// *domain.RateLimitedError (the user is over Options.UserRate), domain.ErrPaused, or
// an error wrapping domain.ErrUnavailable (backlog over Options.MaxBacklog, Redis
// unreachable, or ctx ended while the grab waited for its turn, before it was sent).
func (s *Stock) Reserve(ctx context.Context, r domain.Reservation) error {
	// A negative quantity would put units back on sale; refuse it before Redis does.
	if r.Quantity < 1 {
		return domain.Invalid("quantity", "must be at least 1")
	}
	if s.restarts != nil && s.restarts.Healing() {
		return fmt.Errorf("reserve stock: %w: redis restarted or failed over; its sale state is being healed", domain.ErrUnavailable)
	}
	if s.batches == nil {
		reply, err := s.reserveBatch(ctx, []domain.Reservation{r}, []string{traceParent(ctx)})
		if err != nil {
			return err
		}
		return reply.errs[0]
	}
	return s.batches.reserve(ctx, r)
}

// BatchSizes returns how many reserve calls carried each number of grabs since s was
// made: element n counts the calls of n grabs, up to Options.MaxBatch. It is nil when
// grabs are not shared (MaxBatch 1).
func (s *Stock) BatchSizes() []int64 {
	if s.batches == nil {
		return nil
	}
	return s.batches.batchSizes()
}

// ReserveBatch judges rs, grabs of one voucher, in order in one Redis call, as
// Reserve judges each: the answers are Reserve's, one per grab (nil: reserved), and a
// grab sees what the earlier ones took (a user's second grab is answered with the
// first one's order). The error is for the call as a whole: nothing was judged.
// Every grab must have a quantity of at least 1 and the same voucher.
func (s *Stock) ReserveBatch(ctx context.Context, rs []domain.Reservation) ([]error, error) {
	reply, err := s.reserveBatch(ctx, rs, nil)
	return reply.errs, err
}

// reserveBatch judges rs in one call; tps, when not nil, holds each grab's W3C
// traceparent ("" when untraced) for its stream entry.
func (s *Stock) reserveBatch(ctx context.Context, rs []domain.Reservation, tps []string) (batchReply, error) {
	if len(rs) == 0 {
		return batchReply{remaining: -1}, nil
	}
	id := rs[0].VoucherID
	keys := make([]string, 4, 4+len(rs))
	keys[0], keys[1], keys[2], keys[3] = s.keys.Meta(id), s.keys.Buyers(id), s.keys.Orders(id), s.keys.Stream(id)
	args := make([]any, 5, 5+5*len(rs))
	args[0], args[1], args[2], args[3], args[4] = id.String(), s.interval, s.tolerance, s.maxBacklog, s.group
	for i, r := range rs {
		if r.VoucherID != id || r.Quantity < 1 {
			return batchReply{}, fmt.Errorf("reserve stock: a batch of voucher %s holds %+v", id, r)
		}
		if s.interval > 0 {
			keys = append(keys, s.keys.Rate(id, r.UserID))
		}
		tp := ""
		if tps != nil {
			tp = tps[i]
		}
		args = append(args, r.UserID.String(), string(r.OrderID), r.Quantity, r.At.UnixMilli(), tp)
	}
	reply, acked, err := s.runReserve(ctx, keys, args)
	if err != nil {
		return batchReply{}, fmt.Errorf("reserve stock: %w", err)
	}
	// The script answers the units left, then a code and an extra value per grab; a
	// reply of any other shape becomes an error rather than a panic on the grab path.
	if len(reply) != 1+2*len(rs) {
		return batchReply{}, fmt.Errorf("reserve stock: unexpected reply %v", reply)
	}
	left, _ := reply[0].(int64)
	out := batchReply{errs: make([]error, len(rs)), remaining: int(left)}
	for i, r := range rs {
		code, ok := reply[1+2*i].(int64)
		extra, _ := reply[2+2*i].(string)
		if !ok {
			code = -1
		}
		out.errs[i] = reserveOutcome(r, code, extra)
		if out.errs[i] == nil && acked < s.minReplicas {
			out.errs[i] = fmt.Errorf("reserve stock: order %s: %w: %d of %d replicas confirmed it within %v; a retry tells whether it stands",
				r.OrderID, domain.ErrUnavailable, acked, s.minReplicas, s.replicaTimeout)
		}
	}
	return out, nil
}

// runReserve runs reserveScript and, with Options.MinReplicas, a WAIT on the same
// connection right after it (a pipeline of a node's own client), returning the
// script's reply and how many replicas acknowledged it.
func (s *Stock) runReserve(ctx context.Context, keys []string, args []any) ([]any, int, error) {
	if s.minReplicas <= 0 {
		reply, err := reserveScript.Run(ctx, s.client, keys, args...).Slice()
		return reply, 0, err
	}
	// On a cluster, the master of the voucher's slot; elsewhere the client itself,
	// whose pipeline holds one connection.
	var node redis.Cmdable = s.client
	if c, ok := s.client.(interface {
		MasterForKey(context.Context, string) (*redis.Client, error)
	}); ok {
		m, err := c.MasterForKey(ctx, keys[0])
		if err != nil {
			return nil, 0, err
		}
		node = m
	}
	for attempt := 0; ; attempt++ {
		pipe := node.Pipeline()
		script := pipe.EvalSha(ctx, reserveScript.Hash(), keys, args...)
		wait := pipe.Do(ctx, "WAIT", s.minReplicas, s.replicaTimeout.Milliseconds())
		// Each command's own error is checked below.
		_, _ = pipe.Exec(ctx)
		if attempt == 0 && redis.HasErrorPrefix(script.Err(), "NOSCRIPT") {
			if err := reserveScript.Load(ctx, node).Err(); err != nil {
				return nil, 0, err
			}
			continue
		}
		if err := script.Err(); err != nil {
			return nil, 0, err
		}
		reply, err := script.Slice()
		if err != nil {
			return nil, 0, err
		}
		acked, err := wait.Int()
		if err != nil {
			// The script ran; only the replicas' count is unknown.
			return reply, 0, nil //nolint:nilerr // the grab is answered by the script's reply; 0 replicas makes the caller answer 503
		}
		return reply, acked, nil
	}
}

// reserveOutcome turns one grab's code and extra value from reserveScript into
// Reserve's answer.
func reserveOutcome(r domain.Reservation, code int64, extra string) error {
	switch code {
	case reserved:
		return nil
	case alreadyPurchased:
		return &domain.AlreadyPurchasedError{OrderID: domain.OrderID(extra)}
	case soldOut:
		return domain.ErrSoldOut
	case notStarted:
		return domain.ErrNotStarted
	case ended:
		return domain.ErrEnded
	case unknownVoucher:
		return domain.ErrNotFound
	case overLimit:
		return domain.Invalid("quantity", "exceeds the per-user limit")
	case rateLimited:
		ms, _ := strconv.ParseInt(extra, 10, 64)
		return &domain.RateLimitedError{RetryAfter: time.Duration(ms) * time.Millisecond}
	case paused:
		return domain.ErrPaused
	case backlogged:
		return fmt.Errorf("reserve stock: voucher %s: %w: too many reservations wait to be persisted", r.VoucherID, domain.ErrUnavailable)
	case restoring:
		return fmt.Errorf("reserve stock: voucher %s: %w: its sale state is being restored", r.VoucherID, domain.ErrUnavailable)
	}
	return fmt.Errorf("reserve stock: unexpected outcome %d %q", code, extra)
}

// Remaining returns the units left of each of ids that has sale state, in one round
// trip; vouchers without it are absent from the map.
func (s *Stock) Remaining(ctx context.Context, ids ...domain.VoucherID) (map[domain.VoucherID]int, error) {
	left := make(map[domain.VoucherID]int, len(ids))
	if len(ids) == 0 {
		return left, nil
	}
	pipe := s.client.Pipeline()
	cmds := make([]*redis.StringCmd, len(ids))
	for i, id := range ids {
		cmds[i] = pipe.HGet(ctx, s.keys.Meta(id), "remaining")
	}
	// Exec reports the first failed command, redis.Nil included; each is checked below.
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("read remaining stock: %w", err)
	}
	for i, cmd := range cmds {
		n, err := cmd.Int()
		if errors.Is(err, redis.Nil) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("read remaining stock: %w", err)
		}
		left[ids[i]] = n
	}
	return left, nil
}

// releaseScript gives an order's units back and forgets the user's reservation, only
// if the user's reservation still names the order, and then publishes the voucher id
// on the restock channel (a channel is not a key, so it comes as an argument).
// KEYS[1] meta, KEYS[2] buyers, KEYS[3] orders (one voucher, one tag).
// ARGV: user_id, order_id, qty, restock_channel, voucher_id, sharded ("1": SPUBLISH on
// the voucher's channel, as on Redis Cluster; "0": PUBLISH).
// Returns 1 when it released (and published), 0 when there was nothing to release (no
// sale state, or the user holds no reservation or another one; nothing is published).
//
//go:embed release.lua
var releaseSrc string
var releaseScript = redis.NewScript(releaseSrc)

// Release returns o.Quantity units of o.VoucherID to the sale and forgets o.UserID's
// reservation, only if that reservation still names o.ID; it reports whether it did.
// Applied twice, or to an order the user's reservation no longer names (the user has
// grabbed again since), it changes nothing and reports false; so does a voucher without
// sale state. A release that gives units back publishes o.VoucherID on the restock
// channel (Keys.Restock, see SubscribeRestocks), in the same script. It returns a
// *domain.ValidationError for a quantity below 1.
func (s *Stock) Release(ctx context.Context, o domain.Order) (bool, error) {
	// A quantity below 1 would take units instead of giving them back.
	if o.Quantity < 1 {
		return false, domain.Invalid("quantity", "must be at least 1")
	}
	keys := []string{s.keys.Meta(o.VoucherID), s.keys.Buyers(o.VoucherID), s.keys.Orders(o.VoucherID)}
	channel, sharded := restockChannel(s.keys, s.sharded, o.VoucherID)
	released, err := releaseScript.Run(ctx, s.client, keys,
		o.UserID.String(), string(o.ID), o.Quantity, channel, o.VoucherID.String(), sharded).Int()
	if err != nil {
		return false, fmt.Errorf("release stock: %w", err)
	}
	return released == 1, nil
}

// restockChannel returns the channel on which id's restocks are announced and the
// scripts' sharded flag: Keys.VoucherRestock and "1" on Redis Cluster (sharded Pub/Sub),
// Keys.Restock and "0" on one server, where sharded and classic Pub/Sub are the same
// (and the embedded server has only the classic).
func restockChannel(k Keys, sharded bool, id domain.VoucherID) (string, string) {
	if sharded {
		return k.VoucherRestock(id), "1"
	}
	return k.Restock(), "0"
}

// RestockChannel returns the Pub/Sub channel on which the restocks of voucher id are
// announced: Keys.VoucherRestock (sharded Pub/Sub) on Redis Cluster, Keys.Restock on one
// server.
func (s *Stock) RestockChannel(id domain.VoucherID) string {
	channel, _ := restockChannel(s.keys, s.sharded, id)
	return channel
}

// SubscribeRestocks calls fn with the voucher id of every restock announced on the
// restock channel (Keys.Restock: a Release that gave units back, or a Recount that
// raised the remaining units), one call at a time, until ctx is done; then it returns
// nil. It returns an error only when the first subscription fails. Afterwards it rides
// out Redis restarts and network failures: the subscription reconnects and
// resubscribes by itself. Messages that are not a voucher id are ignored.
//
// Pub/Sub delivers at most once: announcements made while the subscriber is
// disconnected (or reconnecting) are lost, and so is one that waits more than a minute
// behind a slow fn. A restock is a hint, not a ledger: the grab path's sold-out flag
// must also expire by itself, and its TTL bounds how long a lost announcement leaves an
// instance answering sold out while units are back on sale. Keep fn quick.
//
// On Redis Cluster it subscribes (SSUBSCRIBE) to the channel of each voucher whose sale
// has not ended (Keys.Active), one connection each, to the node owning the voucher's
// slot; it looks at the active vouchers every RestockRefresh, and subscribes at once
// to a voucher this Stock warms. A voucher warmed elsewhere is heard of within
// RestockRefresh; until then, as with any lost announcement, its flag lapses by its TTL.
func (s *Stock) SubscribeRestocks(ctx context.Context, fn func(domain.VoucherID)) error {
	if s.sharded {
		return s.subscribeSharded(ctx, fn)
	}
	sub := s.client.Subscribe(ctx, s.keys.Restock())
	defer sub.Close()
	// Subscribe sends SUBSCRIBE without waiting; the confirmation tells a subscription
	// that works from one that never did.
	if _, err := sub.Receive(ctx); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("subscribe to restocks: %w", err)
	}
	msgs := sub.Channel()
	for {
		select {
		case <-ctx.Done():
			return nil
		case m, ok := <-msgs:
			if !ok {
				return nil
			}
			if id, err := domain.ParseVoucherID(m.Payload); err == nil {
				fn(id)
			}
		}
	}
}

// RestockRefresh is how often SubscribeRestocks looks at the active vouchers on Redis
// Cluster, to subscribe to the channels of new ones and leave those of ended ones.
const RestockRefresh = time.Second

// subscribeSharded is SubscribeRestocks on Redis Cluster: one sharded subscription per
// active voucher.
func (s *Stock) subscribeSharded(ctx context.Context, fn func(domain.VoucherID)) error {
	var mu sync.Mutex // one call of fn at a time
	var pumps sync.WaitGroup
	subs := make(map[domain.VoucherID]*redis.PubSub)
	defer func() {
		for _, sub := range subs {
			_ = sub.Close()
		}
		pumps.Wait() // no call of fn after returning
	}()
	add := func(id domain.VoucherID) {
		if _, ok := subs[id]; ok {
			return
		}
		sub := s.client.SSubscribe(ctx, s.keys.VoucherRestock(id))
		subs[id] = sub
		pumps.Add(1)
		go func() {
			defer pumps.Done()
			for m := range sub.Channel() {
				if got, err := domain.ParseVoucherID(m.Payload); err == nil {
					mu.Lock()
					fn(got)
					mu.Unlock()
				}
			}
		}()
	}
	refresh := func() error {
		members, err := s.client.ZRangeByScore(ctx, s.keys.Active(), &redis.ZRangeBy{
			Min: "(" + strconv.FormatInt(time.Now().UnixMilli(), 10), Max: "+inf",
		}).Result()
		if err != nil {
			return err
		}
		active := make(map[domain.VoucherID]bool, len(members))
		for _, m := range members {
			if id, err := domain.ParseVoucherID(m); err == nil {
				active[id] = true
				add(id)
			}
		}
		for id, sub := range subs {
			if !active[id] {
				_ = sub.Close()
				delete(subs, id)
			}
		}
		return nil
	}
	if err := refresh(); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("subscribe to restocks: %w", err)
	}
	t := time.NewTicker(RestockRefresh)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case id := <-s.warmed:
			add(id)
		case <-t.C:
			// A failed look keeps the subscriptions there are; the next one may succeed.
			_ = refresh()
		}
	}
}
