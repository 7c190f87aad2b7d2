package main

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/uptrace/bun"
	"go.uber.org/zap"

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

// drawn counts a draw carried out to its end.
func (m *metrics) drawn(entrants, winners int, took time.Duration) {
	m.draws.Inc()
	m.drawEntrants.Add(float64(entrants))
	m.drawWinners.Add(float64(winners))
	m.drawDuration.Observe(took.Seconds())
}
