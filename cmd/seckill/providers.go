package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"time"

	"github.com/google/wire"
	"github.com/labstack/echo/v4"
	"github.com/redis/go-redis/v9"
	"github.com/uptrace/bun"
	"go.uber.org/zap"

	"github.com/seckill/seckill/adapters/httpapi"
	"github.com/seckill/seckill/adapters/redisstore"
	"github.com/seckill/seckill/adapters/sqlstore"
	"github.com/seckill/seckill/adapters/system"
	"github.com/seckill/seckill/application"
	"github.com/seckill/seckill/ports"
)

// app is everything serve runs.
type app struct {
	HTTP      *echo.Echo
	Warm      *application.WarmVouchers
	Worker    *application.Worker
	Queue     *redisstore.Queue
	Stock     *redisstore.Stock
	Grab      *application.GrabVoucher
	Expire    *application.ExpireOrders
	Release   *application.ReleaseClosed
	Reconcile *application.Reconcile
}

// redisSet provides the Redis client and the adapters built on it. The stock port and
// its audit come from strategySet, which picks them by SECKILL_STOCK_STRATEGY.
var redisSet = wire.NewSet(
	openRedis,
	grabStockOptions,
	redisstore.NewStock,
	queueOptions,
	redisstore.NewQueue,
	wire.Bind(new(ports.Queue), new(*redisstore.Queue)),
	redisstore.NewReservations,
	wire.Bind(new(ports.Reservations), new(*redisstore.Reservations)),
	redisstore.NewAudit,
	redisstore.NewRateLimiter,
)

// databaseSet provides the database (PostgreSQL or SQLite) and its repositories.
var databaseSet = wire.NewSet(
	openDatabase,
	sqlstore.NewVouchers,
	wire.Bind(new(ports.Vouchers), new(*sqlstore.Vouchers)),
	sqlstore.NewOrders,
	wire.Bind(new(ports.Orders), new(*sqlstore.Orders)),
	wire.Bind(new(ports.OrderLifecycle), new(*sqlstore.Orders)),
	wire.Bind(new(ports.Releases), new(*sqlstore.Orders)),
	wire.Bind(new(ports.OrderAudit), new(*sqlstore.Orders)),
)

// systemSet provides the clock and the order id source.
var systemSet = wire.NewSet(
	wire.Struct(new(system.Clock)),
	wire.Bind(new(ports.Clock), new(system.Clock)),
	wire.Struct(new(system.ULIDs)),
	wire.Bind(new(ports.OrderIDs), new(system.ULIDs)),
	wire.Struct(new(system.AcceptPayments)),
	wire.Bind(new(ports.Payments), new(system.AcceptPayments)),
)

// applicationSet provides the use cases.
var applicationSet = wire.NewSet(
	application.NewCreateVoucher,
	application.NewPauseSale,
	application.NewGetVoucher,
	application.NewListVouchers,
	grabOptions,
	application.NewGrabVoucher,
	application.NewWarmVouchers,
	application.NewGetOrder,
	application.NewListOrders,
	application.NewGetVoucherStats,
	application.NewCompensate,
	application.NewPayOrder,
	application.NewCancelOrder,
	expireOrders,
	application.NewReleaseClosed,
	reconcile,
	fulfillOrder,
	workerOptions,
	workerObserver,
	application.NewWorker,
)

// httpSet provides the REST API.
var httpSet = wire.NewSet(
	wire.Struct(new(httpapi.UseCases), "*"),
	httpOptions,
	tokens,
	readinessChecks,
	httpapi.New,
)

// commonSet provides the settings shared by every command from serve's.
var commonSet = wire.NewSet(wire.FieldsOf(new(Config), "Common"))

// openRedis connects to cfg.RedisURL — one server or, detected, a Redis Cluster (see
// redisstore.NewClient) — or, when it is unset, starts an in-process Redis
// and connects to that — with timeouts tuned so no request waits more
// than a second for a dead Redis, and a circuit breaker that fails calls at once while
// Redis is down and lets a probe through to close again when it is back. The
// connection is checked at start-up so a wrong URL stops the command with one line.
func openRedis(ctx context.Context, cfg Common, log *zap.Logger) (redis.UniversalClient, func(), error) {
	url, stop := cfg.RedisURL, func() {}
	if url == "" {
		e, err := redisstore.StartEmbedded()
		if err != nil {
			return nil, nil, fmt.Errorf("start the in-process redis: %w", err)
		}
		log.Warn("SECKILL_REDIS_URL is unset: using an in-process Redis (miniredis) that keeps nothing across restarts; for trying and testing, not production",
			zap.String("addr", e.Addr()))
		url, stop = e.URL(), e.Close
	}
	tune := func(opts *redis.Options) {
		redisstore.TuneClientOptions(opts)
		if cfg.RedisURL == "" {
			// The in-process server runs one command at a time and a script several times
			// slower than Redis: let a burst queue for it instead of timing out.
			opts.ReadTimeout, opts.WriteTimeout, opts.PoolTimeout = 2*time.Second, 2*time.Second, 5*time.Second
		}
		opts.PoolSize = 64
		opts.MinIdleConns = 8
	}
	pingCtx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	client, err := redisstore.NewClient(pingCtx, url, tune)
	if err != nil {
		stop()
		return nil, nil, fmt.Errorf("connect to redis %s: %w", redactURL(url), err)
	}
	client.AddHook(redisstore.NewBreakerHook("redis", redisstore.BreakerSettings{OnStateChange: logBreaker(log)}))
	if err := client.Ping(pingCtx).Err(); err != nil {
		_ = client.Close()
		stop()
		return nil, nil, fmt.Errorf("connect to redis %s: %w", redactURL(url), err)
	}
	return client, func() { _ = client.Close(); stop() }, nil
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

// openDatabase connects to cfg.DatabaseURL with short connect timeouts, a deadline on
// every call that has none, and a circuit breaker like Redis's. When it names a SQLite
// file — by default, with SECKILL_DATABASE_URL unset — it says that this is for trying
// and testing, and applies the pending migrations, as the zero-setup mode has no
// separate step for them.
func openDatabase(ctx context.Context, cfg Common, log *zap.Logger) (*bun.DB, func(), error) {
	url := databaseURL(cfg.DatabaseURL)
	pingCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	db, err := sqlstore.OpenGuarded(pingCtx, url, sqlstore.GuardOptions{OnStateChange: logBreaker(log)})
	if err != nil {
		return nil, nil, fmt.Errorf("connect to database %s: %w", redactURL(url), err)
	}
	if sqlstore.IsSQLite(db) {
		log.Warn("using a SQLite file as the database (set SECKILL_DATABASE_URL to a PostgreSQL URL otherwise); for trying and testing, not production",
			zap.String("database", url))
		if _, err := sqlstore.MigrateUp(ctx, db); err != nil {
			_ = db.Close()
			return nil, nil, fmt.Errorf("migrate %s: %w", url, err)
		}
	}
	return db, func() { _ = db.Close() }, nil
}

// stockOptions are the Redis adapters' settings for reading and repairing, as
// reconcile uses them.
func stockOptions(cfg Common) redisstore.Options {
	return redisstore.Options{Prefix: cfg.KeyPrefix, Grace: cfg.KeyGrace}
}

// grabStockOptions add the grab path's limits for serve.
func grabStockOptions(cfg Config) redisstore.Options {
	o := stockOptions(cfg.Common)
	o.UserRate, o.UserBurst, o.MaxBacklog = cfg.UserRate, cfg.UserBurst, cfg.MaxBacklog
	return o
}

func grabOptions(cfg Config) application.GrabOptions {
	return application.GrabOptions{SoldOutTTL: cfg.SoldOutTTL}
}

// The worker's idle rhythm: a read waits for new entries at most readBlock, and the
// registry of vouchers is re-read at most every discoverEvery, so the reservations of
// a voucher whose sale starts the moment it is created (a demo's, say) are read within
// about discoverEvery + readBlock. An idle worker costs Redis a few cheap calls a second.
const (
	readBlock     = 250 * time.Millisecond
	discoverEvery = 250 * time.Millisecond
)

func queueOptions(cfg Config) redisstore.QueueOptions {
	return redisstore.QueueOptions{Prefix: cfg.KeyPrefix, Consumer: consumerName(cfg.Consumer), DiscoverEvery: discoverEvery}
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

func expireOrders(lifecycle ports.OrderLifecycle, compensate *application.Compensate, clock ports.Clock, cfg Config) *application.ExpireOrders {
	return application.NewExpireOrders(lifecycle, compensate, clock, cfg.PaymentTimeout)
}

func reconcile(vouchers ports.Vouchers, stock ports.Stock, audit ports.StockAudit, ledger ports.OrderAudit,
	compensate *application.Compensate, clock ports.Clock, cfg Common) *application.Reconcile {
	return application.NewReconcile(vouchers, stock, audit, ledger, compensate, clock, cfg.ReconcileGrace)
}

func fulfillOrder(orders ports.Orders, queue ports.Queue, compensate *application.Compensate, cfg Config) *application.FulfillOrder {
	return application.NewFulfillOrder(orders, queue, compensate, cfg.MaxDeliveries)
}

func workerOptions(cfg Config) application.WorkerOptions {
	return application.WorkerOptions{
		Batch:      cfg.BatchSize,
		Block:      readBlock,
		ClaimIdle:  cfg.ClaimIdle,
		ClaimEvery: max(cfg.ClaimIdle/4, time.Second),
		MinBackoff: 100 * time.Millisecond,
		MaxBackoff: 5 * time.Second,
	}
}

// workerObserver logs the worker's changes of health, once each, and every dead
// letter or delivery left pending.
func workerObserver(log *zap.Logger) application.WorkerObserver {
	return application.WorkerObserver{
		Health: func(healthy bool, err error) {
			if healthy {
				log.Info("fulfilment recovered: persisting again")
				return
			}
			log.Error("fulfilment paused: a dependency is down; reservations stay pending and are retried with back-off", zap.Error(err))
		},
		Problem: func(err error) { log.Warn("fulfilment", zap.Error(err)) },
	}
}

// stalledAfter is how long the oldest reservation may wait to be persisted before
// /readyz says fulfilment is stalled.
const stalledAfter = 30 * time.Second

func httpOptions(cfg Config, limiter *redisstore.RateLimiter, queue *redisstore.Queue) httpapi.Options {
	return httpapi.Options{
		BodyLimit: cfg.BodyLimit, RequestTimeout: cfg.RequestTimeout,
		MaxInflight: cfg.MaxInflight, GrabRate: cfg.GrabRate, GrabBurst: cfg.GrabBurst,
		IPLimit: cfg.IPRate, IPBurst: cfg.IPBurst, IPLimiter: limiter,
		Fulfilment: func(ctx context.Context) (bool, error) {
			age, err := queue.OldestQueued(ctx)
			return age > stalledAfter, err
		},
	}
}

func tokens(cfg Config) *httpapi.Tokens {
	return httpapi.NewTokens([]byte(cfg.JWTSecret))
}

func readinessChecks(client redis.UniversalClient, db *bun.DB) []httpapi.Check {
	return []httpapi.Check{
		{Name: "redis", Ping: func(ctx context.Context) error { return client.Ping(ctx).Err() }},
		{Name: "database", Ping: db.PingContext},
	}
}
