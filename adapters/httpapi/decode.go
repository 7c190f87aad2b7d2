package httpapi

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/labstack/echo/v4"

	"github.com/seckill/seckill/application"
	"github.com/seckill/seckill/domain"
)

// decodeJSON reads exactly one JSON object into dst, strictly: member names match the
// struct tags exactly (case-sensitive), an unknown or repeated member, invalid UTF-8,
// a number that is not an integer where one is wanted and any data after the object
// are refused. With optional, an empty body leaves dst as it is. Malformed input is a
// *domain.ValidationError on "body" or on the member at fault; a body over the limit
// keeps Echo's 413.
func decodeJSON(c echo.Context, dst any, optional bool) error {
	body, err := requestBody(c)
	if err != nil {
		return err
	}
	return decodeBody(body, dst, optional)
}

// requestBody reads the whole request body. A body over the limit keeps Echo's 413;
// one that cannot be read is a *domain.ValidationError on "body"; a body whose
// Content-Type names another media type than JSON is errUnsupportedMediaType (415).
func requestBody(c echo.Context) ([]byte, error) {
	r := c.Request().Body
	if r == nil || r == http.NoBody {
		return nil, nil
	}
	body, err := io.ReadAll(r)
	if err != nil {
		if he, ok := errors.AsType[*echo.HTTPError](err); ok {
			return nil, he
		}
		return nil, domain.Invalid("body", "could not be read")
	}
	if len(body) > 0 && !jsonMedia(c.Request().Header.Get(echo.HeaderContentType)) {
		return nil, errUnsupportedMediaType
	}
	return body, nil
}

// errUnsupportedMediaType refuses a body sent as something other than JSON.
var errUnsupportedMediaType = errors.New("a request body must be JSON (Content-Type: application/json)")

// jsonMedia reports whether a body of Content-Type contentType is read as JSON:
// application/json or a type with a +json suffix, with any parameters, or no
// Content-Type at all (RFC 9110 lets the recipient look at the data then).
func jsonMedia(contentType string) bool {
	if contentType == "" {
		return true
	}
	t, _, err := mime.ParseMediaType(contentType)
	return err == nil && (t == echo.MIMEApplicationJSON || strings.HasPrefix(t, "application/") && strings.HasSuffix(t, "+json"))
}

// decodeBody is decodeJSON on a body already read.
func decodeBody(body []byte, dst any, optional bool) error {
	trimmed := bytes.TrimLeft(body, " \t\r\n")
	if len(trimmed) == 0 {
		if optional {
			return nil
		}
		return domain.Invalid("body", "a JSON object is required")
	}
	// A top-level null would decode into nothing at all; only an object is a request.
	if trimmed[0] != '{' {
		return domain.Invalid("body", "must be a JSON object")
	}
	// The default options of this decoder are the strict ones: exact names, no
	// duplicates, valid UTF-8, one value. Unknown members are refused on top.
	if err := json.Unmarshal(body, dst, json.RejectUnknownMembers(true)); err != nil {
		return describeJSONError(err)
	}
	return nil
}

// describeJSONError turns a decoding error into a *domain.ValidationError whose
// message names only the input, never a Go type.
func describeJSONError(err error) error {
	var syn *jsontext.SyntacticError
	var sem *json.SemanticError
	switch {
	case errors.As(err, &syn) && errors.Is(syn.Err, jsontext.ErrDuplicateName):
		return domain.Invalid(syn.JSONPointer.LastToken(), "appears more than once")
	case errors.Is(err, io.ErrUnexpectedEOF):
		return domain.Invalid("body", "truncated JSON")
	case errors.As(err, &syn):
		return domain.Invalid("body", fmt.Sprintf("malformed JSON at byte %d", syn.ByteOffset))
	case errors.As(err, &sem) && errors.Is(sem.Err, json.ErrUnknownName):
		return domain.Invalid(sem.JSONPointer.LastToken(), "is not a known field (names are case-sensitive)")
	case errors.As(err, &sem) && sem.JSONPointer != "":
		return domain.Invalid(sem.JSONPointer.LastToken(), "must be "+describeType(sem.GoType))
	}
	return domain.Invalid("body", "must be a JSON object")
}

var timeType = reflect.TypeFor[time.Time]()

// describeType names what a JSON value must be to decode into t.
func describeType(t reflect.Type) string {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case t == nil:
		return "a value of the right type"
	case t == timeType:
		return "an RFC 3339 time, e.g. 2026-11-29T12:00:00Z"
	case t == reflect.TypeFor[endsAt]():
		return `an RFC 3339 time, e.g. 2026-11-29T12:00:00Z, or "now"`
	case t.Kind() >= reflect.Int && t.Kind() <= reflect.Int64:
		return "a whole number in range"
	case t.Kind() == reflect.String:
		return "a string"
	}
	return "a value of the right type"
}

// strictQuery refuses a query string Go's parser rejects (a bad %-escape, a ';') or
// that repeats a parameter: Echo would silently drop or pick one, and a request like
// ?voucher_id=1;DROP would quietly lose its filter. A handler validates the values of
// the parameters it reads; the others are ignored, as HTTP allows.
func strictQuery(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if err := checkQuery(c.Request().URL.RawQuery); err != nil {
			return err
		}
		return next(c)
	}
}

// checkQuery returns a *domain.ValidationError when raw is not a well-formed query
// string with each parameter at most once.
func checkQuery(raw string) error {
	if raw == "" {
		return nil // most requests, the grab among them: nothing to parse
	}
	values, err := url.ParseQuery(raw)
	if err != nil {
		return domain.Invalid("query", "malformed query string")
	}
	for name, vs := range values {
		if len(vs) > 1 {
			return domain.Invalid(name, "must be given at most once")
		}
	}
	return nil
}

// voucherPageParams reads a list's page (pageParams) and its filter by voucher,
// ?voucher_id=: the zero id when it is absent; given, even empty, it must be an id.
// strictQuery has refused a malformed or repeated parameter already.
func voucherPageParams(c echo.Context) (voucher domain.VoucherID, limit int, cursor string, err error) {
	if s, given := c.QueryParams()["voucher_id"]; given {
		if voucher, err = domain.ParseVoucherID(s[0]); err != nil {
			return 0, 0, "", domain.Invalid("voucher_id", "must be a positive integer")
		}
	}
	limit, cursor, err = pageParams(c)
	return voucher, limit, cursor, err
}

// pageParams reads the paging parameters of a list: ?limit= (a canonical decimal from
// 1 to application.MaxPageLimit; absent, 0 tells the use case to take its default)
// and ?cursor= (absent for the first page; the use case judges its value). A
// parameter given empty is refused: it names no page. strictQuery has refused a
// repeated one already.
func pageParams(c echo.Context) (limit int, cursor string, err error) {
	params := c.QueryParams()
	if s, given := params["limit"]; given {
		n, err := strconv.Atoi(s[0])
		if err != nil || n < 1 || n > application.MaxPageLimit || strconv.Itoa(n) != s[0] {
			return 0, "", domain.Invalid("limit", "must be an integer from 1 to "+strconv.Itoa(application.MaxPageLimit))
		}
		limit = n
	}
	if s, given := params["cursor"]; given {
		if s[0] == "" {
			return 0, "", domain.Invalid("cursor", "must not be empty: leave it out for the first page")
		}
		cursor = s[0]
	}
	return limit, cursor, nil
}
