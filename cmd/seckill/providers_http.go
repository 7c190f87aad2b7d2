package main

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/uptrace/bun"
	"go.opentelemetry.io/otel"
	"go.uber.org/zap"

	"github.com/seckill/seckill/adapters/httpapi"
	"github.com/seckill/seckill/adapters/redisstore"
	"github.com/seckill/seckill/adapters/sqlstore"
	"github.com/seckill/seckill/application"
	"github.com/seckill/seckill/domain"
	"github.com/seckill/seckill/ports"
)

// The REST API's settings and parts (httpSet).

// stalledAfter is how long the oldest reservation may wait to be persisted before
// /readyz says fulfillment is stalled.
const stalledAfter = 30 * time.Second

func httpOptions(cfg Config, limiter *redisstore.RateLimiter, idempotency ports.Idempotency, metrics *httpapi.Metrics,
	queue *redisstore.Queue, clock ports.Clock, window domain.PaymentWindow, streams *httpapi.Streams) httpapi.Options {
	// Validate has parsed the trusted proxies and the CORS origins already.
	proxies, _ := cfg.trustedProxies()
	origins, _ := cfg.corsOrigins()
	o := httpapi.Options{
		BodyLimit: cfg.BodyLimit, RequestTimeout: cfg.RequestTimeout,
		MaxInflight: cfg.MaxInflight, GrabRate: cfg.GrabRate, GrabBurst: cfg.GrabBurst,
		IPLimit: cfg.IPRate, IPBurst: cfg.IPBurst, IPLimiter: limiter, Idempotency: idempotency,
		Clock: clock, PaymentWindow: window, Streams: streams,
		TrustedProxies: proxies, CORSOrigins: origins, PublicMaxAge: int(cfg.PublicMaxAge / time.Second),
		Metrics: metrics, MetricsElsewhere: cfg.MetricsAddr != "",
		Fulfillment: func(ctx context.Context) (bool, error) {
			age, err := queue.OldestQueued(ctx)
			return age > stalledAfter, err
		},
	}
	if cfg.tracing() {
		o.TracerProvider = otel.GetTracerProvider()
	}
	return o
}

// streams holds the API's event streams, fed by the changes every instance announces.
func streams(cfg Config, changes ports.Changes, tickets *application.RedeemStreamTicket, log *zap.Logger) *httpapi.Streams {
	return httpapi.NewStreams(httpapi.StreamOptions{Changes: changes, Tickets: tickets, Max: cfg.MaxStreams, Log: log})
}

func tokens(cfg Config) *httpapi.Tokens {
	return httpapi.NewTokens([]byte(cfg.JWTSecret))
}

// passKey is the key of the waiting rooms' passes, derived from the tokens' secret so
// every instance holds the same one.
func passKey(cfg Config) application.PassKey {
	return application.NewPassKey([]byte(cfg.JWTSecret))
}

func readinessChecks(client redis.UniversalClient, db *bun.DB) []httpapi.Check {
	return []httpapi.Check{
		{Name: "redis", Ping: func(ctx context.Context) error { return client.Ping(ctx).Err() }},
		// A schema behind this binary (migrate down while serving, say) fails every
		// call as surely as a database that is down.
		{Name: "database", Ping: func(ctx context.Context) error { return sqlstore.CheckSchema(ctx, db) }},
	}
}
