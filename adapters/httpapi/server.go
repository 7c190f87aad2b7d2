// Package httpapi is the REST adapter: the HTTP contract of DESIGN.md on Echo. Handlers
// decode and validate a request, call one use case and encode its result; every error
// goes to one handler that maps it to the contract's status and code.
package httpapi

import (
	"context"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"
	"go.uber.org/zap"

	"github.com/seckill/seckill/application"
)

// Options tune the HTTP layer.
type Options struct {
	// BodyLimit caps a request body, in Echo's notation ("4K").
	BodyLimit string
	// RequestTimeout bounds each request's context; a handler still waiting when it
	// lapses answers 503 unavailable.
	RequestTimeout time.Duration

	// MaxInflight bounds the grab requests this instance works on at once; beyond it a
	// grab answers 503 unavailable with Retry-After at once (see Admission). 0 turns
	// it off.
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

	// Fulfilment reports whether fulfilment is stalled (the oldest reservation not yet
	// persisted waits too long), shown on /readyz as "fulfilment": "stalled" or "ok"
	// without making it fail: the API can still serve. Nil, or an error, leaves it out.
	Fulfilment func(context.Context) (stalled bool, err error)
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

	e.Use(
		middleware.RecoverWithConfig(middleware.RecoverConfig{
			LogErrorFunc: func(c echo.Context, err error, stack []byte) error {
				log.Error("panic", zap.Error(err), zap.ByteString("stack", stack), zap.String("path", c.Path()))
				return err
			},
		}),
		middleware.RequestID(),
		requestLog(log),
		middleware.BodyLimit(opts.BodyLimit),
		middleware.ContextTimeout(opts.RequestTimeout),
	)

	h := handlers{uc: uc}
	auth := authenticate(tokens)
	// The grab's gate runs after authentication (an anonymous flood is turned away
	// without taking a slot) and before the handler; the reads anyone may call are
	// limited per client address. Health checks are never limited.
	grab := []echo.MiddlewareFunc{auth}
	if admission := NewAdmission(opts.MaxInflight, opts.GrabRate, opts.GrabBurst); admission.Enabled() {
		grab = append(grab, admission.Middleware())
	}
	var public []echo.MiddlewareFunc
	if opts.IPLimit > 0 {
		if opts.IPLimiter == nil {
			panic("httpapi: Options.IPLimit is set without Options.IPLimiter")
		}
		public = append(public, limitByIP(opts.IPLimiter, opts.IPLimit, opts.IPBurst, log))
	}
	api := e.Group("/api/v1")
	api.POST("/vouchers", h.createVoucher, auth, requireAdmin)
	api.GET("/vouchers", h.listVouchers, public...)
	api.GET("/vouchers/:id", h.getVoucher, public...)
	api.POST("/vouchers/:id/grab", h.grab, grab...)
	api.GET("/vouchers/:id/stats", h.voucherStats, auth, requireAdmin)
	api.POST("/vouchers/:id/pause", h.pauseSale(true), auth, requireAdmin)
	api.POST("/vouchers/:id/resume", h.pauseSale(false), auth, requireAdmin)
	api.GET("/orders", h.listOrders, auth)
	api.GET("/orders/:id", h.getOrder, auth)
	api.POST("/orders/:id/pay", h.payOrder, auth)
	api.POST("/orders/:id/cancel", h.cancelOrder, auth)

	e.GET("/healthz", func(c echo.Context) error {
		return c.JSON(http.StatusOK, map[string]string{"status": "ok"})
	})
	e.GET("/readyz", readiness(checks, opts.Fulfilment))
	return e
}

// requestLog writes one line per request, with the status it was answered: an error a
// handler returns goes through the error handler here, before the line is written,
// which decides that status.
func requestLog(log *zap.Logger) echo.MiddlewareFunc {
	return middleware.RequestLoggerWithConfig(middleware.RequestLoggerConfig{
		HandleError:  true,
		LogStatus:    true,
		LogMethod:    true,
		LogURIPath:   true,
		LogLatency:   true,
		LogRequestID: true,
		LogValuesFunc: func(_ echo.Context, v middleware.RequestLoggerValues) error {
			log.Info("request",
				zap.String("method", v.Method),
				zap.String("path", v.URIPath),
				zap.Int("status", v.Status),
				zap.Duration("latency", v.Latency),
				zap.String("request_id", v.RequestID),
			)
			return nil
		},
	})
}

// readiness answers 200 when every dependency answers within a second, 503 otherwise,
// with each dependency's state in "checks" and, when fulfilment can tell, whether it is
// stalled ("fulfilment": "ok" or "stalled"; stalled alone still answers 200).
func readiness(checks []Check, fulfilment func(context.Context) (bool, error)) echo.HandlerFunc {
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
		if fulfilment != nil {
			if stalled, err := fulfilment(ctx); err == nil {
				body["fulfilment"] = map[bool]string{false: "ok", true: "stalled"}[stalled]
			}
		}
		if !ready {
			c.Response().Header().Set("Retry-After", retryAfterSeconds)
			body["error"] = errorDetail{Code: "unavailable", Message: "a dependency is down"}
			return c.JSON(http.StatusServiceUnavailable, body)
		}
		body["status"] = "ok"
		return c.JSON(http.StatusOK, body)
	}
}
