package httpapi

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"
	"go.uber.org/zap"

	"github.com/seckill/seckill/domain"
)

// errorBody is the contract's error shape: {"error": {"code", "message", ...}}.
type errorBody struct {
	Error errorDetail `json:"error"`
}

type errorDetail struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	OrderID string `json:"order_id,omitempty"`
	// OrderIDs, with an already_purchased of a campaign's per-user limit, are every
	// order the caller holds of the campaign (OrderID the first of them).
	OrderIDs []string `json:"order_ids,omitempty"`
	// With challenge_required, a fresh challenge to answer: the proof of work's
	// (Challenge, Difficulty, ExpiresAt in RFC 3339), or Turnstile's widget settings
	// (SiteKey, Action, CData). See challengeAnswer.
	Challenge  string `json:"challenge,omitempty"`
	Difficulty int    `json:"difficulty,omitempty"`
	ExpiresAt  string `json:"expires_at,omitempty"`
	SiteKey    string `json:"sitekey,omitempty"`
	Action     string `json:"action,omitempty"`
	CData      string `json:"cdata,omitempty"`
	// RequestID is the X-Request-ID of the request answered, for support to find it.
	RequestID string `json:"request_id,omitempty"`
}

// requestID is the id the RequestID middleware gave the request being answered.
func requestID(c echo.Context) string {
	// The key is canonical: the map is read as Get would, after canonicalizing it.
	if v := c.Response().Header()[echo.HeaderXRequestID]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// retryAfterSeconds is what a 503 tells the client to wait.
const retryAfterSeconds = "1"

// errorHandler is the one place that turns an error into a response. Client errors
// carry the contract's code and a safe message; anything unexpected is logged and
// answered with a generic 500 that reveals nothing of the failure.
func errorHandler(log *zap.Logger) echo.HTTPErrorHandler {
	return func(err error, c echo.Context) {
		if c.Response().Committed {
			return
		}
		if cancelledByClient(c, err) {
			// The client is gone: nobody reads an answer, and a flood of disconnects
			// is no failure of ours. The status is for the request log only.
			log.Debug("request cancelled by the client", zap.Error(err), zap.String("path", c.Path()))
			c.Response().WriteHeader(StatusClientClosedRequest)
			return
		}
		status, detail := classify(err)
		// A 503 is the expected answer while a dependency is down or the instance is
		// saturated; the breakers log each change of state once, so a flood of them is
		// not logged one by one.
		if status == http.StatusServiceUnavailable {
			log.Debug("request unavailable", zap.Error(err), zap.String("path", c.Path()))
		} else if status >= 500 {
			log.Error("request failed", zap.Error(err), zap.String("method", c.Request().Method),
				zap.String("path", c.Path()), zap.String("request_id", c.Response().Header().Get(echo.HeaderXRequestID)))
		}
		if status == http.StatusServiceUnavailable || errors.Is(err, errIdempotencyInProgress) {
			c.Response().Header().Set("Retry-After", retryAfterSeconds)
		}
		if status == http.StatusUnauthorized {
			c.Response().Header().Set(echo.HeaderWWWAuthenticate, bearerChallenge(c.Request()))
		}
		if rl, ok := errors.AsType[*domain.RateLimitedError](err); ok {
			c.Response().Header().Set("Retry-After", strconv.Itoa(retryAfter(rl.RetryAfter)))
		}
		var werr error
		if c.Request().Method == http.MethodHead {
			werr = c.NoContent(status)
		} else {
			detail.RequestID = requestID(c)
			werr = answerJSON(c, status, errorBody{Error: detail})
		}
		if werr != nil {
			log.Debug("write error response", zap.Error(werr))
		}
	}
}

// bearerChallenge is a 401's WWW-Authenticate (RFC 6750): the Bearer scheme, and
// invalid_token when the request brought credentials that were refused.
func bearerChallenge(r *http.Request) string {
	if r.Header.Get(echo.HeaderAuthorization) != "" || r.URL.Query().Has("ticket") {
		return `Bearer realm="seckill", error="invalid_token"`
	}
	return `Bearer realm="seckill"`
}

// StatusClientClosedRequest is the status the request log records for a request whose
// client went away before it was answered (nginx's 499); nothing reads it.
const StatusClientClosedRequest = 499

// cancelledByClient reports whether err comes from the request's own context being
// cancelled, which happens when its client disconnects. A deadline is not a
// cancellation: a request past SECKILL_REQUEST_TIMEOUT is answered 503.
func cancelledByClient(c echo.Context, err error) bool {
	return errors.Is(err, context.Canceled) && errors.Is(c.Request().Context().Err(), context.Canceled)
}

// retryAfter rounds a wait up to whole seconds, at least one, as Retry-After wants.
func retryAfter(d time.Duration) int {
	return max(1, int((d+time.Second-1)/time.Second))
}

func classify(err error) (int, errorDetail) {
	if err == domain.ErrSoldOut { //nolint:errorlint // the bare sentinel only; wrapped ones reach errors.Is below
		// The flood after a sell-out is answered with the bare sentinel, which no case
		// before its own below can match: found at once, without walking every type.
		return soldOut()
	}
	if ap, ok := errors.AsType[*domain.AlreadyPurchasedError](err); ok {
		return http.StatusConflict, alreadyPurchased(ap)
	}
	if cr, ok := errors.AsType[*challengeRequired](err); ok {
		return http.StatusForbidden, cr.detail()
	}
	if ve, ok := errors.AsType[*domain.ValidationError](err); ok {
		return http.StatusBadRequest, errorDetail{Code: "invalid_request", Message: ve.Error()}
	}
	for _, a := range sentinelAnswers {
		if errors.Is(err, a.err) {
			return a.status, errorDetail{Code: a.code, Message: a.message}
		}
	}
	if he, ok := errors.AsType[*echo.HTTPError](err); ok {
		return fromEchoError(he)
	}
	return http.StatusInternalServerError, errorDetail{Code: "internal", Message: "internal error"}
}

// alreadyPurchased is the answer to a grab refused for the orders its user holds: of
// the voucher, or of its campaign up to the campaign's per-user limit.
func alreadyPurchased(ap *domain.AlreadyPurchasedError) errorDetail {
	if len(ap.Orders) == 0 {
		return errorDetail{Code: "already_purchased", Message: "you already hold an order for this voucher", OrderID: string(ap.OrderID)}
	}
	ids := make([]string, len(ap.Orders))
	for i, o := range ap.Orders {
		ids[i] = string(o)
	}
	return errorDetail{Code: "already_purchased", OrderID: string(ap.OrderID), OrderIDs: ids,
		Message: "you already hold as many units of this voucher's campaign as one user may: see order_ids"}
}

func soldOut() (int, errorDetail) {
	return http.StatusConflict, errorDetail{Code: "sold_out", Message: soldOutMessage}
}

const soldOutMessage = "the voucher is sold out"

// sentinelAnswers maps the sentinel errors to the contract's status and code, tried in
// this order: the first an error matches (errors.Is) answers it.
var sentinelAnswers = []struct {
	err           error
	status        int
	code, message string
}{
	{domain.ErrInvalid, http.StatusBadRequest, "invalid_request", "invalid request"},
	{domain.ErrRateLimited, http.StatusTooManyRequests, "rate_limited", "too many requests; retry after the time in Retry-After"},
	{domain.ErrSoldOut, http.StatusConflict, "sold_out", soldOutMessage},
	{domain.ErrCampaignSoldOut, http.StatusConflict, "campaign_sold_out", "the campaign's cap is reached: none of its units is left, whatever this voucher has"},
	{domain.ErrNotStarted, http.StatusConflict, "not_started", "the sale has not started"},
	{domain.ErrEnded, http.StatusConflict, "ended", "the sale has ended"},
	{domain.ErrPaused, http.StatusConflict, "paused", "the sale is paused"},
	{domain.ErrNotEnoughUnits, http.StatusConflict, "not_enough_units", "fewer units are on sale than that (a sale keeps one unit at least: to stop it, end or pause it)"},
	{domain.ErrAlreadyStarted, http.StatusConflict, "already_started", "the sale has started: its begins_at cannot move"},
	{domain.ErrWaitlistUnsupported, http.StatusConflict, "waitlist_unsupported", "no waitlist here: it is kept for first-come vouchers, on the lua or watch stock strategy"},
	{domain.ErrInvalidState, http.StatusConflict, "invalid_state", "the order is not in a state that allows this"},
	{domain.ErrNotJoined, http.StatusNotFound, "not_found", "you have not joined this waiting room: join it first (POST to this path)"},
	{domain.ErrNotFound, http.StatusNotFound, "not_found", "not found"},
	{errUnauthorized, http.StatusUnauthorized, "unauthorized", errUnauthorized.Error()},
	{errIdempotencyMismatch, http.StatusUnprocessableEntity, "idempotency_key_mismatch", errIdempotencyMismatch.Error()},
	{errIdempotencyInProgress, http.StatusConflict, "idempotency_in_progress", errIdempotencyInProgress.Error()},
	{errUnsupportedMediaType, http.StatusUnsupportedMediaType, "unsupported_media_type", errUnsupportedMediaType.Error()},
	{errForbidden, http.StatusForbidden, "forbidden", errForbidden.Error()},
	{domain.ErrNoWaitingRoom, http.StatusConflict, "no_waiting_room", "this sale has no waiting room of its own (its admission is first_come or draw, or it is a campaign's voucher: join the campaign's queue)"},
	{domain.ErrDenied, http.StatusForbidden, "denied", "an admin put this user on the deny list: its grabs are refused"},
	{domain.ErrQueueRequired, http.StatusForbidden, "queue_required", "this sale admits through its waiting room: grab with a valid pass of yours (X-Seckill-Pass)"},
	{domain.ErrChallengeRequired, http.StatusForbidden, "challenge_required", "this sale asks for a solved challenge (X-Seckill-Pow)"},
	{domain.ErrNotDraw, http.StatusConflict, "not_a_draw", "this voucher is not sold by a draw: it takes no entries"},
	{domain.ErrDrawUnsupported, http.StatusConflict, "draw_unsupported", "this deployment's stock strategy runs no draws (it needs SECKILL_STOCK_STRATEGY lua or watch)"},
	{domain.ErrEntriesClosed, http.StatusConflict, "entries_closed", "the draw takes no more entries"},
	{domain.ErrNotSoldOut, http.StatusConflict, "not_sold_out", "the waitlist opens only while the voucher is sold out"},
	{domain.ErrUnavailable, http.StatusServiceUnavailable, "unavailable", unavailableMessage},
	{context.DeadlineExceeded, http.StatusServiceUnavailable, "unavailable", unavailableMessage},
}

const unavailableMessage = "temporarily unavailable, retry later"

// fromEchoError maps the errors Echo and its middleware raise (unknown route, wrong
// method, body too large, timeout) onto the contract's codes.
func fromEchoError(he *echo.HTTPError) (int, errorDetail) {
	switch he.Code {
	case http.StatusNotFound:
		return he.Code, errorDetail{Code: "not_found", Message: "not found"}
	case http.StatusMethodNotAllowed:
		return he.Code, errorDetail{Code: "method_not_allowed", Message: "method not allowed"}
	case http.StatusRequestEntityTooLarge:
		return he.Code, errorDetail{Code: "invalid_request", Message: "request body too large"}
	case http.StatusUnauthorized:
		return he.Code, errorDetail{Code: "unauthorized", Message: errUnauthorized.Error()}
	case http.StatusServiceUnavailable:
		return he.Code, errorDetail{Code: "unavailable", Message: unavailableMessage}
	}
	if he.Code >= 400 && he.Code < 500 {
		return http.StatusBadRequest, errorDetail{Code: "invalid_request", Message: http.StatusText(he.Code)}
	}
	return http.StatusInternalServerError, errorDetail{Code: "internal", Message: "internal error"}
}
