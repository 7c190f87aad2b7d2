// Package httpapi is the REST adapter: the HTTP contract of the README on Echo. Handlers
// decode and validate a request, call one use case and encode its result; every error
// goes to one handler that maps it to the contract's status and code.
package httpapi

import (
	"context"
	"net"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"
	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/contrib/instrumentation/github.com/labstack/echo/otelecho"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"

	"github.com/seckill/seckill/application"
	"github.com/seckill/seckill/ports"
)

// Options tune the HTTP layer.
type Options struct {
	// BodyLimit caps a request body, in Echo's notation ("4K").
	BodyLimit string
	// RequestTimeout bounds each request's context; a handler still waiting when it
	// lapses answers 503 unavailable. A grab's context has no deadline: its body must
	// arrive within RequestTimeout, and the stock's own bound on waiting (see
	// redisstore.Options.MaxWait) ends its wait.
	RequestTimeout time.Duration

	// MaxInflight bounds the grab requests this instance works on at once; beyond it a
	// grab answers 503 unavailable with Retry-After at once (see Admission). Under it
	// the bound adapts: it backs off while grabs take longer than half of
	// RequestTimeout. 0 turns it off.
	MaxInflight int
	// GrabRate bounds the grab requests this instance admits a second, GrabBurst at
	// once (one second's worth when 0); beyond it a grab answers 503 unavailable with
	// Retry-After. 0 turns it off.
	GrabRate  float64
	GrabBurst int
	// IPLimit bounds the requests a second each client address may make to the
	// unauthenticated voucher reads (GET /api/v1/vouchers and /api/v1/vouchers/{id}),
	// IPBurst at once (IPLimit when 0), counted by IPLimiter across all instances;
	// beyond it they answer 429 rate_limited with Retry-After. 0 turns it off; when
	// it is set, IPLimiter must be too. The client is the connection's address unless
	// the Echo instance is given an IPExtractor (see limitByIP).
	IPLimit   int
	IPBurst   int
	IPLimiter Limiter
	// Idempotency keeps the answers of writes sent with an Idempotency-Key header
	// (creating a voucher, paying, cancelling); nil ignores the header.
	Idempotency ports.Idempotency
	// TrustedProxies are the address ranges of the proxies and load balancers in
	// front of the service. A request whose connection comes from one of them is
	// counted, for IPLimit and in the request log, against the right-most address of
	// X-Forwarded-For that is not itself trusted; any other request against its
	// connection's address, whatever headers it sends. Empty trusts no one.
	TrustedProxies []*net.IPNet

	// Metrics are the instruments the API records into, and the registry GET /metrics
	// serves; nil makes a fresh registry with only the API's own metrics.
	Metrics *Metrics
	// MetricsElsewhere leaves GET /metrics off the API: the registry is served on a
	// listener of its own.
	MetricsElsewhere bool
	// TracerProvider, when set, traces every request (a span per request, named by
	// its route, continuing the caller's W3C trace context); nil traces nothing.
	TracerProvider trace.TracerProvider

	// Fulfillment reports whether fulfillment is stalled (the oldest reservation not yet
	// persisted waits too long), shown on /readyz as "fulfilment": "stalled" or "ok"
	// without making it fail: the API can still serve. Nil, or an error, leaves it out.
	Fulfillment func(context.Context) (stalled bool, err error)
}

// UseCases are the application operations the API exposes.
type UseCases struct {
	CreateVoucher   *application.CreateVoucher
	GetVoucher      *application.GetVoucher
	ListVouchers    *application.ListVouchers
	GrabVoucher     *application.GrabVoucher
	GetOrder        *application.GetOrder
	ListOrders      *application.ListOrders
	GetVoucherStats *application.GetVoucherStats
	PayOrder        *application.PayOrder
	CancelOrder     *application.CancelOrder
	PauseSale       *application.PauseSale
}

// Check is one dependency /readyz asks about.
type Check struct {
	Name string
	Ping func(context.Context) error
}

// New returns the API as an Echo instance, ready to serve.
func New(opts Options, uc UseCases, tokens *Tokens, checks []Check, log *zap.Logger) *echo.Echo {
	e := echo.New()
	e.HideBanner = true
	e.HidePort = true
	e.HTTPErrorHandler = errorHandler(log)
	if len(opts.TrustedProxies) > 0 {
		e.IPExtractor = forwardedFor(opts.TrustedProxies)
	}
	metrics := opts.Metrics
	if metrics == nil {
		metrics = NewMetrics(prometheus.NewRegistry())
	}
	var routes map[string]bool // filled once every route is added, before any request

	e.Use(
		metrics.observe(func() map[string]bool { return routes }, &requestLogger{log: log}),
		middleware.RecoverWithConfig(middleware.RecoverConfig{
			LogErrorFunc: func(c echo.Context, err error, stack []byte) error {
				log.Error("panic", zap.Error(err), zap.ByteString("stack", stack), zap.String("path", c.Path()))
				return err
			},
		}),
		middleware.RequestID(),
		middleware.BodyLimit(opts.BodyLimit),
		// The grab's own deadline is kept by the door and the stock's queue instead
		// (AdmissionOptions.BodyTimeout, redisstore.Options.MaxWait): a timer for each
		// of a burst's thousands of grabs is a cost the hot path need not pay.
		middleware.ContextTimeoutWithConfig(middleware.ContextTimeoutConfig{
			Timeout: opts.RequestTimeout,
			Skipper: func(c echo.Context) bool { return c.Path() == grabRoute },
		}),
		strictQuery,
	)

	if opts.TracerProvider != nil {
		e.Use(otelecho.Middleware("seckill", otelecho.WithTracerProvider(opts.TracerProvider)))
	}

	h := handlers{uc: uc, log: log}
	auth := authenticate(tokens)
	// The grab's gate runs after authentication (an anonymous flood is turned away
	// without taking a slot) and before the handler; the reads anyone may call are
	// limited per client address. Health checks are never limited.
	admission := NewAdmission(AdmissionOptions{
		MaxInflight: opts.MaxInflight, Target: opts.RequestTimeout / 2, BodyTimeout: opts.RequestTimeout,
		PerSecond: opts.GrabRate, Burst: opts.GrabBurst,
	})
	grab := []echo.MiddlewareFunc{metrics.countGrabs, auth, admission.Middleware()}
	var public []echo.MiddlewareFunc
	if opts.IPLimit > 0 {
		if opts.IPLimiter == nil {
			panic("httpapi: Options.IPLimit is set without Options.IPLimiter")
		}
		public = append(public, limitByIP(opts.IPLimiter, opts.IPLimit, opts.IPBurst, log))
	}
	api := e.Group("/api/v1")
	// Writes a client may retry safely with an Idempotency-Key.
	once := func(m ...echo.MiddlewareFunc) []echo.MiddlewareFunc {
		if opts.Idempotency != nil {
			m = append(m, idempotent(opts.Idempotency))
		}
		return m
	}
	api.POST("/vouchers", h.createVoucher, once(auth, requireAdmin)...)
	api.GET("/vouchers", h.listVouchers, public...)
	api.GET("/vouchers/:id", h.getVoucher, public...)
	e.POST(grabRoute, h.grab, grab...)
	api.GET("/vouchers/:id/stats", h.voucherStats, auth, requireAdmin)
	api.POST("/vouchers/:id/pause", h.pauseSale(true), auth, requireAdmin)
	api.POST("/vouchers/:id/resume", h.pauseSale(false), auth, requireAdmin)
	api.GET("/orders", h.listOrders, auth)
	api.GET("/orders/:id", h.getOrder, auth)
	api.POST("/orders/:id/pay", h.payOrder, once(auth)...)
	api.POST("/orders/:id/cancel", h.cancelOrder, once(auth)...)

	e.GET("/healthz", func(c echo.Context) error {
		return c.JSON(http.StatusOK, map[string]string{"status": "ok"})
	})
	e.GET("/readyz", readiness(checks, opts.Fulfillment))
	e.GET("/openapi.json", openAPIDocument)
	e.GET("/ui", uiRedirect)
	e.GET("/ui/", uiPage)
	e.GET("/ui/*", uiPage)
	if !opts.MetricsElsewhere {
		e.GET("/metrics", echo.WrapHandler(metrics.Handler()))
	}
	routes = metrics.knownRoutes(e)
	return e
}

// grabRoute is the grab's route: the hot path.
const grabRoute = "/api/v1/vouchers/:id/grab"

// readiness answers 200 when every dependency answers within a second, 503 otherwise,
// with each dependency's state in "checks" and, when fulfillment can tell, whether it is
// stalled ("fulfilment": "ok" or "stalled"; stalled alone still answers 200).
func readiness(checks []Check, fulfillment func(context.Context) (bool, error)) echo.HandlerFunc {
	return func(c echo.Context) error {
		ctx, cancel := context.WithTimeout(c.Request().Context(), time.Second)
		defer cancel()
		states := make(map[string]string, len(checks))
		ready := true
		for _, ch := range checks {
			if err := ch.Ping(ctx); err != nil {
				states[ch.Name] = "down"
				ready = false
				continue
			}
			states[ch.Name] = "ok"
		}
		body := map[string]any{"checks": states}
		if fulfillment != nil {
			if stalled, err := fulfillment(ctx); err == nil {
				// The key is the HTTP contract's (its spelling included).
				body["fulfilment"] = map[bool]string{false: "ok", true: "stalled"}[stalled]
			}
		}
		if !ready {
			c.Response().Header().Set("Retry-After", retryAfterSeconds)
			body["error"] = errorDetail{Code: "unavailable", Message: "a dependency is down", RequestID: requestID(c)}
			return c.JSON(http.StatusServiceUnavailable, body)
		}
		body["status"] = "ok"
		return c.JSON(http.StatusOK, body)
	}
}
