package httpapi

import (
	"math/rand/v2"

	"github.com/labstack/echo/v4"
)

// assignRequestID gives each request the id its caller sent in X-Request-Id, or a new
// random one, and answers with it in the same header, as Echo's RequestID middleware
// does, with one allocation for a new id where that one makes three.
func assignRequestID(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		// Header keys are canonical (as net/http stores them), so the maps are read
		// and written directly, as Get and Set would after canonicalizing the key.
		var rid string
		if v := c.Request().Header[echo.HeaderXRequestID]; len(v) > 0 {
			rid = v[0]
		}
		if rid == "" {
			rid = newRequestID()
		}
		c.Response().Header()[echo.HeaderXRequestID] = []string{rid}
		return next(c)
	}
}

// requestIDChars are the characters of a new request id (Echo's own: letters).
const requestIDChars = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

// newRequestID returns 32 characters drawn uniformly from requestIDChars: six random
// bits at a time (ten from each random 64), a draw past the alphabet thrown away.
// Request ids name requests for support; they guard nothing, so the runtime's fast
// generator is enough.
func newRequestID() string {
	var id [32]byte
	for n := 0; n < len(id); {
		r := rand.Uint64()
		for range 10 {
			if i := r & 63; i < uint64(len(requestIDChars)) && n < len(id) {
				id[n] = requestIDChars[i]
				n++
			}
			r >>= 6
		}
	}
	return string(id[:])
}
