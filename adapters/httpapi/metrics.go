package httpapi

import (
	"errors"
	"maps"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// GrabOutcomes are the values of seckill_grab_requests_total's outcome label: how a
// grab request was answered.
var GrabOutcomes = []string{
	"reserved", "sold_out", "already_purchased", "not_started", "ended", "paused",
	"rate_limited", "unavailable", "invalid", "not_found", "unauthorized", "denied",
	"queue_required", "challenge_required", "campaign_sold_out",
}

// unmatchedRoute is the route label of a request no route matched: the raw path would
// give every scanner's probe a series of its own.
const unmatchedRoute = "unmatched"

// Metrics are the HTTP layer's Prometheus instruments, and the registry that GET
// /metrics serves (with whatever else the caller registers on it).
type Metrics struct {
	reg      *prometheus.Registry
	grabs    *prometheus.CounterVec
	duration *prometheus.HistogramVec

	// outcomes holds the grab counter of each outcome, looked up once (read-only).
	outcomes map[string]prometheus.Counter
	// durations holds the duration series met so far, so that each request finds its
	// own without hashing its labels and formatting its status anew.
	durations seriesCache[durationSeries, prometheus.Observer]

	// The event streams': open now, events sent by kind, clients dropped as too slow,
	// streams refused at the limit.
	streamsOpen    prometheus.Gauge
	streamEvents   *prometheus.CounterVec
	streamsDropped prometheus.Counter
	streamsRefused prometheus.Counter

	// powRaise is the bits the last challenge issued here added to its voucher's
	// pow_difficulty for the load.
	powRaise prometheus.Gauge
}

// durationSeries names one series of the duration histogram.
type durationSeries struct {
	route, method string
	status        int
}

// NewMetrics registers the HTTP instruments on reg and returns them: the count of
// grab requests by outcome (each outcome exposed from the start, at zero) and the
// request duration by route pattern, method and status code. It panics if they are
// already registered on reg.
func NewMetrics(reg *prometheus.Registry) *Metrics {
	m := &Metrics{
		reg: reg,
		grabs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "seckill_grab_requests_total",
			Help: "Grab requests answered, by outcome (reserved, sold_out, already_purchased, not_started, ended, paused, rate_limited, unavailable, invalid, not_found, unauthorized, denied, queue_required, challenge_required, campaign_sold_out).",
		}, []string{"outcome"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "seckill_http_request_duration_seconds",
			Help:    "Time to answer an HTTP request, by route pattern, method and status code.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5},
		}, []string{"route", "method", "code"}),
	}
	m.streamsOpen = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "seckill_streams_open",
		Help: "Event streams (server-sent events) open on this instance.",
	})
	m.streamEvents = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "seckill_stream_events_total",
		Help: "Events sent on the event streams, by kind (order, voucher).",
	}, []string{"kind"})
	m.streamsDropped = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "seckill_streams_dropped_total",
		Help: "Event streams ended because their client did not keep up (its buffer was full, or a write outlasted its timeout); the client reconnects.",
	})
	m.streamsRefused = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "seckill_streams_refused_total",
		Help: "Event streams refused because SECKILL_MAX_STREAMS were open on this instance (answered 200 with only a retry: field, so the client reconnects later).",
	})
	m.powRaise = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "seckill_pow_difficulty_raise",
		Help: "Bits the last proof-of-work challenge issued on this instance asked for above its voucher's pow_difficulty: 2 while more than 80% of the grab door's limit (SECKILL_MAX_INFLIGHT, adapted) was in flight, else 0.",
	})
	reg.MustRegister(m.grabs, m.duration, m.streamsOpen, m.streamEvents, m.streamsDropped, m.streamsRefused, m.powRaise)
	for _, kind := range []string{eventOrder, eventVoucher} {
		m.streamEvents.WithLabelValues(kind)
	}
	m.outcomes = make(map[string]prometheus.Counter, len(GrabOutcomes))
	for _, o := range GrabOutcomes {
		m.outcomes[o] = m.grabs.WithLabelValues(o)
	}
	return m
}

// watchDoor exposes the grab door's current bound on grabs in flight (Admission.Limit)
// as seckill_grab_inflight_limit, read at each scrape. A server calls it once, for its
// door.
func (m *Metrics) watchDoor(door *Admission) {
	m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "seckill_grab_inflight_limit",
		Help: "The grab door's bound on grabs in flight on this instance: SECKILL_MAX_INFLIGHT, lower while it has backed off because grabs took longer than half SECKILL_REQUEST_TIMEOUT or were answered unavailable (0: no bound).",
	}, func() float64 { return float64(door.Limit()) }))
}

// Registry returns the registry /metrics serves.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Handler serves the registry in Prometheus' exposition formats.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

// knownRoutes returns the route patterns of e, for the route label. Of the request
// durations only the grab's success is exposed from the start, at zero (a sale's
// dashboard plots its rate); every other series appears when a request of it is
// answered, so the exposition holds what occurred.
func (m *Metrics) knownRoutes(e *echo.Echo) map[string]bool {
	known := make(map[string]bool)
	for _, r := range e.Routes() {
		if r.Method != echo.RouteNotFound {
			known[r.Path] = true
		}
	}
	m.duration.WithLabelValues(grabRoute, http.MethodPost, strconv.Itoa(http.StatusAccepted))
	return known
}

// observe times every request by its route pattern and logs it (see requestLogger).
// It runs outermost: an error a handler returns is turned into its response here, so
// the status recorded is the one the client got.
func (m *Metrics) observe(known func() map[string]bool, log *requestLogger) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			start := time.Now()
			err := next(c)
			if err != nil && !c.Response().Committed {
				c.Error(err)
			}
			latency := time.Since(start)
			route := c.Path()
			if !known()[route] {
				route = unmatchedRoute
			}
			status := c.Response().Status
			series := durationSeries{route: route, method: methodLabel(c.Request().Method), status: status}
			m.durations.get(series, func() prometheus.Observer {
				return m.duration.WithLabelValues(series.route, series.method, strconv.Itoa(series.status))
			}).Observe(latency.Seconds())
			log.write(c, route, status, latency)
			if errors.Is(err, errStreamBroken) {
				// Recorded; now cut the answer off, so the client does not take what
				// was sent for the whole of it. net/http stays quiet about this panic.
				panic(http.ErrAbortHandler)
			}
			return err
		}
	}
}

// methodLabel keeps the method label to the methods HTTP defines.
func methodLabel(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodOptions, http.MethodConnect, http.MethodTrace:
		return m
	}
	return "other"
}

// countGrabs counts each grab request by its outcome. It runs first on the grab route,
// so it sees the refusals of authentication and admission too.
func (m *Metrics) countGrabs(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		err := next(c)
		m.outcomes[grabOutcome(c, err)].Inc()
		return err
	}
}

// grabOutcome classifies a grab's answer: by the error, as the error handler will
// answer it, or by the status already written (the admission gate answers its 503
// itself).
func grabOutcome(c echo.Context, err error) string {
	status := c.Response().Status
	code := ""
	if err != nil {
		var d errorDetail
		status, d = classify(err)
		code = d.Code
	}
	switch code {
	case "sold_out", "already_purchased", "not_started", "ended", "paused", "rate_limited", "unavailable", "not_found", "unauthorized",
		"denied", "queue_required", "challenge_required", "campaign_sold_out":
		return code
	case "invalid_request":
		return "invalid"
	case "forbidden":
		return "unauthorized"
	}
	switch {
	case status == http.StatusAccepted:
		return "reserved"
	case status == http.StatusTooManyRequests:
		return "rate_limited"
	case status >= 500:
		// The admission gate's 503, or a failure the client is told to retry.
		return "unavailable"
	}
	return "invalid"
}

// slowRequest is the latency from which a request is always logged.
const slowRequest = 500 * time.Millisecond

// requestLogger writes one line per request. Errors (5xx) and slow requests are
// always logged; the rest, at the info level, through one zap sampler per route and
// status: in each second the first few lines of each are written and then one in
// every hundred, so a sale of a million grabs does not write a million lines while
// every kind of answer still shows. The metrics carry the exact rates.
type requestLogger struct {
	log     *zap.Logger
	sampled seriesCache[sampledLines, *zap.Logger]
}

// sampledLines are the request log lines of one route and status.
type sampledLines struct {
	route  string
	status int
}

// sampleFirst and sampleThereafter tune the sampler: per route and status and second,
// the first sampleFirst lines, then every sampleThereafter-th.
const (
	sampleFirst      = 10
	sampleThereafter = 100
)

func (l *requestLogger) write(c echo.Context, route string, status int, latency time.Duration) {
	var ce *zapcore.CheckedEntry
	switch {
	case status >= 500:
		ce = l.log.Check(zapcore.WarnLevel, "request")
	case latency >= slowRequest && route != orderEventsRoute && route != voucherEventsRoute:
		// An event stream lasts as long as its client listens: its length is no
		// slowness, and its end goes through the sampler.
		ce = l.log.Check(zapcore.InfoLevel, "request")
	default:
		// Sampled out, the line costs nothing more: its fields are not even made.
		ce = l.sampler(route, status).Check(zapcore.InfoLevel, "request")
	}
	if ce == nil {
		return
	}
	ce.Write(
		zap.String("method", c.Request().Method),
		zap.String("path", c.Request().URL.Path),
		zap.String("route", route),
		zap.Int("status", status),
		zap.Duration("latency", latency),
		zap.String("request_id", c.Response().Header().Get(echo.HeaderXRequestID)),
		zap.String("client", clientIP(c)),
		zap.Bool("slow", latency >= slowRequest),
	)
}

// sampler returns the sampled logger of one route and status. Routes are patterns and
// statuses few, so the loggers are bounded.
func (l *requestLogger) sampler(route string, status int) *zap.Logger {
	return l.sampled.get(sampledLines{route: route, status: status}, func() *zap.Logger {
		return l.log.WithOptions(zap.WrapCore(func(core zapcore.Core) zapcore.Core {
			return zapcore.NewSamplerWithOptions(core, time.Second, sampleFirst, sampleThereafter)
		}))
	})
}

// seriesCache maps a few keys (route patterns, methods, statuses: a bounded set) to
// what each request with that key records into. Every request reads it, without a
// lock or an allocation; a key met for the first time copies the map.
type seriesCache[K comparable, V any] struct {
	m  atomic.Pointer[map[K]V]
	mu sync.Mutex // serializes the copies
}

// get returns k's value, made by newValue the first time k is met.
func (s *seriesCache[K, V]) get(k K, newValue func() V) V {
	if m := s.m.Load(); m != nil {
		if v, ok := (*m)[k]; ok {
			return v
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var m map[K]V
	if old := s.m.Load(); old != nil {
		if v, ok := (*old)[k]; ok {
			return v
		}
		m = maps.Clone(*old)
	} else {
		m = make(map[K]V)
	}
	v := newValue()
	m[k] = v
	s.m.Store(&m)
	return v
}
