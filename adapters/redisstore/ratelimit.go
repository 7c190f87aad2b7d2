package redisstore

import (
	"context"
	"fmt"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"
)

// RateLimiter limits how often each client may call, shared by every instance
// through Redis: one GCRA script (github.com/go-redis/redis_rate) per request, on one
// key per client that expires by itself once the client is idle.
type RateLimiter struct {
	limiter *redis_rate.Limiter
	keys    Keys
}

// NewRateLimiter returns a RateLimiter keeping its counters through client, under
// opts.Prefix (DefaultPrefix when empty).
func NewRateLimiter(client redis.UniversalClient, opts Options) *RateLimiter {
	return &RateLimiter{limiter: redis_rate.NewLimiter(client), keys: Keys{Prefix: opts.Prefix}}
}

// Allow takes one request from key's allowance: perSecond requests a second on
// average, up to burst at once (perSecond when burst is below 1). It reports whether
// the request is allowed and, when it is not, how long until one would be. The
// counter lives under "rate:<prefix>:rl:<key>" (redis_rate adds "rate:"). It returns
// an error when Redis did not answer, or for a perSecond below 1.
func (l *RateLimiter) Allow(ctx context.Context, key string, perSecond, burst int) (bool, time.Duration, error) {
	if perSecond < 1 {
		return false, 0, fmt.Errorf("rate limit %s: %d requests a second", key, perSecond)
	}
	if burst < 1 {
		burst = perSecond
	}
	res, err := l.limiter.Allow(ctx, l.keys.prefix()+":rl:"+key, redis_rate.Limit{Rate: perSecond, Burst: burst, Period: time.Second})
	if err != nil {
		return false, 0, fmt.Errorf("rate limit %s: %w", key, err)
	}
	if res.Allowed > 0 {
		return true, 0, nil
	}
	return false, res.RetryAfter, nil
}
