package main

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"github.com/seckill/seckill/adapters/redisstore"
	"github.com/seckill/seckill/adapters/system"
	"github.com/seckill/seckill/ports"
)

// clockSyncEvery is how often the sale's clock is measured against Redis again. The
// host's monotonic clock carries it in between: drift over a few seconds is
// microseconds.
const clockSyncEvery = 2 * time.Second

// clockWarnOffset is how far off Redis's time this host's clock may be before serve
// says so. The service tells time by Redis's, so an instance off by more keeps every
// promise; but other hosts' logs and its own disagree, and a host that far off is a
// host whose NTP has stopped.
const clockWarnOffset = 500 * time.Millisecond

// syncClock measures the sale's clock (Redis's time) again, records how far this
// host's clock is from it (seckill_clock_offset_seconds), and logs when that goes past
// clockWarnOffset or comes back within it (*off says which side it was on).
func syncClock(ctx context.Context, a *app, off *bool, log *zap.Logger) {
	offset, err := a.Clock.Sync(ctx)
	if err != nil {
		log.Debug("measure the sale clock; the last measurement stands", zap.Error(err))
		return
	}
	a.Metrics.clockOffset.Set(offset.Seconds())
	if now := offset.Abs() > clockWarnOffset; now != *off {
		*off = now
		if now {
			log.Warn("this host's clock is off redis's time (the sale's clock) by more than "+clockWarnOffset.String()+
				"; the service tells time by redis's, but keep the host's clock synchronized (NTP)", zap.Duration("offset", offset))
		} else {
			log.Info("this host's clock is back within "+clockWarnOffset.String()+" of redis's time", zap.Duration("offset", offset))
		}
	}
}

// hostClock is this host's clock, the base the sale's clock is carried forward on. A
// test build shifts it (testclock.go) to play a host whose clock is off.
var hostClock ports.Clock = system.Clock{}

// saleClock is the clock every use case reads: Redis's time, as the scripts judge the
// sale by it (redisstore.Clock), measured once here and every few seconds by serve
// (syncClock). A Redis that does not answer now leaves it on the host's clock until
// it does. The in-process Redis (embedded, nil for another) tells its time in this
// process (redisstore.Embedded.Now: the wall clock's, even in a test build that shifts
// hostClock, as of its clock's last step): it is read there, not measured, as a
// measurement would measure only how long the server takes to answer, and the host's
// clock would run up to a step ahead of its scripts' (redisstore.NewLocalClock).
func saleClock(ctx context.Context, client redis.UniversalClient, embedded *redisstore.Embedded, log *zap.Logger) *redisstore.Clock {
	if embedded != nil {
		return redisstore.NewLocalClock(embedded)
	}
	c := redisstore.NewClock(client, hostClock)
	syncCtx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if _, err := c.Sync(syncCtx); err != nil {
		log.Warn("measure the sale clock (redis's time); the host's clock stands in until it can be", zap.Error(err))
	}
	return c
}
