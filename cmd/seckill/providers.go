package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/google/wire"
	"github.com/labstack/echo/v4"
	"github.com/redis/go-redis/extra/redisotel/v9"
	"github.com/redis/go-redis/v9"
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/extra/bunotel"
	"go.opentelemetry.io/otel"
	"go.uber.org/zap"

	"github.com/seckill/seckill/adapters/breaker"
	"github.com/seckill/seckill/adapters/httpapi"
	"github.com/seckill/seckill/adapters/redisstore"
	"github.com/seckill/seckill/adapters/sqlstore"
	"github.com/seckill/seckill/adapters/system"
	"github.com/seckill/seckill/adapters/telemetry"
	"github.com/seckill/seckill/adapters/turnstile"
	"github.com/seckill/seckill/adapters/webhook"
	"github.com/seckill/seckill/application"
	"github.com/seckill/seckill/domain"
	"github.com/seckill/seckill/ports"
)

// app is everything serve runs.
type app struct {
	Redis    redis.UniversalClient
	Restarts *redisstore.Restarts
	// Clock is the sale's clock, measured again every few seconds (syncClock).
	Clock *redisstore.Clock
	// Heals records which Redis servers were last healed (suspectUnhealed).
	Heals *sqlstore.Heals
	// DB is the database, for the lock a serve with an in-process Redis holds on it.
	DB          *bun.DB
	Idempotency ports.Idempotency
	HTTP        *echo.Echo
	// Streams are the API's event streams, ended when the server shuts down.
	Streams   *httpapi.Streams
	Warm      *application.WarmVouchers
	Worker    *application.Worker
	Queue     *redisstore.Queue
	Stock     *redisstore.Stock
	Grab      *application.GrabVoucher
	Expire    *application.ExpireOrders
	Release   *application.ReleaseClosed
	Reconcile *application.Reconcile
	// Leases keeps the periodic reconciliation to one instance at a time; Orders
	// folds the database's unit counters (sqlstore.Orders.FoldUnits).
	Leases *sqlstore.Leases
	Orders *sqlstore.Orders
	// Metrics are the worker's and the loops' instruments; HTTPMetrics the API's,
	// whose registry GET /metrics serves.
	Metrics     *metrics
	HTTPMetrics *httpapi.Metrics
	// Webhooks delivers the webhook outbox; nil with webhooks off. Outbox is the
	// outbox, purged of old deliveries hourly.
	Webhooks *application.DeliverWebhooks
	Outbox   *sqlstore.Webhooks
	// Denied is this instance's copy of the deny list, reloaded on a timer and when
	// DenyChanges announces a change.
	Denied      *application.DeniedUsers
	DenyChanges *redisstore.DenyChanges
	// Rooms shuffles and admits the waiting rooms (the worker role's loop, admit).
	Rooms *application.AdmitQueues
	// Draws runs the draws whose sale has begun, on one instance at a time.
	Draws *application.RunDraws
}

// redisSet provides the Redis client and the adapters built on it. The stock port and
// its audit come from strategySet, which picks them by SECKILL_STOCK_STRATEGY.
var redisSet = wire.NewSet(
	redisstore.NewRestarts,
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
	redisstore.NewChanges,
	wire.Bind(new(ports.Changes), new(*redisstore.Changes)),
	redisstore.NewTickets,
	wire.Bind(new(ports.StreamTickets), new(*redisstore.Tickets)),
	redisstore.NewDenyChanges,
	wire.Bind(new(ports.DenyChanges), new(*redisstore.DenyChanges)),
	redisstore.NewWaitingRoom,
	wire.Bind(new(ports.WaitingRoom), new(*redisstore.WaitingRoom)),
)

// databaseSet provides the database (PostgreSQL or SQLite) and its repositories but
// the vouchers' and the orders', which serveRepositorySet and plainRepositorySet
// provide.
var databaseSet = wire.NewSet(
	openDatabase,
	sqlstore.NewIdempotency,
	wire.Bind(new(ports.Idempotency), new(*sqlstore.Idempotency)),
	sqlstore.NewAuditLog,
	wire.Bind(new(ports.AuditLog), new(*sqlstore.AuditLog)),
	sqlstore.NewLeases,
	sqlstore.NewHeals,
	sqlstore.NewWebhooks,
	wire.Bind(new(ports.WebhookOutbox), new(*sqlstore.Webhooks)),
	wire.Bind(new(ports.WebhookDeliveries), new(*sqlstore.Webhooks)),
	sqlstore.NewDenyList,
	wire.Bind(new(ports.DenyList), new(*sqlstore.DenyList)),
	sqlstore.NewShuffles,
	wire.Bind(new(ports.Shuffles), new(*sqlstore.Shuffles)),
	sqlstore.NewDraws,
	wire.Bind(new(ports.Draws), new(*sqlstore.Draws)),
	wire.Bind(new(ports.Leases), new(*sqlstore.Leases)),
)

// serveRepositorySet are serve's vouchers and orders: with webhooks on, they write the
// webhook event of each change in its transaction (sqlstore's WithOutbox).
var serveRepositorySet = wire.NewSet(outboxVouchers, outboxOrders,
	wire.Bind(new(ports.Vouchers), new(*sqlstore.Vouchers)),
	wire.Bind(new(ports.Orders), new(*sqlstore.Orders)),
	wire.Bind(new(ports.VoucherOrders), new(*sqlstore.Orders)),
	wire.Bind(new(ports.OrderLifecycle), new(*sqlstore.Orders)),
	wire.Bind(new(ports.Releases), new(*sqlstore.Orders)),
	wire.Bind(new(ports.OrderAudit), new(*sqlstore.Orders)),
)

// plainRepositorySet are the vouchers and orders of the other commands, which write
// no webhook events (reconcile changes no order's status and edits no voucher).
var plainRepositorySet = wire.NewSet(sqlstore.NewVouchers, sqlstore.NewOrders,
	wire.Bind(new(ports.Vouchers), new(*sqlstore.Vouchers)),
	wire.Bind(new(ports.Orders), new(*sqlstore.Orders)),
	wire.Bind(new(ports.VoucherOrders), new(*sqlstore.Orders)),
	wire.Bind(new(ports.OrderLifecycle), new(*sqlstore.Orders)),
	wire.Bind(new(ports.Releases), new(*sqlstore.Orders)),
	wire.Bind(new(ports.OrderAudit), new(*sqlstore.Orders)),
)

// outboxVouchers writes voucher.updated with each edit, pause and resume when
// webhooks are on. Off, no event is kept: an outbox nobody delivers would only grow.
func outboxVouchers(db *bun.DB, cfg Config) *sqlstore.Vouchers {
	if cfg.WebhookURL == "" {
		return sqlstore.NewVouchers(db)
	}
	return sqlstore.NewVouchers(db).WithOutbox()
}

// outboxOrders writes the orders' and sold-out events when webhooks are on.
func outboxOrders(db *bun.DB, cfg Config) *sqlstore.Orders {
	if cfg.WebhookURL == "" {
		return sqlstore.NewOrders(db)
	}
	return sqlstore.NewOrders(db).WithOutbox()
}

// deliverWebhooks is the webhook dispatcher, with the contract's timings, counting
// each attempt; nil when webhooks are off. Its clock is the host's, the one the
// outbox's rows are stamped by.
func deliverWebhooks(cfg Config, hooks ports.WebhookOutbox, window domain.PaymentWindow, m *metrics, log *zap.Logger) (*application.DeliverWebhooks, error) {
	if cfg.WebhookURL == "" {
		return nil, nil
	}
	sender, err := webhook.NewSender(cfg.WebhookURL, cfg.webhookSecrets()...)
	if err != nil {
		return nil, err
	}
	return application.NewDeliverWebhooks(hooks, sender, httpapi.WebhookBody(window), system.Clock{}, application.WebhookOptions{Endpoint: cfg.WebhookURL},
		application.WebhookObserver{
			Attempt: m.webhookAttempt,
			Problem: func(err error) { log.Warn("webhooks", zap.Error(err)) },
		}), nil
}

// retryDelivery is the admin's retry of a webhook delivery, by the host's clock (the
// outbox's), enabling the configured endpoint again.
func retryDelivery(cfg Config, hooks ports.WebhookDeliveries) *application.RetryDelivery {
	return application.NewRetryDelivery(hooks, system.Clock{}, cfg.WebhookURL)
}

// systemSet provides the sale's clock and the order id source.
var systemSet = wire.NewSet(
	saleClock,
	wire.Bind(new(ports.Clock), new(*redisstore.Clock)),
	system.NewULIDs,
	wire.Bind(new(ports.OrderIDs), new(*system.ULIDs)),
	wire.Struct(new(system.AcceptPayments)),
	wire.Bind(new(ports.Payments), new(system.AcceptPayments)),
)

// applicationSet provides the use cases.
var applicationSet = wire.NewSet(
	application.NewCreateVoucher,
	application.NewPauseSale,
	editVoucher,
	application.NewListAudit,
	application.NewListDeliveries,
	retryDelivery,
	deliverWebhooks,
	application.NewGetVoucher,
	application.NewListVouchers,
	application.NewDeniedUsers,
	application.NewDenyUser,
	application.NewAllowUser,
	application.NewListDenied,
	joinQueue,
	application.NewQueueStatus,
	application.NewQueueEntrants,
	admitQueues,
	application.NewEnterDraw,
	application.NewGetDraw,
	drawRunner,
	application.NewWaitlist,
	persistedOrders,
	grabOptions,
	application.NewGrabVoucher,
	application.NewWarmVouchers,
	recoverVoucher,
	application.NewGetOrder,
	application.NewListOrders,
	application.NewGetVoucherStats,
	application.NewListVoucherOrders,
	application.NewExportVoucherOrders,
	paymentWindow,
	compensate,
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

// challengeSet provides the deployment's challenge (SECKILL_CHALLENGE) and the use
// cases that issue and check its proofs.
var challengeSet = wire.NewSet(challenge, issueChallenge, verifyProof)

// challenge is the ports.Challenge SECKILL_CHALLENGE picks: proof of work kept in
// Redis (the default), or Cloudflare Turnstile.
func challenge(cfg Config, client redis.UniversalClient, clock *redisstore.Clock) ports.Challenge {
	if cfg.Challenge == "turnstile" {
		return turnstile.New(turnstile.Options{Secret: cfg.TurnstileSecret, SiteKey: cfg.TurnstileSiteKey, URL: cfg.TurnstileURL})
	}
	return redisstore.NewProofOfWork(client, stockOptions(cfg.Common), clock)
}

// issueChallenge counts every challenge issued.
func issueChallenge(vouchers ports.Vouchers, challenge ports.Challenge, clock ports.Clock, m *metrics) *application.IssueChallenge {
	uc := application.NewIssueChallenge(vouchers, challenge, clock)
	uc.Observe(m.challenge)
	return uc
}

// verifyProof counts every proof verified or refused.
func verifyProof(challenge ports.Challenge, m *metrics) *application.VerifyProof {
	uc := application.NewVerifyProof(challenge)
	uc.Observe(m.challenge)
	return uc
}

// metricsSet provides the Prometheus instruments and registry.
var metricsSet = wire.NewSet(newMetrics, httpMetrics)

// httpSet provides the REST API.
var httpSet = wire.NewSet(
	wire.Struct(new(httpapi.UseCases), "*"),
	httpOptions,
	streams,
	tokens,
	passKey,
	readinessChecks,
	httpapi.New,
)

// commonSet provides the settings shared by every command from serve's.
var commonSet = wire.NewSet(wire.FieldsOf(new(Config), "Common"))

// openRedis connects to cfg.RedisURL — one server or, detected, a Redis Cluster (see
// redisstore.NewClient) — or to the master that cfg.RedisSentinels name, following
// failovers (redisstore.NewFailoverClient), or, when neither is set, starts an
// in-process Redis and connects to that — with timeouts that follow each request's deadline and give
// up on a dead Redis within a second, and a circuit breaker that fails calls at once
// while Redis is down and lets a probe through to close again when it is back. The
// in-process Redis is reached in memory, with neither: it cannot be unreachable. The
// connection is checked at start-up so a wrong URL stops the command with one line.
func openRedis(ctx context.Context, cfg Common, log *zap.Logger, m *metrics, restarts *redisstore.Restarts) (redis.UniversalClient, func(), error) {
	url, stop := cfg.RedisURL, func() {}
	var embedded *redisstore.Embedded
	if cfg.embeddedRedis() {
		e, err := redisstore.StartEmbedded()
		if err != nil {
			return nil, nil, fmt.Errorf("start the in-process redis: %w", err)
		}
		log.Warn("SECKILL_REDIS_URL is unset: using an in-process Redis (miniredis) that keeps nothing across restarts; for trying and testing, not production",
			zap.String("addr", e.Addr()))
		url, stop, embedded = e.URL(), e.Close, e
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
		stop()
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
		stop()
		return nil, nil, fmt.Errorf("connect to redis %s: %w", where, err)
	}
	// The one server (or Sentinel's master), or every node of a cluster, is watched
	// for restarts and failovers (redisstore.Restarts).
	if embedded == nil {
		if err := restarts.Watch(pingCtx, client); err != nil {
			_ = client.Close()
			stop()
			return nil, nil, fmt.Errorf("connect to redis %s: %w", where, err)
		}
	}
	return client, func() { _ = client.Close(); stop() }, nil
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

// openDatabase connects to cfg.DatabaseURL with short connect timeouts, a deadline on
// every call that has none, and a circuit breaker like Redis's; every statement is
// counted (seckill_db_statements_total). When it names a SQLite
// file — by default, with SECKILL_DATABASE_URL unset — it says that this is for trying
// and testing, and applies the pending migrations, as the zero-setup mode has no
// separate step for them.
func openDatabase(ctx context.Context, cfg Common, log *zap.Logger, m *metrics) (*bun.DB, func(), error) {
	url := databaseURL(cfg.DatabaseURL)
	pingCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	db, err := sqlstore.OpenGuarded(pingCtx, url, sqlstore.GuardOptions{Breaker: breaker.Settings{OnStateChange: m.breaker(logBreaker(log))}})
	if err != nil {
		return nil, nil, fmt.Errorf("connect to database %s: %w", redactURL(url), err)
	}
	db = db.WithQueryHook(statementCounter{m.statements})
	if cfg.tracing() {
		db = db.WithQueryHook(bunotel.NewQueryHook(bunotel.WithDBName("seckill")))
	}
	if sqlstore.IsSQLite(db) {
		log.Warn("using a SQLite file as the database (set SECKILL_DATABASE_URL to a PostgreSQL URL otherwise); for trying and testing, not production",
			zap.String("database", url))
		if _, err := sqlstore.MigrateUp(ctx, db); err != nil {
			_ = db.Close()
			return nil, nil, fmt.Errorf("migrate %s: %w", url, err)
		}
	}
	// Without its schema every call would fail with 500: refuse to start instead.
	checkCtx, cancelCheck := context.WithTimeout(ctx, 5*time.Second)
	defer cancelCheck()
	if err := sqlstore.CheckSchema(checkCtx, db); err != nil {
		_ = db.Close()
		if errors.Is(err, sqlstore.ErrSchemaBehind) {
			return nil, nil, settingError{fmt.Errorf("database %s: %w; run `seckill migrate up` first", redactURL(url), err)}
		}
		return nil, nil, fmt.Errorf("database %s: %w", redactURL(url), err)
	}
	return db, func() { _ = db.Close() }, nil
}

// hostClock is this host's clock, the base the sale's clock is carried forward on. A
// test build shifts it (testclock.go) to play a host whose clock is off.
var hostClock ports.Clock = system.Clock{}

// saleClock is the clock every use case reads: Redis's time, as the scripts judge the
// sale by it (redisstore.Clock), measured once here and every few seconds by serve
// (syncClock). A Redis that does not answer now leaves it on the host's clock until
// it does.
func saleClock(ctx context.Context, client redis.UniversalClient, log *zap.Logger) *redisstore.Clock {
	c := redisstore.NewClock(client, hostClock)
	syncCtx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if _, err := c.Sync(syncCtx); err != nil {
		log.Warn("measure the sale clock (redis's time); the host's clock stands in until it can be", zap.Error(err))
	}
	return c
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

// joinQueue counts the users who join a waiting room, early or late, and checks the
// proofs of the rooms that ask for one.
func joinQueue(vouchers ports.Vouchers, room ports.WaitingRoom, clock ports.Clock, denied *application.DeniedUsers,
	proofs *application.VerifyProof, m *metrics) *application.JoinQueue {
	uc := application.NewJoinQueue(vouchers, room, clock, denied)
	uc.Observe(m.joined)
	uc.RequireProofs(proofs)
	return uc
}

// admitQueues runs the waiting rooms, the shuffle's lease held in this worker's name.
func admitQueues(vouchers ports.Vouchers, room ports.WaitingRoom, shuffles ports.Shuffles, leases ports.Leases,
	clock ports.Clock, queue *redisstore.Queue, m *metrics, log *zap.Logger) *application.AdmitQueues {
	return application.NewAdmitQueues(vouchers, room, shuffles, leases, clock,
		application.RoomOptions{Holder: queue.Consumer()}, m.roomObserver(log))
}

// grabOptions tune the grab path: the sold-out flags' life, the deny list it refuses
// listed users by, the key it checks the waiting rooms' passes with, the proofs of
// the sales that ask for one, and, with the in-process Redis, the wait for each
// order's commit.
func grabOptions(cfg Config, denied *application.DeniedUsers, key application.PassKey, proofs *application.VerifyProof,
	persisted *application.PersistedOrders) application.GrabOptions {
	return application.GrabOptions{SoldOutTTL: cfg.SoldOutTTL, Denied: denied, PassKey: key, Proofs: proofs, Persisted: persisted}
}

// persistedOrders makes grabs wait for their orders' commit when Redis is this
// process's own (the zero-setup mode): what it holds dies with the process, so a 202
// is said only once the order is in the database. With a Redis server, nil: its
// durability is its append-only file's (docs/operations.md, Durability).
func persistedOrders(cfg Config) *application.PersistedOrders {
	if !cfg.embeddedRedis() {
		return nil
	}
	return application.NewPersistedOrders(cfg.RequestTimeout)
}

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

// compensate counts the units each compensation puts back on sale.
func compensate(stock ports.Stock, releases ports.Releases, m *metrics) *application.Compensate {
	c := application.NewCompensate(stock, releases)
	c.Observe(m.unitsReleased)
	return c
}

// paymentWindow is how long an order may await payment: each order is recorded with
// its deadline by it when reserved; the sweeper, the payment and the orders' expires_at
// judge by that deadline, and by it for an order recorded without one.
func paymentWindow(cfg Config) domain.PaymentWindow {
	return domain.PaymentWindow(cfg.PaymentTimeout)
}

// noPaymentWindow is the window of `seckill reconcile`, which takes no payment
// timeout: a unit its releases hand to a waitlist is recorded without a deadline, and
// the serving instance that persists, answers or expires its order judges it by its
// own window.
func noPaymentWindow() domain.PaymentWindow {
	return 0
}

func expireOrders(lifecycle ports.OrderLifecycle, compensate *application.Compensate, clock ports.Clock, window domain.PaymentWindow,
	changes ports.Changes) *application.ExpireOrders {
	return application.NewExpireOrders(lifecycle, compensate, clock, window, changes)
}

func reconcile(vouchers ports.Vouchers, audit ports.StockAudit, ledger ports.OrderAudit,
	compensate *application.Compensate, recovery *application.RecoverVoucher, log ports.AuditLog, clock ports.Clock, cfg Common) *application.Reconcile {
	return application.NewReconcile(vouchers, audit, ledger, compensate, recovery, log, clock,
		application.ReconcileOptions{Grace: cfg.ReconcileGrace, KeyGrace: cfg.KeyGrace})
}

// editVoucher counts each edit by the kinds of change it made.
func editVoucher(vouchers ports.Vouchers, stock ports.Stock, recovery *application.RecoverVoucher, clock ports.Clock, changes ports.Changes,
	m *metrics) *application.EditVoucher {
	uc := application.NewEditVoucher(vouchers, stock, recovery, clock, changes)
	uc.Observe(m.edited)
	return uc
}

// recoverVoucher counts each recovery of a voucher's sale state.
func recoverVoucher(vouchers ports.Vouchers, stock ports.Stock, audit ports.StockAudit, ledger ports.OrderAudit,
	clock ports.Clock, m *metrics) *application.RecoverVoucher {
	uc := application.NewRecoverVoucher(vouchers, stock, audit, ledger, clock)
	uc.Observe(m.recovered)
	return uc
}

// fulfillOrder tells persisted (nil: nobody) each order it commits.
func fulfillOrder(orders ports.Orders, queue ports.Queue, compensate *application.Compensate, changes ports.Changes,
	persisted *application.PersistedOrders, cfg Config) *application.FulfillOrder {
	return application.NewFulfillOrder(orders, queue, compensate, persisted.Changes(changes), cfg.MaxDeliveries)
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
func workerObserver(log *zap.Logger, m *metrics, cfg Common) application.WorkerObserver {
	o := application.WorkerObserver{
		Health: func(healthy bool, err error) {
			if healthy {
				log.Info("fulfillment recovered: persisting again")
				return
			}
			log.Error("fulfillment paused: a dependency is down; reservations stay pending and are retried with back-off", zap.Error(err))
		},
		Problem:   func(err error) { log.Warn("fulfillment", zap.Error(err)) },
		Fulfilled: m.fulfilled,
	}
	if cfg.tracing() {
		o.Persisting = telemetry.PersistSpans(otel.GetTracerProvider())
	}
	return o
}

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
func streams(cfg Config, changes ports.Changes, tickets ports.StreamTickets, log *zap.Logger) *httpapi.Streams {
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

// drawRunner runs the draws on the instance holding their lease (named by its consumer
// name), a batch per Redis call, each draw carried out counted in the metrics.
func drawRunner(draws ports.Draws, entries ports.Entries, leases ports.Leases, ids ports.OrderIDs, clock ports.Clock,
	queue *redisstore.Queue, cfg Config, m *metrics) *application.RunDraws {
	return application.NewRunDraws(draws, entries, leases, ids, clock, queue.Consumer(),
		application.DrawOptions{Batch: cfg.DrawBatch, Lease: cfg.DrawLease},
		application.DrawObserver{Drawn: m.drawn})
}
