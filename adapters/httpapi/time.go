package httpapi

import (
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/seckill/seckill/domain"
)

// timeJSON is the contract's answer of GET /api/v1/time: the sale's clock now.
type timeJSON struct {
	// Now is the time in RFC 3339 with milliseconds, always three digits, UTC.
	Now string `json:"now"`
	// UnixMS is the same instant in Unix milliseconds.
	UnixMS int64 `json:"unix_ms"`
}

// millisRFC3339 is RFC 3339 with exactly three digits of fraction.
const millisRFC3339 = domain.StampLayout

// stamp is a time as every answer writes it (the v1.3 contract, "Time"): RFC 3339 in
// UTC with exactly three fractional digits, "2026-12-04T13:39:19.700Z", so parsers of
// one fixed pattern read every time the service writes.
type stamp time.Time

// MarshalJSON writes the time as a JSON string of millisRFC3339 in UTC.
func (s stamp) MarshalJSON() ([]byte, error) {
	return []byte(`"` + formatStamp(time.Time(s)) + `"`), nil
}

// UnmarshalJSON reads an RFC 3339 time, so the answers' types decode what they
// encode (the tests and seckill-lab read them back).
func (s *stamp) UnmarshalJSON(b []byte) error {
	var t time.Time
	if err := t.UnmarshalJSON(b); err != nil {
		return err
	}
	*s = stamp(t)
	return nil
}

// formatStamp is t as a stamp spells it, for the places that write text (CSV).
func formatStamp(t time.Time) string { return t.UTC().Format(millisRFC3339) }

// optionalStamp is t as a stamp, or nil (left out, or null) when it is zero.
func optionalStamp(t time.Time) *stamp {
	if t.IsZero() {
		return nil
	}
	s := stamp(t)
	return &s
}

// tellTime answers the sale's clock, the one every sale is judged by, so a client
// measures its own clock's offset from it (half the round trip is the error) and
// counts down by it rather than by its own. It is never cached.
func (h handlers) tellTime(c echo.Context) error {
	ms := h.clock.Now().UnixMilli()
	c.Response().Header().Set("Cache-Control", "no-store")
	return c.JSON(http.StatusOK, timeJSON{Now: formatStamp(time.UnixMilli(ms)), UnixMS: ms})
}
