package httpapi

import (
	"context"
	"net"
	"time"

	"github.com/labstack/echo/v4"
	"go.uber.org/zap"

	"github.com/seckill/seckill/domain"
)

// Limiter is a rate limit shared by every instance (redisstore.RateLimiter).
type Limiter interface {
	// Allow takes one request from key's allowance of perSecond requests a second, up
	// to burst at once. It reports whether the request is allowed and, when it is not,
	// how long until one would be; an error when the limiter could not decide.
	Allow(ctx context.Context, key string, perSecond, burst int) (allowed bool, retryAfter time.Duration, err error)
}

// limitWait is the longest the per-address limit waits for its decision; a healthy
// Redis gives it in well under a millisecond.
const limitWait = 250 * time.Millisecond

// limitByIP limits each client address to perSecond requests a second (burst at once)
// through limiter, answering 429 rate_limited with Retry-After beyond it.
//
// The client is the connection's remote address, never a header a client could
// forge, unless the connection comes from one of Options.TrustedProxies (see
// clientIP).
//
// When the limiter fails (Redis down or its breaker open), the request goes through:
// the limit protects the service from a client, and must not turn a Redis blip into
// an outage of reads that may not even need Redis. The breaker reports the outage.
// Nor may it spend the request's wait on a Redis that does not answer: it decides
// within limitWait or lets the request through, so a read that then needs Redis
// answers after about one Redis timeout, not two.
func limitByIP(limiter Limiter, perSecond, burst int, log *zap.Logger) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			ip := clientIP(c)
			ctx, cancel := context.WithTimeout(c.Request().Context(), limitWait)
			allowed, wait, err := limiter.Allow(ctx, "ip:"+ip, perSecond, burst)
			cancel()
			if err != nil {
				log.Debug("rate limit skipped", zap.Error(err))
				return next(c)
			}
			if !allowed {
				return &domain.RateLimitedError{RetryAfter: wait}
			}
			return next(c)
		}
	}
}

// forwardedFor returns the extractor that reads X-Forwarded-For behind the trusted
// proxies: from the right, past every trusted hop, to the first address that is not
// trusted. Echo's defaults would also trust every loopback, link-local and private
// address; here only the configured ranges are.
func forwardedFor(trusted []*net.IPNet) echo.IPExtractor {
	opts := []echo.TrustOption{echo.TrustLoopback(false), echo.TrustLinkLocal(false), echo.TrustPrivateNet(false)}
	for _, r := range trusted {
		opts = append(opts, echo.TrustIPRange(r))
	}
	return echo.ExtractIPFromXFFHeader(opts...)
}

// clientIP is the address the request came from: the connection's, or with trusted
// proxies configured what forwardedFor reads.
func clientIP(c echo.Context) string {
	if c.Echo().IPExtractor != nil {
		return c.RealIP()
	}
	addr := c.Request().RemoteAddr
	if host, _, err := net.SplitHostPort(addr); err == nil {
		return host
	}
	return addr
}
