package main

import (
	"context"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/redis/go-redis/v9"
	"github.com/uptrace/bun"
	"go.uber.org/zap"

	"github.com/seckill/seckill/adapters/httpapi"
	"github.com/seckill/seckill/adapters/redisstore"
	"github.com/seckill/seckill/adapters/sqlstore"
	"github.com/seckill/seckill/application"
	"github.com/seckill/seckill/domain"
	"github.com/seckill/seckill/ports"
)

// metrics are the process's Prometheus instruments outside the HTTP layer: what the
// fulfillment worker and the compensations did, the breakers, the last
// reconciliation, the recoveries and the edits. The use cases report through their observer callbacks, wired here,
// so the application never sees Prometheus.
type metrics struct {
	reg         *prometheus.Registry
	persisted   prometheus.Counter
	failed      prometheus.Counter
	deadLetters prometheus.Counter
	expired     prometheus.Counter
	released    prometheus.Counter
	breakerOpen *prometheus.GaugeVec
	drift       *prometheus.GaugeVec
	unchecked   prometheus.Counter
	recoveries  *prometheus.CounterVec
	edits       *prometheus.CounterVec
	clockOffset prometheus.Gauge
	statements  prometheus.Counter
	webhooks    *prometheus.CounterVec
	challenges  *prometheus.CounterVec
	joins       *prometheus.CounterVec
	admitted    prometheus.Counter
	passes      prometheus.Gauge
	shuffles    prometheus.Histogram
	// draws, drawEntrants and drawWinners count the draws this instance carried out
	// to their end, their entrants and winners; drawDuration times them.
	draws        prometheus.Counter
	drawEntrants prometheus.Counter
	drawWinners  prometheus.Counter
	drawDuration prometheus.Histogram
}

// breakerNames are the dependencies behind a circuit breaker, as the breakers name
// themselves (the database's is "postgres" whatever the database).
var breakerNames = []string{"redis", "postgres"}

// newMetrics returns the instruments on a fresh registry that also holds the Go
// runtime's and the process's collectors. Every family is exposed from the start.
func newMetrics() *metrics {
	reg := prometheus.NewRegistry()
	counter := func(name, help string) prometheus.Counter {
		return prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help})
	}
	m := &metrics{
		reg:          reg,
		persisted:    counter("seckill_reservations_persisted_total", "Reservations the fulfillment worker turned into orders."),
		failed:       counter("seckill_reservations_failed_total", "Reservations that could never become live orders: stored as failed, their units returned."),
		deadLetters:  counter("seckill_dead_letters_total", "Queue entries moved to a dead-letter stream (malformed, or failing past the delivery limit)."),
		expired:      counter("seckill_orders_expired_total", "Orders expired unpaid by this instance."),
		released:     counter("seckill_units_released_total", "Units given back (cancelled, expired or failed orders, reconciliation repairs): put back on sale, or handed to a waitlist (seckill_waitlist_handoffs_total)."),
		unchecked:    counter("seckill_reconcile_unchecked_total", "Vouchers the periodic reconciliation could not check (Redis or the database failed for them); each is checked again at the next pass."),
		statements:   counter("seckill_db_statements_total", "Statements this process sent to the database, BEGIN and COMMIT included."),
		draws:        counter("seckill_draws_total", "Draws this instance carried out to their end (recorded, every winner's order reserved, the backfill in place)."),
		drawEntrants: counter("seckill_draw_entrants_total", "Entrants of the draws this instance carried out."),
		drawWinners:  counter("seckill_draw_winners_total", "Winners of the draws this instance carried out: orders of one unit, awaiting payment."),
		drawDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "seckill_draw_duration_seconds",
			Help:    "How long carrying out a draw took on this instance, from reading its entrants to its last winner's reservation (or from where it resumed).",
			Buckets: []float64{0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30},
		}),
		breakerOpen: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "seckill_breaker_open",
			Help: "1 while the circuit breaker of a dependency is open (calls fail at once), else 0.",
		}, []string{"dependency"}),
		drift: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "seckill_reconcile_drift",
			Help: "Disagreements between Redis and the database the last periodic reconciliation found, by kind, summed over vouchers.",
		}, []string{"kind"}),
		clockOffset: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "seckill_clock_offset_seconds",
			Help: "Redis's time (the sale's clock) minus this host's clock, at the last measurement: positive when this host is behind. The service tells time by Redis's; past " + clockWarnOffset.String() + " it logs a warning.",
		}),
		recoveries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "seckill_recoveries_total",
			Help: "Recoveries of a voucher's sale state from the database, by why (missing: absent or unfinished; restarted: Redis restarted or failed over) and outcome (ok or error).",
		}, []string{"reason", "outcome"}),
		edits: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "seckill_voucher_edits_total",
			Help: "Changes of a voucher's sale made by an edit (PATCH /api/v1/vouchers/{id}) that committed, by action (add_units, remove_units, begins_at, ends_at, per_user_limit, title): an edit of several counts once in each.",
		}, []string{"action"}),
		webhooks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "seckill_webhook_deliveries_total",
			Help: "Attempts this instance made to deliver a webhook, by outcome: delivered (a 2xx), failed (retried later), given_up (failed for 3 days: not tried again), disabled (the endpoint answered 410 Gone: it is disabled, nothing is sent to it until an admin retries a delivery).",
		}, []string{"outcome"}),
		challenges: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "seckill_challenges_total",
			Help: "Challenges of vouchers with \"challenge\": \"pow\" (proof of work, or Turnstile with SECKILL_CHALLENGE=turnstile), by outcome: issued (GET …/challenge, and every 403 challenge_required), verified (a proof accepted and spent), refused (a proof sent and refused: malformed, wrong, expired, spent or another's; a request without one is counted by its route, as seckill_grab_requests_total's challenge_required).",
		}, []string{"outcome"}),
	}
	m.roomMetrics()
	reg.MustRegister(
		m.joins, m.admitted, m.passes, m.shuffles,
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		m.persisted, m.failed, m.deadLetters, m.expired, m.released, m.breakerOpen, m.drift, m.unchecked,
		m.recoveries, m.edits, m.clockOffset, m.statements, m.webhooks, m.challenges,
		m.draws, m.drawEntrants, m.drawWinners, m.drawDuration,
	)
	for _, o := range application.ChallengeOutcomes {
		m.challenges.WithLabelValues(o)
	}
	for _, o := range []application.WebhookOutcome{application.WebhookDelivered, application.WebhookFailed, application.WebhookGivenUp, application.WebhookDisabled} {
		m.webhooks.WithLabelValues(string(o))
	}
	for _, name := range breakerNames {
		m.breakerOpen.WithLabelValues(name)
	}
	for _, kind := range application.DriftKinds {
		m.drift.WithLabelValues(string(kind))
	}
	for _, reason := range application.RecoverReasons {
		m.recoveries.WithLabelValues(string(reason), "ok")
		m.recoveries.WithLabelValues(string(reason), "error")
	}
	for _, action := range application.EditActions {
		m.edits.WithLabelValues(action)
	}
	return m
}

// roomMetrics makes the waiting rooms' instruments.
func (m *metrics) roomMetrics() {
	m.joins = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "seckill_queue_joins_total",
		Help: "Users who joined a waiting room through this instance (joining again counts again), by when: early (before the sale began: shuffled) or late (in arrival order).",
	}, []string{"when"})
	m.joins.WithLabelValues("early")
	m.joins.WithLabelValues("late")
	m.admitted = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "seckill_queue_admitted_total",
		Help: "Users this instance's admission steps let in from a waiting room (each given a pass).",
	})
	m.passes = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "seckill_queue_passes_outstanding",
		Help: "Passes outstanding (given, not used, not expired) in the waiting rooms of the sales on, at this instance's last admission step.",
	})
	m.shuffles = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "seckill_queue_shuffle_seconds",
		Help:    "Time one shuffle of a waiting room took on this instance, from reading its early joiners to the order installed.",
		Buckets: prometheus.ExponentialBuckets(0.005, 2, 12),
	})
}

// joined counts one join of a waiting room.
func (m *metrics) joined(early bool) {
	m.joins.WithLabelValues(map[bool]string{true: "early", false: "late"}[early]).Inc()
}

// roomObserver records what the waiting rooms' loop does, and logs each shuffle.
func (m *metrics) roomObserver(log *zap.Logger) application.RoomObserver {
	return application.RoomObserver{
		Admitted:    func(_ domain.VoucherID, a ports.Admission) { m.admitted.Add(float64(len(a.Users))) },
		Outstanding: func(n int) { m.passes.Set(float64(n)) },
		Saved: func(v domain.VoucherID, entrants int) {
			log.Info("waiting room shuffle saved; installing", zap.Stringer("voucher", v), zap.Int("entrants", entrants))
			shuffleSaved()
		},
		Shuffled: func(v domain.VoucherID, entrants int, took time.Duration) {
			m.shuffles.Observe(took.Seconds())
			log.Info("waiting room shuffled: admission open", zap.Stringer("voucher", v), zap.Int("entrants", entrants), zap.Duration("took", took))
		},
	}
}

// webhookAttempt counts one attempt at a webhook delivery.
func (m *metrics) webhookAttempt(o application.WebhookOutcome) {
	m.webhooks.WithLabelValues(string(o)).Inc()
}

// challenge counts one challenge issued, or one proof verified or refused.
func (m *metrics) challenge(outcome string) {
	m.challenges.WithLabelValues(outcome).Inc()
}

// edited counts one edit of a voucher, once per kind of change it made.
func (m *metrics) edited(actions []string) {
	for _, a := range actions {
		m.edits.WithLabelValues(a).Inc()
	}
}

// recovered counts one recovery of a voucher's sale state.
func (m *metrics) recovered(reason application.RecoverReason, err error) {
	outcome := "ok"
	if err != nil {
		outcome = "error"
	}
	m.recoveries.WithLabelValues(string(reason), outcome).Inc()
}

// breaker records a breaker's state, then hands the change on to next.
func (m *metrics) breaker(next func(name, from, to string)) func(name, from, to string) {
	return func(name, from, to string) {
		open := 0.0
		if to == "open" {
			open = 1
		}
		m.breakerOpen.WithLabelValues(name).Set(open)
		next(name, from, to)
	}
}

// statementCounter is a bun query hook that counts the statements sent to the
// database in seckill_db_statements_total.
type statementCounter struct{ n prometheus.Counter }

var _ bun.QueryHook = statementCounter{}

// BeforeQuery does nothing.
func (c statementCounter) BeforeQuery(ctx context.Context, _ *bun.QueryEvent) context.Context {
	return ctx
}

// AfterQuery counts one statement.
func (c statementCounter) AfterQuery(context.Context, *bun.QueryEvent) { c.n.Inc() }

// fulfilled adds up what one FulfillOrder call did.
func (m *metrics) fulfilled(r application.FulfillReport) {
	m.persisted.Add(float64(r.Persisted))
	m.failed.Add(float64(r.Failed))
	m.deadLetters.Add(float64(r.DeadLettered))
}

// unitsReleased counts the units of an order put back on sale.
func (m *metrics) unitsReleased(o domain.Order) { m.released.Add(float64(o.Quantity)) }

// reconciled records the drift of one reconciliation (or one round of the periodic
// one), every kind reset first.
func (m *metrics) reconciled(reports []application.VoucherReconciliation) {
	sums := make(map[application.DriftKind]int)
	for _, r := range reports {
		for _, d := range r.Drifts {
			sums[d.Kind] += d.Count
		}
	}
	for _, kind := range application.DriftKinds {
		m.drift.WithLabelValues(string(kind)).Set(float64(sums[kind]))
	}
}

// backlogTimeout bounds the Redis calls of one scrape.
const backlogTimeout = time.Second

// httpMetrics registers what is read at scrape time — the fulfillment backlog (from
// the queue), the Redis and database connection pools — and returns the HTTP layer's
// instruments on the same registry.
func httpMetrics(m *metrics, client redis.UniversalClient, db *bun.DB, queue *redisstore.Queue, hooks *sqlstore.Webhooks,
	denied *application.DeniedUsers, stock *redisstore.Stock, log *zap.Logger) *httpapi.Metrics {
	backlog := newBacklogCollector(queue, log)
	m.reg.MustRegister(backlog, collectors.NewDBStatsCollector(db.DB, "seckill"), newWebhookCollector(hooks, log),
		newWaitlistCollector(redisstore.NewWaitlist(stock), log),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "seckill_waitlist_handoffs_total",
			Help: "Units this instance handed to the first on a voucher's waitlist as they came back (a cancel, an expiry, a failed reservation, add_units), before they could go back on sale.",
		}, func() float64 { return float64(stock.HandOffs()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "seckill_denied_users",
			Help: "Users on the deny list as this instance last loaded it (at start, every " + denyReload.String() + ", and at once when a change is announced).",
		}, func() float64 { return float64(denied.Len()) }))
	if pools, ok := client.(poolStater); ok {
		m.reg.MustRegister(newRedisPoolCollector(pools))
	}
	return httpapi.NewMetrics(m.reg)
}

// backlogCollector reads the queue's backlog once per scrape: the age of the oldest
// reservation not yet persisted and the count of those not yet acknowledged. A scrape
// that cannot reach Redis reports neither (rather than a misleading zero) and logs at
// debug level; the breaker's gauge says why.
type backlogCollector struct {
	queue   *redisstore.Queue
	log     *zap.Logger
	lag     *prometheus.Desc
	pending *prometheus.Desc
}

func newBacklogCollector(queue *redisstore.Queue, log *zap.Logger) *backlogCollector {
	return &backlogCollector{
		queue: queue,
		log:   log,
		lag: prometheus.NewDesc("seckill_fulfilment_lag_seconds",
			"Age of the oldest reservation not yet persisted (0 when none), all vouchers.", nil, nil),
		pending: prometheus.NewDesc("seckill_queue_pending",
			"Reservations not yet acknowledged by the fulfillment workers (pending or not yet delivered), all vouchers.", nil, nil),
	}
}

// Describe implements prometheus.Collector.
func (b *backlogCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- b.lag
	ch <- b.pending
}

// Collect implements prometheus.Collector.
func (b *backlogCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), backlogTimeout)
	defer cancel()
	bl, err := b.queue.Backlog(ctx)
	if err != nil {
		b.log.Debug("metrics: measure the fulfillment backlog", zap.Error(err))
		return
	}
	lag := 0.0
	if !bl.Oldest.IsZero() {
		lag = max(0, time.Since(bl.Oldest).Seconds())
	}
	ch <- prometheus.MustNewConstMetric(b.lag, prometheus.GaugeValue, lag)
	ch <- prometheus.MustNewConstMetric(b.pending, prometheus.GaugeValue, float64(bl.Unacked))
}

// poolStater is a go-redis client with a connection pool (a single-node or cluster
// client).
type poolStater interface {
	PoolStats() *redis.PoolStats
}

// redisPoolCollector exposes go-redis's pool statistics, read at each scrape.
type redisPoolCollector struct {
	pools                          poolStater
	hits, misses, timeouts, waits  *prometheus.Desc
	total, idle, stale, waitingFor *prometheus.Desc
}

func newRedisPoolCollector(pools poolStater) *redisPoolCollector {
	desc := func(name, help string) *prometheus.Desc {
		return prometheus.NewDesc("seckill_redis_pool_"+name, help, nil, nil)
	}
	return &redisPoolCollector{
		pools:      pools,
		hits:       desc("hits_total", "Times a free connection was found in the Redis pool."),
		misses:     desc("misses_total", "Times no free connection was found in the Redis pool."),
		timeouts:   desc("timeouts_total", "Times waiting for a Redis connection timed out."),
		waits:      desc("waits_total", "Times a caller waited for a Redis connection."),
		total:      desc("connections", "Connections in the Redis pool."),
		idle:       desc("idle_connections", "Idle connections in the Redis pool."),
		stale:      desc("stale_connections_total", "Stale connections removed from the Redis pool."),
		waitingFor: desc("pending_requests", "Callers waiting for a Redis connection now."),
	}
}

// Describe implements prometheus.Collector.
func (r *redisPoolCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{r.hits, r.misses, r.timeouts, r.waits, r.total, r.idle, r.stale, r.waitingFor} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (r *redisPoolCollector) Collect(ch chan<- prometheus.Metric) {
	s := r.pools.PoolStats()
	counter := func(d *prometheus.Desc, v uint32) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v))
	}
	gauge := func(d *prometheus.Desc, v uint32) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, float64(v))
	}
	counter(r.hits, s.Hits)
	counter(r.misses, s.Misses)
	counter(r.timeouts, s.Timeouts)
	counter(r.waits, s.WaitCount)
	counter(r.stale, s.StaleConns)
	gauge(r.total, s.TotalConns)
	gauge(r.idle, s.IdleConns)
	gauge(r.waitingFor, s.PendingRequests)
}

// metricsServer serves GET /metrics alone, for SECKILL_METRICS_ADDR.
func metricsServer(h http.Handler) *http.Server {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", h)
	return &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second, IdleTimeout: 2 * time.Minute}
}

// webhookCollector reads the webhook outbox's backlog once per scrape (one count by an
// index). A scrape that cannot reach the database reports nothing rather than a
// misleading zero.
type webhookCollector struct {
	hooks   *sqlstore.Webhooks
	log     *zap.Logger
	backlog *prometheus.Desc
}

func newWebhookCollector(hooks *sqlstore.Webhooks, log *zap.Logger) *webhookCollector {
	return &webhookCollector{hooks: hooks, log: log, backlog: prometheus.NewDesc("seckill_webhook_backlog",
		"Webhook deliveries still to be made (pending, or failed and to be retried), all instances: 0 with webhooks off.", nil, nil)}
}

// Describe implements prometheus.Collector.
func (w *webhookCollector) Describe(ch chan<- *prometheus.Desc) { ch <- w.backlog }

// Collect implements prometheus.Collector.
func (w *webhookCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), backlogTimeout)
	defer cancel()
	n, err := w.hooks.Backlog(ctx)
	if err != nil {
		w.log.Debug("metrics: measure the webhook backlog", zap.Error(err))
		return
	}
	ch <- prometheus.MustNewConstMetric(w.backlog, prometheus.GaugeValue, float64(n))
}

// drawn counts a draw carried out to its end.
func (m *metrics) drawn(entrants, winners int, took time.Duration) {
	m.draws.Inc()
	m.drawEntrants.Add(float64(entrants))
	m.drawWinners.Add(float64(winners))
	m.drawDuration.Observe(took.Seconds())
}

// waitlistCollector reads the users waiting on the waitlists of the vouchers on sale
// once per scrape; a scrape that cannot reach Redis reports nothing (the breaker's
// gauge says why).
type waitlistCollector struct {
	waitlist *redisstore.Waitlist
	log      *zap.Logger
	length   *prometheus.Desc
}

func newWaitlistCollector(w *redisstore.Waitlist, log *zap.Logger) *waitlistCollector {
	return &waitlistCollector{waitlist: w, log: log, length: prometheus.NewDesc("seckill_waitlist_length",
		"Users waiting on the waitlists of the vouchers on sale (and of those whose sale ended a moment ago), all instances.", nil, nil)}
}

// Describe implements prometheus.Collector.
func (w *waitlistCollector) Describe(ch chan<- *prometheus.Desc) { ch <- w.length }

// Collect implements prometheus.Collector.
func (w *waitlistCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), backlogTimeout)
	defer cancel()
	n, err := w.waitlist.Waiting(ctx)
	if err != nil {
		w.log.Debug("metrics: measure the waitlists", zap.Error(err))
		return
	}
	ch <- prometheus.MustNewConstMetric(w.length, prometheus.GaugeValue, float64(n))
}
