package httpapi

import (
	"strconv"
	"sync"
	"unicode/utf8"

	"github.com/labstack/echo/v4"
)

// jsonAnswer is an answer body the hot paths (a grab's 202, every error) encode by
// hand, into exactly the bytes encoding/json writes for it.
type jsonAnswer interface {
	appendJSON(b []byte) []byte
}

// answerJSON answers status with v as c.JSON would — the same Content-Type, the same
// bytes (encoding/json's, newline included) in one write — without its costs per
// answer: an encoder, v's boxing and reflection, and the parsing of the query string
// for ?pretty. A request with a query string, or an Echo in debug mode, is answered by
// c.JSON itself, which may indent.
func answerJSON[T jsonAnswer](c echo.Context, status int, v T) error {
	if c.Request().URL.RawQuery != "" || c.Echo().Debug {
		return c.JSON(status, v)
	}
	h := c.Response().Header()
	if ct := h[echo.HeaderContentType]; len(ct) == 0 || ct[0] == "" {
		h[echo.HeaderContentType] = []string{echo.MIMEApplicationJSON}
	}
	buf := answerBuffers.Get().(*[]byte)
	defer answerBuffers.Put(buf)
	*buf = append(v.appendJSON((*buf)[:0]), '\n')
	c.Response().Status = status
	_, err := c.Response().Write(*buf)
	return err
}

// answerBuffers hold the bytes of answers being written.
var answerBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 256); return &b }}

func (r grabResponse) appendJSON(b []byte) []byte {
	b = append(b, `{"order_id":`...)
	b = appendJSONString(b, r.OrderID)
	b = append(b, `,"voucher_id":`...)
	b = appendJSONString(b, r.VoucherID)
	b = append(b, `,"quantity":`...)
	b = strconv.AppendInt(b, int64(r.Quantity), 10)
	b = append(b, `,"status":`...)
	b = appendJSONString(b, string(r.Status))
	return append(b, '}')
}

func (e errorBody) appendJSON(b []byte) []byte {
	d := e.Error
	b = append(b, `{"error":{"code":`...)
	b = appendJSONString(b, d.Code)
	b = append(b, `,"message":`...)
	b = appendJSONString(b, d.Message)
	if d.OrderID != "" {
		b = append(b, `,"order_id":`...)
		b = appendJSONString(b, d.OrderID)
	}
	if len(d.OrderIDs) > 0 {
		b = append(b, `,"order_ids":[`...)
		for i, id := range d.OrderIDs {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSONString(b, id)
		}
		b = append(b, ']')
	}
	b = d.appendChallenge(b)
	if d.RequestID != "" {
		b = append(b, `,"request_id":`...)
		b = appendJSONString(b, d.RequestID)
	}
	return append(b, "}}"...)
}

// jsonSafe holds the ASCII characters appendJSONString copies as they are.
var jsonSafe = func() (safe [utf8.RuneSelf]bool) {
	for c := ' '; c < utf8.RuneSelf; c++ {
		safe[c] = c != '"' && c != '\\' && c != '<' && c != '>' && c != '&'
	}
	return safe
}()

// appendJSONString appends s as a JSON string exactly as encoding/json's Encoder writes
// it: <, > and & escaped (as \u003c, \u003e, \u0026), control characters as \b \f \n
// \r \t or \u00XX, invalid UTF-8 as \ufffd, and U+2028 and U+2029 escaped.
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if jsonSafe[c] {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '\\', '"':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
