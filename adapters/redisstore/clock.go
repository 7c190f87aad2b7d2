package redisstore

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/ports"
)

// Clock is the sale's clock on the Go side: Redis's time, as the scripts read it with
// TIME (sale_now in prelude.lua), carried forward between measurements by this host's
// monotonic clock. So every instance tells the same time — when a sale has ended, when
// an unpaid order expires — whatever its own wall clock says, and a step of that wall
// clock (NTP correcting it) moves nothing. Until its first measurement it tells the
// local clock's time.
//
// On a Redis Cluster it follows one master (the one that holds the key clockKey);
// each voucher's scripts read the clock of the master that holds the voucher, so the
// masters' clocks must agree (NTP), as any cluster's should.
type Clock struct {
	client redis.UniversalClient
	local  ports.Clock

	mu sync.RWMutex
	// redis is Redis's time at the last measurement, and mono the local reading
	// (with its monotonic part) at the same moment; offset is Redis's time minus the
	// local wall clock's then.
	redis, mono time.Time
	offset      time.Duration
	synced      bool
}

var _ ports.Clock = (*Clock)(nil)

// clockKey names the slot whose master a cluster's Clock follows; nothing is stored
// under it.
const clockKey = "seckill:clock"

// clockSamples is how many TIME round trips one Sync takes; the shortest wins, as its
// midpoint is the closest to the moment Redis read its clock.
const clockSamples = 3

// NewClock returns a Clock that measures Redis's time through client against local,
// this host's clock. Call Sync before relying on it, and again every few seconds.
func NewClock(client redis.UniversalClient, local ports.Clock) *Clock {
	return &Clock{client: client, local: local}
}

// NewLocalClock returns a Clock of a Redis whose time this process knows without
// asking — the in-process one, whose Embedded.Now is passed as local: it tells local's
// time and never asks Redis. Measuring such a Redis would measure only how long it took
// to answer (it runs one command at a time, so under load a TIME waits its turn), and
// carry the sale's clock that far ahead of the time its scripts read. Sync measures
// nothing and returns 0.
func NewLocalClock(local ports.Clock) *Clock {
	return &Clock{local: local}
}

// Now returns Redis's time as of now: the last measurement carried forward by the
// monotonic time elapsed since; the local clock's time before the first.
func (c *Clock) Now() time.Time {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if !c.synced {
		return c.local.Now()
	}
	return c.redis.Add(time.Since(c.mono))
}

// Sync measures Redis's time against the local clock, keeping the sample of the
// shortest round trip (Redis's reading taken at its middle), and returns the offset
// of the local wall clock: Redis's time minus the local time (positive when this host
// is behind). On an error the last measurement stands. A Clock made by NewLocalClock
// measures nothing: its offset is 0.
func (c *Clock) Sync(ctx context.Context) (time.Duration, error) {
	if c.client == nil {
		return 0, nil
	}
	node := redis.Cmdable(c.client)
	if cc, ok := c.client.(*redis.ClusterClient); ok {
		m, err := cc.MasterForKey(ctx, clockKey)
		if err != nil {
			return 0, fmt.Errorf("sync the sale clock: %w", err)
		}
		node = m
	}
	var best time.Duration
	var redisAt, mono, localAt time.Time
	for i := range clockSamples {
		// The monotonic readings time the round trip and carry the clock forward;
		// the local clock's reading (the host's wall clock) only tells its offset.
		start, local := time.Now(), c.local.Now()
		t, err := node.Time(ctx).Result()
		rtt := time.Since(start)
		if err != nil {
			return 0, fmt.Errorf("sync the sale clock: %w", err)
		}
		if i == 0 || rtt < best {
			best = rtt
			redisAt, mono, localAt = t, start.Add(rtt/2), local.Add(rtt/2)
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.redis, c.mono, c.offset, c.synced = redisAt, mono, redisAt.Sub(localAt), true
	return c.offset, nil
}
