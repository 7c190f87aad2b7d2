package httpapi

import (
	"bytes"
	"errors"
	"io"
	"math"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/labstack/echo/v4"
	"golang.org/x/time/rate"

	"github.com/seckill/seckill/domain"
)

// AdmissionOptions tune an Admission. The zero value bounds nothing.
type AdmissionOptions struct {
	// MaxInflight is the most requests that may run at once; 0 turns the bound (and
	// the adaptive limit under it) off.
	MaxInflight int
	// Target is the latency the adaptive limit defends: while admitted requests take
	// longer, the limit on requests in flight backs off by a tenth, at most once per
	// Target (the control loop's round trip: a burst the instance clears in a few
	// Targets is not shed), and it grows back by one with each request answered sooner
	// (additive increase, multiplicative decrease: AIMD). 0 keeps the limit at
	// MaxInflight.
	Target time.Duration
	// MinInflight is the floor of the adaptive limit; DefaultMinInflight when 0.
	MinInflight int
	// PerSecond and Burst bound the rate of new requests (a token bucket): PerSecond
	// on average and Burst at once (one second's worth when Burst is below 1); 0 turns
	// it off.
	PerSecond float64
	Burst     int
	// BodyTimeout bounds how long the request's body may take to arrive, from when
	// the door reads it, when the request's context has no nearer deadline; 0 leaves
	// it to the server's read timeout.
	BodyTimeout time.Duration
	// Now is the clock latencies are measured by; time.Now when nil.
	Now func() time.Time
}

// DefaultMinInflight is the floor of the adaptive limit: however slow the answers, an
// instance keeps working on this many requests at once.
const DefaultMinInflight = 64

// Admission is the door of the grab path: it bounds the work one instance takes on,
// so that beyond what it can answer in time it refuses at once with 503 unavailable
// and Retry-After, before any Redis work, and finishes the requests it already took
// rather than slowing every one of them down. A request beyond the bound is never
// queued: a flood far beyond capacity costs the instance a rejection each, never a
// pile-up of goroutines.
//
// The bound on requests in flight adapts (AIMD): it starts at MaxInflight, so a burst
// the instance can serve within Target is served whole; when admitted requests take
// longer than Target, or are answered unavailable (the instance is past its capacity,
// or a dependency is slow or down) it backs off by a tenth at a time, and it grows back
// by one with every request answered in time. Optionally a token bucket bounds the rate of new requests too.
//
// It is hand-written (forty lines) because the adaptive limiters at hand compare
// latency with a learned baseline (Netflix's gradient, Vegas), and a flash sale's
// opening burst is always far above any baseline: they would shed the very burst the
// instance exists to serve. This one defends a deadline instead.
type Admission struct {
	max, min    int64
	target      time.Duration
	bodyTimeout time.Duration
	now         func() time.Time

	inflight atomic.Int64
	limit    atomic.Int64
	// lastCut is when the limit last backed off (Unix ns), so one slow moment backs it
	// off once, not once per request that was slow in it.
	lastCut atomic.Int64

	bucket *rate.Limiter // nil: no bound on the rate
}

// NewAdmission returns an Admission tuned by o.
func NewAdmission(o AdmissionOptions) *Admission {
	a := &Admission{max: int64(max(o.MaxInflight, 0)), target: o.Target, bodyTimeout: o.BodyTimeout, now: o.Now}
	if a.now == nil {
		a.now = time.Now
	}
	a.min = int64(o.MinInflight)
	if a.min <= 0 {
		a.min = DefaultMinInflight
	}
	a.min = min(a.min, a.max)
	a.limit.Store(a.max)
	if o.PerSecond > 0 && !math.IsInf(o.PerSecond, 1) {
		burst := o.Burst
		if burst < 1 {
			burst = max(1, int(math.Ceil(o.PerSecond)))
		}
		a.bucket = rate.NewLimiter(rate.Limit(o.PerSecond), burst)
	}
	return a
}

// Enabled reports whether a has any bound to enforce.
func (a *Admission) Enabled() bool { return a.max > 0 || a.bucket != nil }

// Limit returns the current bound on requests in flight (0: none).
func (a *Admission) Limit() int { return int(a.limit.Load()) }

// Middleware returns the door as Echo middleware. It reads the request body first,
// under the server's read deadline, so a client that trickles its body in holds no
// slot; then the request takes a slot, and gives it back when the handler returns. The
// token bucket is asked only once a slot is held, so a request turned away for lack
// of a slot spends no token.
func (a *Admission) Middleware() echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) (err error) {
			if err := a.readBody(c); err != nil {
				return err
			}
			if !a.Enabled() {
				return next(c)
			}
			if a.max > 0 {
				if n := a.inflight.Add(1); n > a.limit.Load() {
					a.inflight.Add(-1)
					return overloaded(c)
				}
				start := a.now()
				defer func() { a.done(a.now().Sub(start), errors.Is(err, domain.ErrUnavailable)) }()
			}
			if a.bucket != nil && !a.bucket.Allow() {
				return overloaded(c)
			}
			return next(c)
		}
	}
}

// done gives a slot back and moves the limit by how long its request took, and whether
// it was refused past the door as unavailable: a grab that waited too long for its
// turn (answered 503 before the Target, by the stock's own bound) says the instance is
// past what it can serve as surely as a slow answer does.
func (a *Admission) done(took time.Duration, unavailable bool) {
	a.inflight.Add(-1)
	if a.target <= 0 {
		return
	}
	if took <= a.target && !unavailable {
		if l := a.limit.Load(); l < a.max {
			a.limit.CompareAndSwap(l, l+1)
		}
		return
	}
	now := a.now().UnixNano()
	last := a.lastCut.Load()
	if now-last < int64(a.target) || !a.lastCut.CompareAndSwap(last, now) {
		return
	}
	for {
		l := a.limit.Load()
		cut := max(a.min, l-l/10)
		if cut == l || a.limit.CompareAndSwap(l, cut) {
			return
		}
	}
}

// readBody reads the whole request body into memory, under the request's deadline (or
// BodyTimeout), so the handler decodes it from there. A body over the limit keeps the
// body limit's 413; one that does not arrive in time is a 408 (the contract's 400
// invalid_request).
func (a *Admission) readBody(c echo.Context) error {
	req := c.Request()
	if req.Body == nil || req.Body == http.NoBody {
		return nil
	}
	if req.ContentLength == 0 {
		// The server says there is no body (Echo's body limit has wrapped it): nothing
		// to wait for, and nothing for the handler to read.
		req.Body = http.NoBody
		return nil
	}
	deadline, ok := req.Context().Deadline()
	if !ok && a.bodyTimeout > 0 {
		deadline, ok = a.now().Add(a.bodyTimeout), true
	}
	if ok {
		// Not every ResponseWriter can (a test recorder cannot); the server's own read
		// timeout bounds the read then.
		_ = http.NewResponseController(c.Response()).SetReadDeadline(deadline)
	}
	body, err := io.ReadAll(req.Body)
	if err != nil {
		var he *echo.HTTPError
		if errors.As(err, &he) {
			return he
		}
		return echo.NewHTTPError(http.StatusRequestTimeout, "request body not received in time")
	}
	_ = req.Body.Close()
	if len(body) == 0 {
		req.Body = http.NoBody
		return nil
	}
	req.Body = io.NopCloser(bytes.NewReader(body))
	return nil
}

// overloaded answers the contract's 503 directly rather than through the error
// handler: shedding load is the door doing its job, not a failure to log, and under a
// flood it happens many thousand times a second.
func overloaded(c echo.Context) error {
	c.Response().Header().Set("Retry-After", retryAfterSeconds)
	return answerJSON(c, http.StatusServiceUnavailable, errorBody{Error: errorDetail{
		Code:      "unavailable",
		Message:   "too many requests in progress, retry later",
		RequestID: requestID(c),
	}})
}
