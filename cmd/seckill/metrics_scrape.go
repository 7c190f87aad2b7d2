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
)

// What /metrics reads at scrape time: the backlogs, the pools and the waitlists, and
// the listener of SECKILL_METRICS_ADDR.

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
