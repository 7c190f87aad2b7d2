package httpapi

import (
	"net/http"
	"time"

	"github.com/labstack/echo/v4"
)

// timeJSON is the contract's answer of GET /api/v1/time: the sale's clock now.
type timeJSON struct {
	// Now is the time in RFC 3339 with milliseconds, always three digits, UTC.
	Now string `json:"now"`
	// UnixMS is the same instant in Unix milliseconds.
	UnixMS int64 `json:"unix_ms"`
}

// millisRFC3339 is RFC 3339 with exactly three digits of fraction.
const millisRFC3339 = "2006-01-02T15:04:05.000Z07:00"

// tellTime answers the sale's clock, the one every sale is judged by, so a client
// measures its own clock's offset from it (half the round trip is the error) and
// counts down by it rather than by its own. It is never cached.
func (h handlers) tellTime(c echo.Context) error {
	ms := h.clock.Now().UnixMilli()
	c.Response().Header().Set("Cache-Control", "no-store")
	return c.JSON(http.StatusOK, timeJSON{Now: time.UnixMilli(ms).UTC().Format(millisRFC3339), UnixMS: ms})
}
