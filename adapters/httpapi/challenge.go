package httpapi

import (
	"errors"
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"github.com/seckill/seckill/application"
	"github.com/seckill/seckill/domain"
	"github.com/seckill/seckill/ports"
)

// challengeRoute hands out challenges.
const challengeRoute = "/api/v1/vouchers/:id/challenge"

// Under load a challenge asks for more work: while the grab door has more than
// raiseAbove of its limit in flight, every challenge issued asks for raiseBits more
// than its voucher's pow_difficulty (each bit doubles a client's work), so the clients
// that keep the instance busy slow themselves down before the door refuses them.
const (
	raiseAbove = 0.8
	raiseBits  = 2
)

// powRaise returns the bits a challenge issued now adds to its voucher's difficulty:
// raiseBits while the door holds more than raiseAbove of its limit, else 0.
func (a *Admission) powRaise() int {
	if limit := a.limit.Load(); a.max > 0 && float64(a.inflight.Load()) > raiseAbove*float64(limit) {
		return raiseBits
	}
	return 0
}

// challengeJSON is the answer of GET /api/v1/vouchers/{id}/challenge: a proof-of-work
// challenge ("challenge", "difficulty", "expires_at"), or with Turnstile the widget's
// settings ("sitekey", "action", "cdata").
type challengeJSON struct {
	Challenge  string `json:"challenge,omitempty"`
	Difficulty int    `json:"difficulty,omitempty"`
	ExpiresAt  *stamp `json:"expires_at,omitempty"`
	SiteKey    string `json:"sitekey,omitempty"`
	Action     string `json:"action,omitempty"`
	CData      string `json:"cdata,omitempty"`
}

// issueChallenge answers a fresh challenge for the caller on the voucher (or on a
// campaign's waiting room, for its join): 404 not_found for one that asks for none.
func (h handlers) issueChallenge(c echo.Context) error {
	id, err := roomID(c)
	if err != nil {
		return err
	}
	offer, err := h.offer(c, id, principal(c).User)
	if err != nil {
		return err
	}
	out := challengeJSON{Challenge: offer.Challenge, Difficulty: offer.Difficulty,
		SiteKey: offer.SiteKey, Action: offer.Action, CData: offer.CData}
	if !offer.ExpiresAt.IsZero() {
		out.ExpiresAt = optionalStamp(offer.ExpiresAt)
	}
	return c.JSON(http.StatusOK, out)
}

// offer issues a challenge for user on voucher id, as hard as the load makes it.
func (h handlers) offer(c echo.Context, id domain.VoucherID, user domain.UserID) (ports.ChallengeOffer, error) {
	if h.uc.IssueChallenge == nil {
		return ports.ChallengeOffer{}, domain.ErrNotFound
	}
	raise := h.door.powRaise()
	h.metrics.powRaise.Set(float64(raise))
	return h.uc.IssueChallenge.Handle(c.Request().Context(), application.IssueChallengeCmd{VoucherID: id, UserID: user, Raise: raise})
}

// withChallenge returns err, and when it is a refusal for want of a proof, that
// refusal with a fresh challenge for user on voucher id for its answer to carry. A
// challenge that cannot be issued leaves the refusal without one: the client asks
// GET …/challenge.
func (h handlers) withChallenge(c echo.Context, id domain.VoucherID, user domain.UserID, err error) error {
	if !errors.Is(err, domain.ErrChallengeRequired) {
		return err
	}
	if _, ok := errors.AsType[*challengeRequired](err); ok {
		return err
	}
	offer, ierr := h.offer(c, id, user)
	if ierr != nil {
		return err
	}
	return &challengeRequired{offer: offer}
}

// challengeRequired is domain.ErrChallengeRequired with the fresh challenge its answer
// carries.
type challengeRequired struct {
	offer ports.ChallengeOffer
}

func (e *challengeRequired) Error() string { return domain.ErrChallengeRequired.Error() }

// Is reports whether target is domain.ErrChallengeRequired.
func (e *challengeRequired) Is(target error) bool { return target == domain.ErrChallengeRequired }

// challengeRequiredMessage is the message of a 403 challenge_required.
const challengeRequiredMessage = "this voucher asks for a proof in " + PowHeader + ": answer the challenge (in this error, or from GET /api/v1/vouchers/{id}/challenge) and send the request again"

// detail is the error object of e's answer, with its challenge.
func (e *challengeRequired) detail() errorDetail {
	d := errorDetail{Code: "challenge_required", Message: challengeRequiredMessage,
		Challenge: e.offer.Challenge, Difficulty: e.offer.Difficulty,
		SiteKey: e.offer.SiteKey, Action: e.offer.Action, CData: e.offer.CData}
	if !e.offer.ExpiresAt.IsZero() {
		d.ExpiresAt = formatStamp(e.offer.ExpiresAt)
	}
	return d
}

// appendChallenge appends d's challenge fields as encoding/json writes them (see
// errorBody.appendJSON): in their order, each only when set (omitempty).
func (d errorDetail) appendChallenge(b []byte) []byte {
	b = appendStringField(b, "challenge", d.Challenge)
	if d.Difficulty != 0 {
		b = strconv.AppendInt(append(b, `,"difficulty":`...), int64(d.Difficulty), 10)
	}
	b = appendStringField(b, "expires_at", d.ExpiresAt)
	b = appendStringField(b, "sitekey", d.SiteKey)
	b = appendStringField(b, "action", d.Action)
	return appendStringField(b, "cdata", d.CData)
}

// appendStringField appends ,"name":value unless value is empty.
func appendStringField(b []byte, name, value string) []byte {
	if value == "" {
		return b
	}
	b = append(append(append(b, `,"`...), name...), `":`...)
	return appendJSONString(b, value)
}
