package httpapi

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/seckill/seckill/domain"
	"github.com/seckill/seckill/ports"
)

// IdempotencyKeyHeader names the request header that makes a write idempotent.
const IdempotencyKeyHeader = "Idempotency-Key"

// idempotent makes a write route honor the Idempotency-Key header: the first request
// with a key does the work and its answer is kept (for a day, by store); a repeat by the
// same caller with the same key and the same request is answered with the kept status
// and body, marked Idempotent-Replayed, without doing the work again; the same key with
// another request — or while the first is still in progress — answers
// 409 idempotency_conflict. An answer of 5xx is not kept (nothing was done, or the
// outcome is unknown): a retry does the work. Without the header nothing changes. It
// runs after authentication: keys are the caller's own.
func idempotent(store ports.Idempotency) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			key := c.Request().Header.Get(IdempotencyKeyHeader)
			if key == "" {
				return next(c)
			}
			if !validIdempotencyKey(key) {
				return domain.Invalid("Idempotency-Key", "must be 1 to 255 printable ASCII characters")
			}
			fingerprint, err := fingerprintOf(c)
			if err != nil {
				return err
			}
			ctx, user := c.Request().Context(), principal(c).User
			kept, first, err := store.Claim(ctx, user, key, fingerprint, time.Now())
			if err != nil {
				return err
			}
			if !first {
				return replay(c, kept, fingerprint)
			}
			status, body := captured(c, next)
			if status >= http.StatusInternalServerError {
				return store.Release(ctx, user, key)
			}
			return store.Complete(ctx, user, key, status, body)
		}
	}
}

// validIdempotencyKey reports whether key is 1–255 printable ASCII characters.
func validIdempotencyKey(key string) bool {
	if len(key) > 255 {
		return false
	}
	for i := range len(key) {
		if key[i] < 0x20 || key[i] > 0x7e {
			return false
		}
	}
	return true
}

// fingerprintOf hashes what makes a request this request: method, route, path
// parameters and body (read here, and put back for the handler).
func fingerprintOf(c echo.Context) (string, error) {
	req := c.Request()
	var body []byte
	if req.Body != nil && req.Body != http.NoBody {
		var err error
		if body, err = io.ReadAll(req.Body); err != nil {
			return "", domain.Invalid("body", "could not be read")
		}
		req.Body = io.NopCloser(bytes.NewReader(body))
	}
	h := sha256.New()
	fmt.Fprintf(h, "%s %s\n", req.Method, c.Path())
	for i, name := range c.ParamNames() {
		fmt.Fprintf(h, "%s=%s\n", name, c.ParamValues()[i])
	}
	h.Write(body)
	return hex.EncodeToString(h.Sum(nil)), nil
}

// replay answers a repeated key with what was kept of the first request.
func replay(c echo.Context, kept ports.IdempotentRequest, fingerprint string) error {
	switch {
	case kept.Fingerprint != fingerprint:
		return errIdempotencyConflict("this Idempotency-Key was used for another request")
	case kept.Status == 0:
		return errIdempotencyConflict("a request with this Idempotency-Key is still in progress")
	}
	c.Response().Header().Set("Idempotent-Replayed", "true")
	return c.Blob(kept.Status, echo.MIMEApplicationJSON, kept.Body)
}

// errIdempotencyConflict is the contract's 409 idempotency_conflict.
type errIdempotencyConflict string

func (e errIdempotencyConflict) Error() string { return string(e) }

// captured runs the handler and answers the request — an error through the error
// handler, as Echo would — and returns the status and body it sent.
func captured(c echo.Context, next echo.HandlerFunc) (int, []byte) {
	res := c.Response()
	tee := &teeWriter{ResponseWriter: res.Writer}
	res.Writer = tee
	defer func() { res.Writer = tee.ResponseWriter }()
	if err := next(c); err != nil {
		c.Error(err)
	}
	return res.Status, tee.body.Bytes()
}

// teeWriter keeps a copy of what is written through it.
type teeWriter struct {
	http.ResponseWriter
	body bytes.Buffer
}

func (t *teeWriter) Write(p []byte) (int, error) {
	t.body.Write(p)
	return t.ResponseWriter.Write(p)
}

func (t *teeWriter) Unwrap() http.ResponseWriter { return t.ResponseWriter }
