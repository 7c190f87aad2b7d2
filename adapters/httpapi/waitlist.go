package httpapi

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/seckill/seckill/application"
	"github.com/seckill/seckill/domain"
)

// waitlistRoute is the path of a voucher's waitlist: POST joins it, GET reads the
// caller's position, DELETE leaves it.
const waitlistRoute = "/api/v1/vouchers/:id/waitlist"

// waitlistRoutes adds the waitlist's routes through route: the writes behind userOnce
// (a user, Idempotency-Key kept), the read behind auth.
func waitlistRoutes(route func(method, path string, h echo.HandlerFunc, m ...echo.MiddlewareFunc), h handlers,
	userOnce []echo.MiddlewareFunc, auth echo.MiddlewareFunc) {
	route(http.MethodPost, waitlistRoute, h.joinWaitlist, userOnce...)
	route(http.MethodGet, waitlistRoute, h.waitlistPosition, auth)
	route(http.MethodDelete, waitlistRoute, h.leaveWaitlist, userOnce...)
}

// positionJSON is the contract's answer of a waitlist join or read.
type positionJSON struct {
	Position int `json:"position"`
}

// joinWaitlist puts the caller on a sold-out voucher's waitlist (or finds it there)
// and answers 202 with its position. The body, when sent, is an empty object.
func (h handlers) joinWaitlist(c echo.Context) error {
	id, err := domain.ParseVoucherID(c.Param("id"))
	if err != nil {
		return err
	}
	var req struct{}
	if err := decodeJSON(c, &req, true); err != nil {
		return err
	}
	pos, err := h.uc.JoinWaitlist.Handle(c.Request().Context(), application.WaitlistCmd{VoucherID: id, UserID: principal(c).User})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusAccepted, positionJSON{Position: pos})
}

// waitlistPosition answers the caller's position on a voucher's waitlist, or 404
// not_found when it is not on it.
func (h handlers) waitlistPosition(c echo.Context) error {
	id, err := domain.ParseVoucherID(c.Param("id"))
	if err != nil {
		return err
	}
	pos, err := h.uc.WaitlistPosition.Handle(c.Request().Context(), application.WaitlistCmd{VoucherID: id, UserID: principal(c).User})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, positionJSON{Position: pos})
}

// leaveWaitlist takes the caller off a voucher's waitlist (one not on it is no error)
// and answers 204.
func (h handlers) leaveWaitlist(c echo.Context) error {
	id, err := domain.ParseVoucherID(c.Param("id"))
	if err != nil {
		return err
	}
	if err := h.uc.LeaveWaitlist.Handle(c.Request().Context(), application.WaitlistCmd{VoucherID: id, UserID: principal(c).User}); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}
