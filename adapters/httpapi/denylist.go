package httpapi

import (
	"net/http"

	"github.com/labstack/echo/v4"
	"go.uber.org/zap"

	"github.com/seckill/seckill/application"
	"github.com/seckill/seckill/domain"
)

// denyRequest is the optional body of PUT /api/v1/denylist/{user_id}.
type denyRequest struct {
	Reason *string `json:"reason"`
}

// denialJSON is the contract's entry of the deny list.
type denialJSON struct {
	UserID string `json:"user_id"`
	Reason string `json:"reason"`
	At     stamp  `json:"at"`
}

// denialListJSON is the contract's page of the deny list.
type denialListJSON struct {
	Users      []denialJSON `json:"users"`
	NextCursor string       `json:"next_cursor,omitempty"`
}

// deniedUser reads the path's user id: a *domain.ValidationError on user_id.
func deniedUser(c echo.Context) (domain.UserID, error) {
	u, err := domain.ParseUserID(c.Param("user_id"))
	if err != nil {
		return 0, domain.Invalid("user_id", "must be a positive integer")
	}
	return u, nil
}

// noContent is the answer to a change of the deny list: 204, no body.
func noContent[T any](T) (int, []byte, error) { return http.StatusNoContent, nil, nil }

// denyUser puts a user on the deny list, or changes its reason, and answers 204.
func (h handlers) denyUser(c echo.Context) error {
	user, err := deniedUser(c)
	if err != nil {
		return err
	}
	var req denyRequest
	if err := decodeJSON(c, &req, true); err != nil {
		return err
	}
	d := domain.Denial{User: user}
	if req.Reason != nil {
		d.Reason = *req.Reason
	}
	change, err := h.uc.DenyUser.Handle(c.Request().Context(), application.DenyUserCmd{
		Denial: d, By: author(c), Receipt: receiptFor(c, noContent[domain.Denial]),
	})
	if err != nil {
		return err
	}
	h.warnUnannounced(change)
	return c.NoContent(http.StatusNoContent)
}

// allowUser takes a user off the deny list (a user not listed is no error) and
// answers 204.
func (h handlers) allowUser(c echo.Context) error {
	user, err := deniedUser(c)
	if err != nil {
		return err
	}
	change, err := h.uc.AllowUser.Handle(c.Request().Context(), application.AllowUserCmd{
		User: user, By: author(c), Receipt: receiptFor(c, noContent[domain.UserID]),
	})
	if err != nil {
		return err
	}
	h.warnUnannounced(change)
	return c.NoContent(http.StatusNoContent)
}

// warnUnannounced logs a change of the deny list the other instances were not told of:
// they see it at their next periodic reload.
func (h handlers) warnUnannounced(change application.DenyListChange) {
	if change.Unannounced != nil {
		h.log.Warn("deny list changed; other instances see it at their next reload", zap.String("user", change.Denial.User.String()),
			zap.Error(change.Unannounced))
	}
	if change.Undropped != nil {
		h.log.Warn("user denied but not taken off its waitlists; deny it again to retry", zap.String("user", change.Denial.User.String()),
			zap.Error(change.Undropped))
	}
}

// listDenied answers a page of the deny list, by user id.
func (h handlers) listDenied(c echo.Context) error {
	limit, cursor, err := pageParams(c)
	if err != nil {
		return err
	}
	page, err := h.uc.ListDenied.Handle(c.Request().Context(), application.ListDeniedQuery{Limit: limit, Cursor: cursor})
	if err != nil {
		return err
	}
	out := denialListJSON{Users: make([]denialJSON, len(page.Denials)), NextCursor: page.NextCursor}
	for i, d := range page.Denials {
		out.Users[i] = denialJSON{UserID: d.User.String(), Reason: d.Reason, At: stamp(d.At)}
	}
	return c.JSON(http.StatusOK, out)
}
