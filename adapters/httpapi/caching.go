package httpapi

import (
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"
)

// compressed gzips an answer of gzipMinLength bytes or more for a client that
// accepts it (the voucher list, the OpenAPI document, the live page's script).
var compressed = middleware.GzipWithConfig(middleware.GzipConfig{MinLength: gzipMinLength})

// gzipMinLength is the smallest answer worth compressing: below it gzip's framing
// and the CPU cost more than the bytes saved.
const gzipMinLength = 1024

// publicCache is the Cache-Control of the public reads (the voucher list and one
// voucher): any cache may keep a copy for maxAge (whole seconds, at least one), so a
// CDN in front of the sale's hottest read absorbs its flood; no-cache when maxAge is
// zero or less.
func publicCache(maxAgeSeconds int) string {
	if maxAgeSeconds <= 0 {
		return "no-cache"
	}
	return "public, max-age=" + strconv.Itoa(maxAgeSeconds)
}

// cached gives a GET's 200 a validator and an explicit freshness: a weak ETag (the
// SHA-256 of the body: the same answer, the same tag, on every instance) and
// Cache-Control cacheControl. A request whose If-None-Match names the tag is answered
// 304 with no body. Any other answer passes as it is.
func cached(cacheControl string) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			res := c.Response()
			held := &heldWriter{ResponseWriter: res.Writer}
			res.Writer = held
			err := next(c)
			res.Writer = held.ResponseWriter
			if err != nil || !res.Committed {
				return err
			}
			header := res.Header()
			if res.Status == http.StatusOK {
				sum := sha256.Sum256(held.body.Bytes())
				tag := `W/"` + base64.RawURLEncoding.EncodeToString(sum[:18]) + `"`
				header.Set(echo.HeaderCacheControl, cacheControl)
				header.Set("ETag", tag)
				if noneMatch(c.Request().Header.Get("If-None-Match"), tag) {
					header.Del(echo.HeaderContentType)
					res.Status = http.StatusNotModified
					res.Writer.WriteHeader(http.StatusNotModified)
					return nil
				}
			}
			res.Writer.WriteHeader(res.Status)
			_, err = res.Writer.Write(held.body.Bytes())
			return err
		}
	}
}

// noneMatch reports whether If-None-Match value names tag, by the weak comparison
// RFC 9110 asks of it ("*" names any).
func noneMatch(value, tag string) bool {
	if value == "" {
		return false
	}
	opaque := strings.TrimPrefix(tag, "W/")
	for candidate := range strings.SplitSeq(value, ",") {
		candidate = strings.TrimSpace(candidate)
		if candidate == "*" || strings.TrimPrefix(candidate, "W/") == opaque {
			return true
		}
	}
	return false
}

// crossOrigin answers the CORS of a storefront on another origin: a request whose
// Origin is one of origins (compared exactly) gets it back in
// Access-Control-Allow-Origin, and the headers a client reads exposed; a preflight is
// answered with the methods and the headers the API takes. No credentials: the API
// authenticates by bearer token, never by cookie.
func crossOrigin(origins []string) echo.MiddlewareFunc {
	allowed := make(map[string]bool, len(origins))
	for _, o := range origins {
		allowed[o] = true
	}
	return middleware.CORSWithConfig(middleware.CORSConfig{
		AllowOriginFunc: func(origin string) (bool, error) { return allowed[origin], nil },
		AllowMethods:    []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete},
		AllowHeaders: []string{echo.HeaderAuthorization, echo.HeaderContentType, IdempotencyKeyHeader,
			PassHeader, PowHeader, CodeHeader},
		ExposeHeaders: []string{"Retry-After", echo.HeaderXRequestID, "Idempotent-Replayed", echo.HeaderLocation},
		MaxAge:        600,
	})
}

// CodeHeader is the header of a presale access code; the contract (v1.3, "CORS")
// names it among the headers a preflight allows.
const CodeHeader = "X-Seckill-Code"
