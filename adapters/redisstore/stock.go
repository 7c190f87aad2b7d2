// Package redisstore keeps the sellable stock of each voucher in Redis. One Lua script
// judges and takes a grab atomically and appends the reservation to the voucher's
// stream in the same step, so no reservation is ever taken without being queued. The
// streams are consumed through one consumer group by Queue, and Reservations reads
// what the grab path recorded. A release that puts units back on sale announces it on
// a Pub/Sub channel (Stock.SubscribeRestocks), and so does an edit that adds units
// (Stock.Edit). Audit reads a voucher's whole state and
// repairs it, for reconciliation.
package redisstore

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/domain"
	"github.com/seckill/seckill/ports"
)

// DefaultGrace is how long a voucher's keys outlive its sale when Options.Grace is zero.
const DefaultGrace = 24 * time.Hour

// DefaultReplicaTimeout bounds the WAIT for replicas of Options.MinReplicas. It is
// shorter than a tuned client's read timeout (TunedTimeout), so a WAIT that times out
// (no replica in sync, as right after a failover) answers its count, with the
// script's reply before it, instead of failing the whole call as a read timeout. And
// it is under half a second: while no replica confirms, every call of a voucher takes
// the whole WAIT, and a grab under load waits for the call in flight before its own
// (a voucher's grabs go one call at a time), so its 503 comes after about two WAITs —
// within a second, as a 503 must.
const DefaultReplicaTimeout = 400 * time.Millisecond

// DefaultGroup names the consumer group of every voucher's stream when none is given.
// All fulfillment workers share the group; each process reads as its own consumer.
// Its value keeps the spelling of the streams already in use: renaming it would
// orphan their pending entries.
const DefaultGroup = "fulfil"

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
	// for its voucher; past it, it is answered at once with domain.ErrUnavailable,
	// without being sent. 0: until its context ends.
	MaxWait time.Duration
	// PaymentWindow is the payment window (SECKILL_PAYMENT_TIMEOUT) in force: every
	// reservation the Stock takes (a grab, a draw's winner, a unit handed to a
	// waitlist) is recorded with its deadline, its time plus this, in its record and
	// its stream entry, so the deadline it is answered with is kept through a restart
	// with another window (domain.Reservation.Expires). 0 records none: the window of
	// whoever reads the reservation then stands in, as before deadlines were recorded.
	PaymentWindow time.Duration
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
	// handoffs counts the units Release and Edit handed to a waitlist (HandOffs).
	handoffs atomic.Int64
	// window is Options.PaymentWindow in milliseconds, as the scripts take it.
	window int64
	// campaigns caches how many vouchers each campaign holds (domain.CampaignID to
	// int), as the grab script last said it; a stale count costs one more call.
	campaigns sync.Map
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
	s.window = max(opts.PaymentWindow.Milliseconds(), 0)
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
