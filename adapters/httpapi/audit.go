package httpapi

import (
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"github.com/seckill/seckill/application"
	"github.com/seckill/seckill/domain"
)

// auditEntryJSON is the contract's audit log entry. voucher_id is null for a change of
// no voucher, campaign_id for a change of no campaign; before and after are objects,
// or null where there are none.
type auditEntryJSON struct {
	ID         string          `json:"id"`
	At         stamp           `json:"at"`
	Actor      string          `json:"actor"`
	Action     string          `json:"action"`
	VoucherID  *string         `json:"voucher_id"`
	CampaignID *string         `json:"campaign_id"`
	RequestID  string          `json:"request_id"`
	Before     json.RawMessage `json:"before"`
	After      json.RawMessage `json:"after"`
}

// auditListJSON is the contract's page of the audit log.
type auditListJSON struct {
	Entries    []auditEntryJSON `json:"entries"`
	NextCursor string           `json:"next_cursor,omitempty"`
}

func toAuditEntryJSON(e domain.AuditEntry) auditEntryJSON {
	out := auditEntryJSON{ID: strconv.FormatInt(e.ID, 10), At: stamp(e.At), Actor: e.Actor, Action: string(e.Action),
		RequestID: e.RequestID, Before: e.Before, After: e.After}
	if e.VoucherID != 0 {
		v := e.VoucherID.String()
		out.VoucherID = &v
	}
	if e.CampaignID != 0 {
		c := e.CampaignID.String()
		out.CampaignID = &c
	}
	if out.Before == nil {
		out.Before = json.RawMessage("null")
	}
	if out.After == nil {
		out.After = json.RawMessage("null")
	}
	return out
}

// listAudit answers a page of the audit log, newest first, ?voucher_id= filtering.
func (h handlers) listAudit(c echo.Context) error {
	voucher, limit, cursor, err := voucherPageParams(c)
	if err != nil {
		return err
	}
	page, err := h.uc.ListAudit.Handle(c.Request().Context(), application.ListAuditQuery{
		Voucher: voucher, Limit: limit, Cursor: cursor,
	})
	if err != nil {
		return err
	}
	out := auditListJSON{Entries: make([]auditEntryJSON, len(page.Entries)), NextCursor: page.NextCursor}
	for i, e := range page.Entries {
		out.Entries[i] = toAuditEntryJSON(e)
	}
	return c.JSON(http.StatusOK, out)
}
