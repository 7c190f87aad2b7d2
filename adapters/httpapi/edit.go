package httpapi

import (
	"errors"
	"net/http"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/labstack/echo/v4"

	"github.com/seckill/seckill/application"
	"github.com/seckill/seckill/domain"
)

// editVoucherRequest is the body of PATCH /api/v1/vouchers/{id}: each member given is
// a change; a member given null is as good as absent.
type editVoucherRequest struct {
	AddUnits     *int       `json:"add_units"`
	RemoveUnits  *int       `json:"remove_units"`
	BeginsAt     *time.Time `json:"begins_at"`
	EndsAt       endsAt     `json:"ends_at"`
	PerUserLimit *int       `json:"per_user_limit"`
	Title        *string    `json:"title"`
}

// endsAt is the ends_at of an edit: an RFC 3339 time, or "now" (the service's time,
// so that a script ends a sale without reading the service's clock first); null is
// as good as absent.
type endsAt struct {
	at  *time.Time
	now bool
}

// UnmarshalJSON reads "now", a time or null.
func (e *endsAt) UnmarshalJSON(b []byte) error {
	if string(b) == `"now"` {
		*e = endsAt{now: true}
		return nil
	}
	var t *time.Time
	if json.Unmarshal(b, &t) != nil {
		// Not the time's own error: the answer names what ends_at takes (describeType).
		return errNotEndsAt
	}
	*e = endsAt{at: t}
	return nil
}

// errNotEndsAt refuses an ends_at that is neither a time, "now" nor null.
var errNotEndsAt = errors.New(`ends_at: not a time or "now"`)

// editVoucher changes a voucher's sale and answers 200 with the voucher as the change
// left it; under an idempotency key the answer is kept with the change.
func (h handlers) editVoucher(c echo.Context) error {
	id, err := domain.ParseVoucherID(c.Param("id"))
	if err != nil {
		return err
	}
	var req editVoucherRequest
	if err := decodeJSON(c, &req, false); err != nil {
		return err
	}
	v, err := h.uc.EditVoucher.Handle(c.Request().Context(), application.EditVoucherCmd{
		Voucher: id,
		Edit: domain.VoucherEdit{AddUnits: req.AddUnits, RemoveUnits: req.RemoveUnits, BeginsAt: req.BeginsAt,
			EndsAt: req.EndsAt.at, PerUserLimit: req.PerUserLimit, Title: req.Title},
		EndNow:  req.EndsAt.now,
		By:      author(c),
		Receipt: receiptFor(c, editedVoucher),
	})
	if err != nil {
		return err
	}
	// Stored, so changed: the periodic warm-up carries the new terms to the
	// grab path (it finds its sale state's version behind).
	return h.answerStored(c, v, "voucher changed; its sale state takes the new terms later", editedVoucher)
}

// editedVoucher is the answer to a change of voucher v: 200 with the voucher.
func editedVoucher(v application.LiveVoucher) (int, []byte, error) {
	return rendered(http.StatusOK, toVoucherJSON(v))
}

// maxAuditRequestID bounds the request id an audit entry keeps: a caller may send its
// own X-Request-Id, of any length its headers allow.
const maxAuditRequestID = 255

// author is who makes an admin change through the API: the caller's user id, and the
// request id the caller is answered with.
func author(c echo.Context) domain.Author {
	rid := requestID(c)
	if len(rid) > maxAuditRequestID {
		rid = rid[:maxAuditRequestID]
	}
	return domain.Author{Actor: principal(c).User.String(), RequestID: rid}
}
