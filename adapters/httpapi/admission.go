package httpapi

import (
	"math"
	"net/http"

	"github.com/labstack/echo/v4"
	"golang.org/x/time/rate"
)

// Admission bounds the work one instance takes on: at most a fixed number of requests
// in flight and, optionally, at most a rate of new ones. A request beyond either bound
// is answered 503 unavailable with Retry-After at once; nothing ever queues, so a
// flood far beyond capacity costs the instance a rejection each, never a pile-up of
// goroutines waiting on Redis.
type Admission struct {
	slots  chan struct{} // nil: no bound on requests in flight
	bucket *rate.Limiter // nil: no bound on the rate
}

// NewAdmission returns an Admission that lets at most maxInflight requests run at once
// and, when perSecond is positive, admits perSecond requests a second on average and up
// to burst at once (one second's worth when burst is below 1). A maxInflight or
// perSecond of 0 or less turns that bound off; with both off, Middleware does nothing.
func NewAdmission(maxInflight int, perSecond float64, burst int) *Admission {
	a := &Admission{}
	if maxInflight > 0 {
		a.slots = make(chan struct{}, maxInflight)
	}
	if perSecond > 0 && !math.IsInf(perSecond, 1) {
		if burst < 1 {
			burst = max(1, int(math.Ceil(perSecond)))
		}
		a.bucket = rate.NewLimiter(rate.Limit(perSecond), burst)
	}
	return a
}

// Enabled reports whether a has any bound to enforce.
func (a *Admission) Enabled() bool { return a.slots != nil || a.bucket != nil }

// Middleware returns the gate as Echo middleware. A request takes a slot before the
// handler runs and gives it back when the handler returns; the token bucket is asked
// only once a slot is held, so a request turned away for lack of a slot spends no
// token.
func (a *Admission) Middleware() echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		if !a.Enabled() {
			return next
		}
		return func(c echo.Context) error {
			if a.slots != nil {
				select {
				case a.slots <- struct{}{}:
					defer func() { <-a.slots }()
				default:
					return overloaded(c)
				}
			}
			if a.bucket != nil && !a.bucket.Allow() {
				return overloaded(c)
			}
			return next(c)
		}
	}
}

// overloaded answers the contract's 503 directly rather than through the error
// handler: shedding load is the gate doing its job, not a failure to log, and under a
// flood it happens many thousand times a second.
func overloaded(c echo.Context) error {
	c.Response().Header().Set("Retry-After", retryAfterSeconds)
	return c.JSON(http.StatusServiceUnavailable, errorBody{Error: errorDetail{
		Code:      "unavailable",
		Message:   "too many requests in progress, retry later",
		RequestID: requestID(c),
	}})
}
