package main

import (
	"github.com/google/wire"
	"github.com/labstack/echo/v4"
	"github.com/redis/go-redis/v9"
	"github.com/uptrace/bun"

	"github.com/seckill/seckill/adapters/httpapi"
	"github.com/seckill/seckill/adapters/redisstore"
	"github.com/seckill/seckill/adapters/sqlstore"
	"github.com/seckill/seckill/adapters/system"
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
	inProcessRedis,
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
var serveRepositorySet = wire.NewSet(outboxVouchers, outboxOrders, outboxCampaigns,
	wire.Bind(new(ports.Vouchers), new(*sqlstore.Vouchers)),
	wire.Bind(new(ports.Campaigns), new(*sqlstore.Campaigns)),
	wire.Bind(new(ports.Orders), new(*sqlstore.Orders)),
	wire.Bind(new(ports.VoucherOrders), new(*sqlstore.Orders)),
	wire.Bind(new(ports.OrderLifecycle), new(*sqlstore.Orders)),
	wire.Bind(new(ports.Releases), new(*sqlstore.Orders)),
	wire.Bind(new(ports.OrderAudit), new(*sqlstore.Orders)),
)

// plainRepositorySet are the vouchers and orders of the other commands, which write
// no webhook events (reconcile changes no order's status and edits no voucher).
var plainRepositorySet = wire.NewSet(sqlstore.NewVouchers, sqlstore.NewOrders, sqlstore.NewCampaigns,
	wire.Bind(new(ports.Vouchers), new(*sqlstore.Vouchers)),
	wire.Bind(new(ports.Campaigns), new(*sqlstore.Campaigns)),
	wire.Bind(new(ports.Orders), new(*sqlstore.Orders)),
	wire.Bind(new(ports.VoucherOrders), new(*sqlstore.Orders)),
	wire.Bind(new(ports.OrderLifecycle), new(*sqlstore.Orders)),
	wire.Bind(new(ports.Releases), new(*sqlstore.Orders)),
	wire.Bind(new(ports.OrderAudit), new(*sqlstore.Orders)),
)

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
	createVoucher,
	application.NewCreateCampaign,
	application.NewGetCampaign,
	application.NewListCampaigns,
	application.NewUpdateCampaign,
	application.NewGetCampaignStats,
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
	roomSales,
	application.NewQueueStatus,
	application.NewQueueEntrants,
	application.NewGetQueueStats,
	admitQueues,
	application.NewEnterDraw,
	application.NewGetDraw,
	drawRunner,
	application.NewJoinWaitlist,
	application.NewIssueStreamTicket,
	application.NewRedeemStreamTicket,
	application.NewWaitlistPosition,
	application.NewLeaveWaitlist,
	persistedOrders,
	gateOptions,
	application.NewBuyerGate,
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

// roomSales reads the waiting rooms' sales, campaigns' rooms included; on the postgres
// stock strategy, whose sale state is the database's rows, it tells the rooms each
// sale as the database holds it (the rooms' Redis keeps no sale state to judge by).
func roomSales(strategy StockStrategy, vouchers ports.Vouchers, campaigns ports.Campaigns) *application.RoomSales {
	r := application.NewRoomSales(vouchers, campaigns)
	if strategy == StrategyPostgres {
		r.WithDatabaseStock()
	}
	return r
}

// gateOptions tune the buyers' gate of every door: the deny list it refuses listed
// users by, the key it checks the waiting rooms' passes with, the proofs of the sales
// that ask for one, the waiting rooms' sales (campaigns' rooms included), and the
// sold-out flags' life.
func gateOptions(cfg Config, denied *application.DeniedUsers, key application.PassKey, proofs *application.VerifyProof,
	rooms *application.RoomSales) application.GateOptions {
	return application.GateOptions{Denied: denied, PassKey: key, Proofs: proofs, Rooms: rooms, SoldOutTTL: cfg.SoldOutTTL}
}

// grabOptions tune the grab path: with the in-process Redis, the wait for each
// order's commit; on the postgres strategy, the spending of the waiting rooms' passes
// its grabs used.
func grabOptions(persisted *application.PersistedOrders, strategy StockStrategy, room ports.WaitingRoom) application.GrabOptions {
	opts := application.GrabOptions{Persisted: persisted}
	if strategy == StrategyPostgres {
		opts.Passes = room // the database's grab cannot use the pass up in Redis
	}
	return opts
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

// recoverVoucher counts each recovery of a voucher's sale state, and loads a
// campaign's terms with its vouchers'.
func recoverVoucher(vouchers ports.Vouchers, stock ports.Stock, audit ports.StockAudit, ledger ports.OrderAudit,
	clock ports.Clock, m *metrics, campaigns ports.Campaigns, cstock ports.CampaignStock) *application.RecoverVoucher {
	uc := application.NewRecoverVoucher(vouchers, stock, audit, ledger, clock)
	uc.WithCampaigns(campaigns, cstock)
	uc.Observe(m.recovered)
	return uc
}

// createVoucher creates vouchers, those of a campaign too.
func createVoucher(vouchers ports.Vouchers, stock ports.Stock, clock ports.Clock, campaigns ports.Campaigns,
	cstock ports.CampaignStock) *application.CreateVoucher {
	return application.NewCreateVoucher(vouchers, stock, clock).WithCampaigns(campaigns, cstock)
}
