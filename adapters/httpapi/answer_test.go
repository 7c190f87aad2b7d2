package httpapi

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/labstack/echo/v4"
)

// encodingJSON is what Echo's c.JSON writes for v: encoding/json's Encoder output.
func encodingJSON(t testing.TB, v any) string {
	var b bytes.Buffer
	if err := json.NewEncoder(&b).Encode(v); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

var jsonStrings = []string{
	"", "sold_out", "01JDZ8Y6Q5K3W7M2N4P6R8T0VX", `quote " and backslash \`, "<script>&amp;</script>",
	"\x00\x01\b\f\n\r\t\x1f\x7f", "café ☕ \u200d", "\u2028\u2029", "bad \xff\xfe utf-8 \xe2\x82", "a\xc0\x80b",
}

// The hand-written answers are byte for byte what encoding/json writes for them.
func TestAnswersEncodeAsEncodingJSON(t *testing.T) {
	t.Parallel()
	for _, s := range jsonStrings {
		for _, v := range []jsonAnswer{
			grabResponse{OrderID: s, VoucherID: "42", Quantity: 3, Status: "queued"},
			grabResponse{VoucherID: s, Quantity: -1},
			errorBody{Error: errorDetail{Code: "sold_out", Message: s}},
			errorBody{Error: errorDetail{Code: s, Message: "m", OrderID: s, RequestID: s}},
			errorBody{Error: errorDetail{Code: "already_purchased", Message: "m", OrderID: s, OrderIDs: []string{s}, RequestID: s}},
			errorBody{Error: errorDetail{Code: "already_purchased", Message: s, OrderID: "a", OrderIDs: []string{"a", s, "c"}}},
			errorBody{Error: errorDetail{Code: "c", Message: "m", RequestID: s}},
			errorBody{Error: errorDetail{Code: "challenge_required", Message: "m", Challenge: s, Difficulty: 18,
				ExpiresAt: "2026-12-01T21:00:00.123Z", RequestID: s}},
			errorBody{Error: errorDetail{Code: "challenge_required", Message: s, SiteKey: s, Action: s, CData: s}},
		} {
			if got, want := string(append(v.appendJSON(nil), '\n')), encodingJSON(t, v); got != want {
				t.Errorf("%#v:\n got %q\nwant %q", v, got, want)
			}
		}
	}
}

func FuzzJSONString(f *testing.F) {
	for _, s := range jsonStrings {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := string(appendJSONString(nil, s))+"\n", encodingJSON(t, s); got != want {
			t.Fatalf("%q: got %q, want %q", s, got, want)
		}
	})
}

// answerJSON answers as c.JSON does: same status, Content-Type and body; with a query
// string (?pretty) it leaves the answer to c.JSON.
func TestAnswerJSONIsEchosJSON(t *testing.T) {
	t.Parallel()
	e := echo.New()
	v := grabResponse{OrderID: "o<1>", VoucherID: "7", Quantity: 1, Status: "queued"}
	for _, target := range []string{"/", "/?pretty", "/?x=1"} {
		answer := func(write func(c echo.Context) error) *httptest.ResponseRecorder {
			rec := httptest.NewRecorder()
			if err := write(e.NewContext(httptest.NewRequest(http.MethodPost, target, nil), rec)); err != nil {
				t.Fatal(err)
			}
			return rec
		}
		got := answer(func(c echo.Context) error { return answerJSON(c, http.StatusAccepted, v) })
		want := answer(func(c echo.Context) error { return c.JSON(http.StatusAccepted, v) })
		if got.Code != want.Code || got.Body.String() != want.Body.String() ||
			got.Header().Get(echo.HeaderContentType) != want.Header().Get(echo.HeaderContentType) {
			t.Errorf("%s: got %d %q %q, want %d %q %q", target, got.Code, got.Header(), got.Body, want.Code, want.Header(), want.Body)
		}
	}
}
