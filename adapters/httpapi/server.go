// Package httpapi is the REST adapter: the HTTP contract (docs/api.md) on Echo. Handlers
// decode and validate a request, call one use case and encode its result; every error
// goes to one handler that maps it to the contract's status and code.
package httpapi

import (
	"context"
	"net"
	"net/http"
	"slices"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"
	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/contrib/instrumentation/github.com/labstack/echo/otelecho"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"

	"github.com/seckill/seckill/application"
	"github.com/seckill/seckill/domain"
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
	// unauthenticated reads of vouchers and campaigns (GET /api/v1/vouchers,
	// /api/v1/vouchers/{id}, /api/v1/campaigns and /api/v1/campaigns/{id}), IPBurst
	// at once (IPLimit when 0), counted by IPLimiter across all instances; beyond it
	// they answer 429 rate_limited with Retry-After. 0 turns it off; when
	// it is set, IPLimiter must be too. The client is the connection's address unless
	// the Echo instance is given an IPExtractor (see limitByIP).
	IPLimit   int
	IPBurst   int
	IPLimiter Limiter
	// Idempotency keeps the answers of writes sent with an Idempotency-Key header
	// (creating or editing a voucher, paying, cancelling); nil ignores the header.
	Idempotency ports.Idempotency
	// Clock is the sale's clock: GET /api/v1/time tells it (required for it), and it
	// dates the Idempotency-Key claims and their leases, so the instances that take
	// keys over from each other agree on when a lease passed whatever their hosts'
	// clocks say (the host's clock when nil).
	Clock ports.Clock
	// PaymentWindow is how long an order may await payment: the unpaid orders answered
	// say when they expire by it ("expires_at").
	PaymentWindow domain.PaymentWindow
	// TrustedProxies are the address ranges of the proxies and load balancers in
	// front of the service. A request whose connection comes from one of them is
	// counted, for IPLimit and in the request log, against the right-most address of
	// X-Forwarded-For that is not itself trusted; any other request against its
	// connection's address, whatever headers it sends. Empty trusts no one.
	TrustedProxies []*net.IPNet
	// CORSOrigins are the origins (scheme://host[:port], exact) whose pages a browser
	// lets call the API: a listed Origin gets Access-Control-Allow-Origin with its own
	// value, preflights are answered, no credentials. Empty: no CORS headers at all.
	CORSOrigins []string
	// PublicMaxAge is how many seconds any cache may reuse a public read (the voucher
	// list, one voucher, the campaign list, one campaign) without asking again; 0 or
	// less: revalidate every time.
	PublicMaxAge int

	// Metrics are the instruments the API records into, and the registry GET /metrics
	// serves; nil makes a fresh registry with only the API's own metrics.
	Metrics *Metrics
	// MetricsElsewhere leaves GET /metrics off the API: the registry is served on a
	// listener of its own.
	MetricsElsewhere bool
	// TracerProvider, when set, traces every request (a span per request, named by
	// its route, continuing the caller's W3C trace context); nil traces nothing.
	TracerProvider trace.TracerProvider

	// Streams holds the event streams (GET /api/v1/orders/{id}/events and
	// /api/v1/vouchers/{id}/events) and issues their tickets; New binds it to this
	// API. Nil answers those routes 503 unavailable.
	Streams *Streams

	// Fulfillment reports whether fulfillment is stalled (the oldest reservation not yet
	// persisted waits too long), shown on /readyz as "fulfilment": "stalled" or "ok"
	// without making it fail: the API can still serve. Nil, or an error, leaves it out.
	Fulfillment func(context.Context) (stalled bool, err error)
}

// UseCases are the application operations the API exposes; each is required, but
// where its comment says otherwise.
type UseCases struct {
	// CreateVoucher creates a campaign's vouchers too ("campaign_id") once given the
	// campaigns (application.CreateVoucher.WithCampaigns); without them it knows no
	// campaign (400 invalid_request).
	CreateVoucher       *application.CreateVoucher
	GetVoucher          *application.GetVoucher
	ListVouchers        *application.ListVouchers
	GrabVoucher         *application.GrabVoucher
	GetOrder            *application.GetOrder
	ListOrders          *application.ListOrders
	GetVoucherStats     *application.GetVoucherStats
	PayOrder            *application.PayOrder
	CancelOrder         *application.CancelOrder
	PauseSale           *application.PauseSale
	EditVoucher         *application.EditVoucher
	ListAudit           *application.ListAudit
	ListVoucherOrders   *application.ListVoucherOrders
	ExportVoucherOrders *application.ExportVoucherOrders
	ListDeliveries      *application.ListDeliveries
	RetryDelivery       *application.RetryDelivery
	DenyUser            *application.DenyUser
	AllowUser           *application.AllowUser
	ListDenied          *application.ListDenied
	JoinWaitlist        *application.JoinWaitlist
	WaitlistPosition    *application.WaitlistPosition
	LeaveWaitlist       *application.LeaveWaitlist
	EnterDraw           *application.EnterDraw
	GetDraw             *application.GetDraw
	// IssueChallenge hands out the challenges a voucher with one asks proofs of (the
	// BuyerGate behind the grab, the queue's join and the draw's entry checks them);
	// nil answers every challenge 404.
	IssueChallenge *application.IssueChallenge
	// IssueStreamTicket hands out the tickets a browser opens an event stream with.
	IssueStreamTicket *application.IssueStreamTicket
	JoinQueue         *application.JoinQueue
	QueueStatus       *application.QueueStatus
	QueueEntrants     *application.QueueEntrants
	GetQueueStats     *application.GetQueueStats
	// The campaigns' routes (POST, GET /api/v1/campaigns, GET, PATCH …/{id},
	// GET …/{id}/stats).
	CreateCampaign   *application.CreateCampaign
	GetCampaign      *application.GetCampaign
	ListCampaigns    *application.ListCampaigns
	UpdateCampaign   *application.UpdateCampaign
	GetCampaignStats *application.GetCampaignStats
}

// Check is one dependency /readyz asks about.
type Check struct {
	Name string
	Ping func(context.Context) error
}

// globalMiddleware are the middleware every request passes through, in order; routes
// tells the metrics which paths are routes.
func globalMiddleware(opts Options, metrics *Metrics, routes func() map[string]bool, log *zap.Logger) []echo.MiddlewareFunc {
	global := []echo.MiddlewareFunc{
		metrics.observe(routes, &requestLogger{log: log}),
		middleware.RecoverWithConfig(middleware.RecoverConfig{
			LogErrorFunc: func(c echo.Context, err error, stack []byte) error {
				log.Error("panic", zap.Error(err), zap.ByteString("stack", stack), zap.String("path", c.Path()))
				return err
			},
		}),
		assignRequestID,
	}
	if len(opts.CORSOrigins) > 0 {
		global = append(global, crossOrigin(opts.CORSOrigins))
	}
	global = append(global,
		middleware.BodyLimit(opts.BodyLimit),
		// The grab's own deadline is kept by the door and the stock's queue instead
		// (AdmissionOptions.BodyTimeout, redisstore.Options.MaxWait): a timer for each
		// of a burst's thousands of grabs is a cost the hot path need not pay. An export
		// streams for as long as its orders take; each of its reads has a deadline of
		// its own (application.ExportVoucherOrders).
		middleware.ContextTimeoutWithConfig(middleware.ContextTimeoutConfig{
			Timeout: opts.RequestTimeout,
			Skipper: func(c echo.Context) bool {
				return c.Path() == grabRoute || c.Path() == voucherOrdersRoute && wantsCSV(c.Request()) ||
					c.Path() == orderEventsRoute || c.Path() == voucherEventsRoute || c.Path() == queueEventsRoute ||
					c.Path() == campaignQueueEventsRoute
			},
		}),
		strictQuery,
	)
	if opts.TracerProvider != nil {
		global = append(global, otelecho.Middleware("seckill", otelecho.WithTracerProvider(opts.TracerProvider)))
	}
	return global
}

// New returns the API as an Echo instance, ready to serve. Its middleware are all
// given here: one added later with Use would not run.
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

	// Echo wraps a handler in its middleware anew for every request it serves (a
	// closure per middleware, per request); here every chain is built once. The
	// middleware every request passes through wrap a handler that runs whatever the
	// router found (the route's own chain, or Echo's not-found and method-not-allowed
	// answers), and each route's handler is wrapped in its own middleware when it is
	// added (see route).
	global := globalMiddleware(opts, metrics, func() map[string]bool { return routes }, log)
	everyRequest := chain(func(c echo.Context) error { return c.Handler()(c) }, global...)
	// Echo hands this middleware the handler the router found, which everyRequest
	// runs itself.
	e.Use(func(echo.HandlerFunc) echo.HandlerFunc { return everyRequest })

	// The grab's gate runs after authentication (an anonymous flood is turned away
	// without taking a slot) and before the handler; the reads anyone may call are
	// limited per client address. Health checks are never limited.
	admission := NewAdmission(AdmissionOptions{
		MaxInflight: opts.MaxInflight, Target: opts.RequestTimeout / 2, BodyTimeout: opts.RequestTimeout,
		PerSecond: opts.GrabRate, Burst: opts.GrabBurst,
	})
	metrics.watchDoor(admission)
	h := handlers{uc: uc, log: log, clock: opts.Clock, payment: opts.PaymentWindow, streams: opts.Streams,
		door: admission, metrics: metrics}
	auth := authenticate(tokens)
	grab := []echo.MiddlewareFunc{metrics.countGrabs, auth, admission.Middleware()}
	var public []echo.MiddlewareFunc
	if opts.IPLimit > 0 {
		if opts.IPLimiter == nil {
			panic("httpapi: Options.IPLimit is set without Options.IPLimiter")
		}
		public = append(public, limitByIP(opts.IPLimiter, opts.IPLimit, opts.IPBurst, log))
	}
	// Writes a client may retry safely with an Idempotency-Key.
	once := func(m ...echo.MiddlewareFunc) []echo.MiddlewareFunc {
		if opts.Idempotency != nil {
			m = append(m, idempotent(opts.Idempotency, opts.Clock, IdempotencyLease(opts.RequestTimeout), log))
		}
		return m
	}
	// Every GET route answers HEAD too (RFC 9110), by the same chain: net/http sends
	// a HEAD's headers and drops its body. A GET's answer of a kilobyte or more is
	// gzipped for a client that accepts it — but for the event streams (a stream is
	// written event by event), the orders' CSV export (streamed as it is read) and
	// /metrics (compressed by its own handler).
	route := func(method, path string, h echo.HandlerFunc, m ...echo.MiddlewareFunc) {
		if method == http.MethodGet && !streamed(path) {
			m = append([]echo.MiddlewareFunc{compressed}, m...)
		}
		handler := chain(h, m...)
		e.Add(method, path, handler)
		if method == http.MethodGet {
			e.Add(http.MethodHead, path, handler)
		}
	}
	// The sale's hottest reads: any cache may keep them a moment (PublicMaxAge).
	publicRead := append(slices.Clone(public), cached(publicCache(opts.PublicMaxAge)))
	voucherRoutes(route, h, once(auth, requireAdmin), publicRead, grab, auth)
	campaignRoutes(route, h, once(auth, requireAdmin), publicRead, auth)
	adminRoutes(route, h, auth)
	denyListRoutes(route, h, once(auth, requireAdmin), auth)
	orderRoutes(route, h, once(auth), auth)
	waitlistRoutes(route, h, once(auth), auth)
	drawRoutes(route, h, once(auth), public)
	streamRoutes(route, h, opts.Streams, metrics, auth, authenticateStream(tokens, opts.Streams), public)
	queueRoutes(route, h, auth, authenticateStream(tokens, opts.Streams), public)

	operationRoutes(route, checks, opts, metrics, h.tellTime)
	routes = metrics.knownRoutes(e)
	return e
}

// voucherRoutes adds a voucher's routes through route: its writes behind adminOnce
// (an admin, Idempotency-Key kept), its public reads behind publicRead, the grab
// behind grab, the challenge behind auth, the stats behind auth and an admin.
func voucherRoutes(route func(method, path string, h echo.HandlerFunc, m ...echo.MiddlewareFunc), h handlers,
	adminOnce, publicRead, grab []echo.MiddlewareFunc, auth echo.MiddlewareFunc) {
	const vouchers = "/api/v1/vouchers"
	route(http.MethodPost, vouchers, h.createVoucher, adminOnce...)
	route(http.MethodGet, vouchers, h.listVouchers, publicRead...)
	route(http.MethodGet, vouchers+"/:id", h.getVoucher, publicRead...)
	route(http.MethodPost, grabRoute, h.grab, grab...)
	route(http.MethodGet, challengeRoute, h.issueChallenge, auth)
	route(http.MethodGet, vouchers+"/:id/stats", h.voucherStats, auth, requireAdmin)
	route(http.MethodPost, vouchers+"/:id/pause", h.pauseSale(true), auth, requireAdmin)
	route(http.MethodPost, vouchers+"/:id/resume", h.pauseSale(false), auth, requireAdmin)
	route(http.MethodPatch, vouchers+"/:id", h.editVoucher, adminOnce...)
}

// campaignRoutes adds a campaign's routes through route: its writes behind adminOnce
// (an admin, Idempotency-Key kept), its public reads behind publicRead, the stats
// behind auth and an admin.
func campaignRoutes(route func(method, path string, h echo.HandlerFunc, m ...echo.MiddlewareFunc), h handlers,
	adminOnce, publicRead []echo.MiddlewareFunc, auth echo.MiddlewareFunc) {
	const campaigns = campaignsPath
	route(http.MethodPost, campaigns, h.createCampaign, adminOnce...)
	route(http.MethodGet, campaigns, h.listCampaigns, publicRead...)
	route(http.MethodGet, campaigns+"/:id", h.getCampaign, publicRead...)
	route(http.MethodPatch, campaigns+"/:id", h.editCampaign, adminOnce...)
	route(http.MethodGet, campaigns+"/:id/stats", h.campaignStats, auth, requireAdmin)
}

// adminRoutes adds, through route, the admin's routes of no voucher's or campaign's
// own, each behind auth and an admin: the audit log, the webhook deliveries and a
// delivery's retry, and a voucher's orders.
func adminRoutes(route func(method, path string, h echo.HandlerFunc, m ...echo.MiddlewareFunc), h handlers,
	auth echo.MiddlewareFunc) {
	const api = "/api/v1"
	route(http.MethodGet, api+"/audit", h.listAudit, auth, requireAdmin)
	route(http.MethodGet, api+"/webhooks/deliveries", h.listDeliveries, auth, requireAdmin)
	route(http.MethodPost, api+"/webhooks/deliveries/:id/retry", h.retryDelivery, auth, requireAdmin)
	route(http.MethodGet, voucherOrdersRoute, h.voucherOrders, auth, requireAdmin)
}

// orderRoutes adds a user's order routes through route: the reads behind auth, the
// payment and the cancel behind userOnce (Idempotency-Key kept).
func orderRoutes(route func(method, path string, h echo.HandlerFunc, m ...echo.MiddlewareFunc), h handlers,
	userOnce []echo.MiddlewareFunc, auth echo.MiddlewareFunc) {
	route(http.MethodGet, "/api/v1/orders", h.listOrders, auth)
	route(http.MethodGet, "/api/v1/orders/:id", h.getOrder, auth)
	route(http.MethodPost, "/api/v1/orders/:id/pay", h.payOrder, userOnce...)
	route(http.MethodPost, "/api/v1/orders/:id/cancel", h.cancelOrder, userOnce...)
}

// drawRoutes adds the routes of a draw through route, a voucher's and a campaign's
// alike: the entry behind userOnce (a user, Idempotency-Key kept), the draw's public
// reads behind public.
func drawRoutes(route func(method, path string, h echo.HandlerFunc, m ...echo.MiddlewareFunc), h handlers,
	userOnce []echo.MiddlewareFunc, public []echo.MiddlewareFunc) {
	for _, base := range []string{"/api/v1/vouchers/:id", campaignsPath + "/:id"} {
		route(http.MethodPost, base+entriesPath, h.enterDraw, userOnce...)
		route(http.MethodGet, base+drawPath, h.getDraw, public...)
		route(http.MethodGet, base+drawEntrantsPath, h.drawEntrants, public...)
	}
}

// denyListRoutes adds the deny list's routes through route: the writes behind
// adminOnce (an admin, Idempotency-Key kept), the read behind auth and an admin.
func denyListRoutes(route func(method, path string, h echo.HandlerFunc, m ...echo.MiddlewareFunc), h handlers,
	adminOnce []echo.MiddlewareFunc, auth echo.MiddlewareFunc) {
	route(http.MethodPut, "/api/v1/denylist/:user_id", h.denyUser, adminOnce...)
	route(http.MethodDelete, "/api/v1/denylist/:user_id", h.allowUser, adminOnce...)
	route(http.MethodGet, "/api/v1/denylist", h.listDenied, auth, requireAdmin)
}

// streamRoutes binds streams (when there are) to the API's voucher reads and
// instruments, and adds the event streams' routes and their tickets', through route.
func streamRoutes(route func(method, path string, h echo.HandlerFunc, m ...echo.MiddlewareFunc), h handlers, streams *Streams,
	metrics *Metrics, auth, byTicket echo.MiddlewareFunc, public []echo.MiddlewareFunc) {
	if streams != nil {
		streams.getVoucher, streams.metrics = h.uc.GetVoucher, metrics
	}
	route(http.MethodPost, "/api/v1/stream-tickets", h.issueTicket, auth)
	route(http.MethodGet, orderEventsRoute, h.orderEvents, byTicket)
	route(http.MethodGet, voucherEventsRoute, h.voucherEvents, append([]echo.MiddlewareFunc{streams.admit}, public...)...)
}

// operationRoutes adds, through route, what anyone may GET with no middleware of its
// own: the sale's clock (tellTime), health, readiness, the OpenAPI document, the live
// sale page and (unless it is served elsewhere) the metrics.
func operationRoutes(route func(method, path string, h echo.HandlerFunc, m ...echo.MiddlewareFunc), checks []Check, opts Options,
	metrics *Metrics, tellTime echo.HandlerFunc) {
	for _, r := range []struct {
		path string
		h    echo.HandlerFunc
	}{
		{"/api/v1/time", tellTime},
		{"/healthz", healthz},
		{"/readyz", readiness(checks, opts.Fulfillment)},
		// The document and the live page change with the binary: revalidated every
		// time, answered 304 while unchanged.
		{"/openapi.json", chain(openAPIDocument, cached("no-cache"))},
		// The live sale page, and the site's root, which leads to it.
		{"/", rootRedirect}, {"/ui", uiRedirect}, {"/ui/", chain(uiPage, cached("no-cache"))}, {"/ui/*", chain(uiPage, cached("no-cache"))},
	} {
		route(http.MethodGet, r.path, r.h)
	}
	if !opts.MetricsElsewhere {
		route(http.MethodGet, "/metrics", echo.WrapHandler(metrics.Handler()))
	}
}

// grabRoute is the grab's route: the hot path.
const grabRoute = "/api/v1/vouchers/:id/grab"

// streamed reports whether the GET route path answers as it goes (an event stream,
// the orders' CSV export) or compresses itself (/metrics): no gzip middleware there.
func streamed(path string) bool {
	switch path {
	case orderEventsRoute, voucherEventsRoute, queueEventsRoute, campaignQueueEventsRoute, voucherOrdersRoute, "/metrics":
		return true
	}
	return false
}

// The event streams' routes: they answer for as long as their client listens.
const (
	orderEventsRoute   = "/api/v1/orders/:id/events"
	voucherEventsRoute = "/api/v1/vouchers/:id/events"
)

// chain wraps h in m, the first outermost, as Echo would for each request.
func chain(h echo.HandlerFunc, m ...echo.MiddlewareFunc) echo.HandlerFunc {
	for i := len(m) - 1; i >= 0; i-- {
		h = m[i](h)
	}
	return h
}

// healthz answers 200 while the process runs.
func healthz(c echo.Context) error {
	return c.JSON(http.StatusOK, map[string]string{"status": "ok"})
}

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
