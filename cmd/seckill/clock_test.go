package main

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/seckill/seckill/adapters/redisstore"
)

// lateTime is a Redis client hook that holds each TIME for wait before sending it, as
// a busy in-process server does: it runs one command at a time, so a TIME waits its
// turn behind a burst and is answered late, though its clock is this host's.
type lateTime struct{ wait time.Duration }

func (lateTime) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h lateTime) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if cmd.Name() == "time" {
			time.Sleep(h.wait)
		}
		return next(ctx, cmd)
	}
}

func (lateTime) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// inProcessRedisClient starts an in-process Redis for t and a client of it.
func inProcessRedisClient(t *testing.T) (*redisstore.Embedded, *redis.Client) {
	t.Helper()
	e, err := redisstore.StartEmbedded()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	client := redis.NewClient(&redis.Options{Dialer: e.Dial})
	t.Cleanup(func() { _ = client.Close() })
	return e, client
}

// TestClockOfTheInProcessRedisIsTheHosts: the in-process Redis's time is this host's
// own clock, so there is no offset to measure, however late the server answers. A
// serve in the zero-setup mode under load once took the in-process server's answer
// latency for this host's clock being off: it warned to keep the host's clock
// synchronized (NTP), and carried the sale's clock that far ahead of the scripts'.
func TestClockOfTheInProcessRedisIsTheHosts(t *testing.T) {
	t.Parallel()
	e, client := inProcessRedisClient(t)
	// Answered 1.5 s late, a measurement that halves the round trip puts the host's
	// clock 750 ms behind Redis's: past the 500 ms serve warns at.
	client.AddHook(lateTime{wait: 1500 * time.Millisecond})
	core, logs := observer.New(zap.InfoLevel)
	log := zap.New(core)
	ctx := context.Background()

	a := &app{Clock: saleClock(ctx, client, e, log), Metrics: newMetrics()}
	off := false
	syncClock(ctx, a, &off, log)

	if d := time.Until(a.Clock.Now()); d.Abs() > 250*time.Millisecond {
		t.Errorf("the sale clock is %v off this host's, whose clock the in-process Redis tells", d)
	}
	if off || logs.FilterMessageSnippet("NTP").Len() > 0 {
		t.Errorf("serve warned that this host's clock is off the in-process Redis's, its own: %v", logs.All())
	}
}

// TestSaleClockIsNeverAheadOfTheInProcessRedis: in the zero-setup mode the sale's
// clock on the Go side is the in-process Redis's own, so what it stamps (a draw's
// entries_open_at, when nothing else is given) has always come for the scripts that
// judge it next. It used to be the host's wall clock, which runs up to a step of the
// server's clock ahead of the server's TIME: a draw created without entries_open_at
// then refused its first entries as not started.
func TestSaleClockIsNeverAheadOfTheInProcessRedis(t *testing.T) {
	t.Parallel()
	e, client := inProcessRedisClient(t)
	ctx := context.Background()
	clock := saleClock(ctx, client, e, zap.NewNop())
	// A step of the server's clock is 10 ms when idle: 300 reads span about 30 steps.
	for i := range 300 {
		before := clock.Now()
		redisTime, err := client.Time(ctx).Result()
		if err != nil {
			t.Fatal(err)
		}
		if redisTime.Before(before) {
			t.Fatalf("read %d: the sale clock said %v, then the in-process Redis's TIME %v: %v ahead",
				i, before.Format(time.StampMicro), redisTime.Format(time.StampMicro), before.Sub(redisTime))
		}
		time.Sleep(100 * time.Microsecond)
	}
}
