package httpapi

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/labstack/echo/v4"
	"go.uber.org/zap"

	"github.com/seckill/seckill/domain"
	"github.com/seckill/seckill/ports"
)

// IdempotencyKeyHeader names the request header that makes a write idempotent.
const IdempotencyKeyHeader = "Idempotency-Key"

// idempotent makes a write route honor the Idempotency-Key header as the IETF draft
// and Stripe have it: the first request with a key does the work and its answer is
// kept (for a day, by store); a repeat by the same caller with the same key and the
// same request (the same JSON by meaning: spacing and member order aside) is answered
// with the kept status and body, marked Idempotent-Replayed, without doing the work
// again; the same key with another request answers 422 idempotency_key_mismatch, and
// while the first is still in progress 409 idempotency_in_progress with Retry-After.
// An empty key is a 400. Without the header nothing changes. It runs after
// authentication: keys are the caller's own.
//
// A request holds its key for lease (see IdempotencyLease); a retry that finds the
// lease passed with no answer kept takes the key over. Where the work is a database
// write, the handler passes its claim down (receiptFor) and the answer is kept in the
// write's own transaction; any other answer is kept once the handler is done (settle).
// An answer of 5xx, or none (the client left), is not kept: nothing was done, or the
// outcome is unknown, and a retry does the work — unless the write committed, whose
// answer stands. Nor is a refusal the client is to correct (400, 401, 403, 404, 415,
// 422): the corrected request may use the same key. 2xx and 409 are kept.
func idempotent(store ports.Idempotency, clock ports.Clock, lease time.Duration, log *zap.Logger) echo.MiddlewareFunc {
	now := time.Now
	if clock != nil {
		now = clock.Now
	}
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			keys, given := c.Request().Header[IdempotencyKeyHeader]
			if !given {
				return next(c)
			}
			key := keys[0]
			if len(keys) > 1 || !validIdempotencyKey(key) {
				return domain.Invalid("Idempotency-Key", "must be 1 to 255 printable ASCII characters")
			}
			fingerprint, err := fingerprintOf(c)
			if err != nil {
				return err
			}
			ctx, user := c.Request().Context(), principal(c).User
			claim, kept, err := store.Claim(ctx, user, key, fingerprint, now(), lease)
			if err != nil {
				return err
			}
			if !claim.Held() {
				return replay(c, kept, fingerprint)
			}
			c.Set(claimKey, claim)
			status, body, send := captured(c, next)
			settle(context.WithoutCancel(ctx), store, claim, status, body, log)
			return send()
		}
	}
}

// IdempotencyLease is how long a request holds its Idempotency-Key before a retry may
// take it over, for requests whose deadline is requestTimeout: the longest a live
// request can hold it (its deadline, then settleTimeout to keep or release it) and
// leaseSlack more. A request that outlives it anyway (a process paused, a clock far
// off) loses nothing but its own answer: every write under its claim is refused.
func IdempotencyLease(requestTimeout time.Duration) time.Duration {
	return requestTimeout + settleTimeout + leaseSlack
}

const (
	// settleTimeout bounds keeping or releasing a key once its handler is done.
	settleTimeout = 2 * time.Second
	// leaseSlack is the lease beyond the longest a live request holds its key: for the
	// clocks of instances that disagree a little and the delays of a busy machine.
	leaseSlack = 3 * time.Second
)

// claimKey is where idempotent leaves the request's claim for its handler.
const claimKey = "idempotency-claim"

// receiptFor returns the receipt under which a handler's database write keeps its
// answer, rendered by answer, in the write's own transaction; nil when the request
// holds no idempotency key.
func receiptFor[T any](c echo.Context, answer func(T) (int, []byte, error)) *ports.Receipt[T] {
	claim, ok := c.Get(claimKey).(ports.KeyClaim)
	if !ok {
		return nil
	}
	return &ports.Receipt[T]{Claim: claim, Answer: answer}
}

// settle keeps the answer of the request that held claim, or releases the key when
// the answer is not worth keeping: a 5xx, or none sent because the client left (see
// idempotent). It runs on ctx, which outlives the request's own context — cancelled
// when the client left, past its deadline on a 503, the very cases whose key must not
// stay claimed — under settleTimeout. Both are conditional on the claim, so an answer
// kept by the handler's write stands, and a holder whose key was taken over changes
// nothing. A failure is logged: the key is free again once its lease passes.
func settle(ctx context.Context, store ports.Idempotency, claim ports.KeyClaim, status int, body []byte, log *zap.Logger) {
	ctx, cancel := context.WithTimeout(ctx, settleTimeout)
	defer cancel()
	var err error
	if status >= http.StatusInternalServerError || status == StatusClientClosedRequest || corrected(status) {
		err = store.Release(ctx, claim)
	} else {
		_, err = store.Complete(ctx, claim, status, body)
	}
	if err != nil {
		log.Warn("settle an idempotency key; it is free again once its lease passes", zap.Error(err))
	}
}

// corrected reports whether an answer of status tells the client to change its
// request: such an answer is not kept, so the corrected request may use the key.
func corrected(status int) bool {
	switch status {
	case http.StatusBadRequest, http.StatusUnauthorized, http.StatusForbidden, http.StatusNotFound,
		http.StatusUnsupportedMediaType, http.StatusUnprocessableEntity:
		return true
	}
	return false
}

// rendered is status with v encoded as c.JSON encodes it (encoding/json, newline
// included): the answers a handler sends and, under an idempotency key, keeps in its
// write's transaction, so a replay is byte for byte the first answer.
func rendered(status int, v any) (int, []byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return 0, nil, fmt.Errorf("encode the answer: %w", err)
	}
	return status, append(b, '\n'), nil
}

// answerWith answers the request with what answer renders from v: the very bytes a
// receipt of the request keeps (receiptFor), so a retry is answered alike.
func answerWith[T any](c echo.Context, v T, answer func(T) (int, []byte, error)) error {
	status, body, err := answer(v)
	if err != nil {
		return err
	}
	return c.JSONBlob(status, body)
}

// validIdempotencyKey reports whether key is 1–255 printable ASCII characters.
func validIdempotencyKey(key string) bool {
	if key == "" || len(key) > 255 {
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
// parameters and body (read here, and put back for the handler). A JSON body is
// hashed in its canonical form (RFC 8785: no insignificant space, members sorted),
// so the same request serialized another way is the same request; any other body,
// as it is.
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
	canonical := jsontext.Value(bytes.Clone(body))
	if err := canonical.Canonicalize(); err == nil {
		body = canonical
	}
	h.Write(body)
	return hex.EncodeToString(h.Sum(nil)), nil
}

// replay answers a repeated key with what was kept of the first request.
func replay(c echo.Context, kept ports.IdempotentRequest, fingerprint string) error {
	switch {
	case kept.Status == 0:
		return errIdempotencyInProgress
	case kept.Fingerprint != fingerprint:
		return errIdempotencyMismatch
	}
	c.Response().Header().Set("Idempotent-Replayed", "true")
	switch kept.Status {
	case http.StatusNoContent:
		return c.NoContent(kept.Status)
	case http.StatusCreated:
		setLocation(c, kept.Body)
	}
	return c.Blob(kept.Status, echo.MIMEApplicationJSON, kept.Body)
}

// setLocation sets a 201's Location: what was created is its id (created, the body
// answered) under the collection the request was posted to.
func setLocation(c echo.Context, created []byte) {
	var v struct {
		ID string `json:"id"`
	}
	if json.Unmarshal(created, &v) == nil && v.ID != "" {
		c.Response().Header().Set(echo.HeaderLocation, c.Request().URL.Path+"/"+v.ID)
	}
}

// The answers to a key that cannot be replayed: 422 idempotency_key_mismatch (the
// client must change the key or the request) and 409 idempotency_in_progress (retry
// after Retry-After).
var (
	errIdempotencyMismatch   = errors.New("this Idempotency-Key was used for another request")
	errIdempotencyInProgress = errors.New("a request with this Idempotency-Key is still in progress")
)

// captured runs the handler and returns the status and body of its answer (an error
// answered through the error handler, as Echo would), held back from the client until
// send: so the key is settled before the client can see the answer and retry.
func captured(c echo.Context, next echo.HandlerFunc) (status int, body []byte, send func() error) {
	res := c.Response()
	h := &heldWriter{ResponseWriter: res.Writer}
	res.Writer = h
	defer func() { res.Writer = h.ResponseWriter }()
	if err := next(c); err != nil {
		c.Error(err)
	}
	send = func() error {
		if !res.Committed {
			return nil // nothing was answered; neither is anything now
		}
		h.ResponseWriter.WriteHeader(res.Status)
		_, err := h.ResponseWriter.Write(h.body.Bytes())
		return err
	}
	return res.Status, h.body.Bytes(), send
}

// heldWriter keeps an answer from reaching the client: its status is Echo's Response
// one, its body is kept here. It has no Unwrap, so nothing flushes past it.
type heldWriter struct {
	http.ResponseWriter
	body bytes.Buffer
}

func (h *heldWriter) WriteHeader(int) {}

func (h *heldWriter) Write(p []byte) (int, error) { return h.body.Write(p) }
