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
	api := e.Group("/api/v1")
	api.POST("/vouchers", h.createVoucher, auth, requireAdmin)
	api.GET("/vouchers", h.listVouchers)
	api.GET("/vouchers/:id", h.getVoucher)
	api.POST("/vouchers/:id/grab", h.grab, auth)
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
	e.GET("/readyz", readiness(checks))
	return e
}

// requestLog writes one line per request.
func requestLog(log *zap.Logger) echo.MiddlewareFunc {
	return middleware.RequestLoggerWithConfig(middleware.RequestLoggerConfig{
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
// with each dependency's state in "checks".
func readiness(checks []Check) echo.HandlerFunc {
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
		if !ready {
			c.Response().Header().Set("Retry-After", retryAfterSeconds)
			return c.JSON(http.StatusServiceUnavailable, map[string]any{
				"error":  errorDetail{Code: "unavailable", Message: "a dependency is down"},
				"checks": states,
			})
		}
		return c.JSON(http.StatusOK, map[string]any{"status": "ok", "checks": states})
	}
}
