package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/redis/go-redis/extra/redisotel/v9"
	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"github.com/seckill/seckill/adapters/breaker"
	"github.com/seckill/seckill/adapters/redisstore"
)

// The Redis client (redisSet): connecting to it — a server, a cluster, Sentinel's master
// or the in-process one — and its adapters' settings.

// openRedis connects to cfg.RedisURL — one server or, detected, a Redis Cluster (see
// redisstore.NewClient) — or to the master that cfg.RedisSentinels name, following
// failovers (redisstore.NewFailoverClient), or, when neither is set, to embedded, the
// in-process Redis (inProcessRedis) — with timeouts that follow each request's deadline
// and give up on a dead Redis within a second, and a circuit breaker that fails calls at once
// while Redis is down and lets a probe through to close again when it is back. The
// in-process Redis is reached in memory, with neither: it cannot be unreachable. The
// connection is checked at start-up so a wrong URL stops the command with one line.
func openRedis(ctx context.Context, cfg Common, embedded *redisstore.Embedded, log *zap.Logger, m *metrics, restarts *redisstore.Restarts) (redis.UniversalClient, func(), error) {
	url := cfg.RedisURL
	if embedded != nil {
		url = embedded.URL()
	}
	// Every client: the one server's, or each cluster node's.
	tune := func(opts *redis.Options) {
		redisstore.TuneClientOptions(opts)
		opts.PoolSize = 64
		opts.MinIdleConns = 16
		if embedded != nil {
			// In memory: no dial to time out, and no wait but the request's own
			// deadline (the in-process server runs one command at a time, so a burst
			// queues). It cannot restart under us.
			opts.Dialer = embedded.Dial
			opts.ReadTimeout, opts.WriteTimeout = -1, -1
			return
		}
		// Every new connection reads the server's run_id, so a restart or a failover
		// is known before the first grab after it (redisstore.Restarts).
		opts.OnConnect = restarts.Observe
	}
	pingCtx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	var client redis.UniversalClient
	var err error
	where := redactURL(url)
	if cfg.RedisSentinels != "" {
		// The master the sentinels name, followed through failovers; the URL, if
		// any, gives its password and database.
		where = fmt.Sprintf("master %q of the sentinels %s", cfg.RedisMasterName, cfg.RedisSentinels)
		client, err = redisstore.NewFailoverClient(cfg.RedisURL, cfg.RedisMasterName, cfg.sentinels(), tune)
	} else {
		client, err = redisstore.NewClient(pingCtx, url, tune)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("connect to redis %s: %w", where, err)
	}
	if embedded == nil {
		client.AddHook(redisstore.NewBreakerHook("redis", breaker.Settings{OnStateChange: m.breaker(logBreaker(log))}))
	} else {
		// A call that outlived its deadline waiting for the busy in-process server is a
		// 503 saying so, not a network timeout.
		client.AddHook(embedded.BusyHook())
	}
	if cfg.tracing() {
		if err := redisotel.InstrumentTracing(client); err != nil {
			log.Warn("trace redis calls", zap.Error(err))
		}
	}
	if err := client.Ping(pingCtx).Err(); err != nil {
		_ = client.Close()
		return nil, nil, fmt.Errorf("connect to redis %s: %w", where, err)
	}
	// The one server (or Sentinel's master), or every node of a cluster, is watched
	// for restarts and failovers (redisstore.Restarts).
	if embedded == nil {
		if err := restarts.Watch(pingCtx, client); err != nil {
			_ = client.Close()
			return nil, nil, fmt.Errorf("connect to redis %s: %w", where, err)
		}
	}
	return client, func() { _ = client.Close() }, nil
}

// inProcessRedis starts the in-process Redis when cfg names no Redis (the zero-setup
// mode) and returns nil otherwise. The cleanup stops it.
func inProcessRedis(cfg Common, log *zap.Logger) (*redisstore.Embedded, func(), error) {
	if !cfg.embeddedRedis() {
		return nil, func() {}, nil
	}
	e, err := redisstore.StartEmbedded()
	if err != nil {
		return nil, nil, fmt.Errorf("start the in-process redis: %w", err)
	}
	log.Warn("SECKILL_REDIS_URL is unset: using an in-process Redis (miniredis) that keeps nothing across restarts; for trying and testing, not production",
		zap.String("addr", e.Addr()))
	return e, e.Close, nil
}

// warnIfLossy logs one warning line when Redis, as configured, can lose grabs it
// acknowledged: a master without an append-only file, and no replicas required to
// confirm each grab (SECKILL_REDIS_MIN_REPLICAS). The in-process Redis says so itself
// when it starts. A Redis that does not say is not judged.
func warnIfLossy(ctx context.Context, client redis.UniversalClient, cfg Config, log *zap.Logger) {
	if cfg.embeddedRedis() || cfg.RedisMinReplicas > 0 {
		return
	}
	info, err := client.Info(ctx, "persistence").Result()
	if err != nil || !strings.Contains(info, "aof_enabled:0") {
		return
	}
	log.Warn("Redis keeps no append-only file and SECKILL_REDIS_MIN_REPLICAS is 0: a Redis restart or failover can lose grabs answered 202 but not yet persisted (see docs/operations.md, Durability)")
}

// logBreaker logs each change of a circuit breaker's state, once.
func logBreaker(log *zap.Logger) func(name, from, to string) {
	return func(name, from, to string) {
		if to == "closed" {
			log.Info("dependency recovered: circuit closed", zap.String("dependency", name), zap.String("from", from))
			return
		}
		log.Warn("dependency failing: circuit "+to, zap.String("dependency", name), zap.String("from", from))
	}
}

// stockOptions are the Redis adapters' settings for reading and repairing, as
// reconcile uses them.
func stockOptions(cfg Common) redisstore.Options {
	return redisstore.Options{Prefix: cfg.KeyPrefix, Grace: cfg.KeyGrace}
}

// grabStockOptions add the grab path's limits for serve.
func grabStockOptions(cfg Config, restarts *redisstore.Restarts) redisstore.Options {
	o := stockOptions(cfg.Common)
	o.UserRate, o.UserBurst, o.MaxBacklog = cfg.UserRate, cfg.UserBurst, cfg.MaxBacklog
	// A grab's request has no deadline of its own on the hot path: the stock ends its
	// wait for a turn instead, at half the request timeout (the other half is for its
	// own call) and at most maxTurnWait, however long the call in flight takes.
	o.MaxWait = min(cfg.RequestTimeout/2, maxTurnWait)
	o.MinReplicas = cfg.RedisMinReplicas
	o.Restarts = restarts
	// Every reservation is recorded with its deadline, so a restart with another
	// SECKILL_PAYMENT_TIMEOUT keeps the deadline it was answered with.
	o.PaymentWindow = cfg.PaymentTimeout
	return o
}

// maxTurnWait bounds how long a grab waits for its turn behind its voucher's call in
// flight: the 503 it then gets comes within a second, with room to spare for a busy
// machine to write it.
const maxTurnWait = 800 * time.Millisecond

// The worker's idle rhythm: a read waits for new entries at most readBlock, and the
// registry of vouchers is re-read at most every discoverEvery, so the reservations of
// a voucher whose sale starts the moment it is created (a demo's, say) are read within
// about discoverEvery + readBlock. An idle worker costs Redis a few cheap calls a second.
const (
	readBlock     = 250 * time.Millisecond
	discoverEvery = 250 * time.Millisecond
)

func queueOptions(cfg Config, clock *redisstore.Clock) redisstore.QueueOptions {
	return redisstore.QueueOptions{Prefix: cfg.KeyPrefix, Consumer: consumerName(cfg.Consumer), DiscoverEvery: discoverEvery,
		Clock: clock}
}

// consumerName is the configured name, or one unique to this process: host, pid and
// a random suffix, so two processes never share a pending list by accident.
func consumerName(configured string) string {
	if configured != "" {
		return configured
	}
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "seckill"
	}
	var b [4]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("%s-%d-%s", host, os.Getpid(), hex.EncodeToString(b[:]))
}
