package httpapi_test

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/seckill/seckill/adapters/httpapi"
)

// The request log line carries the status the client got, also when a handler or a
// middleware answered with an error.
func TestRequestLogHasTheAnsweredStatus(t *testing.T) {
	core, logs := observer.New(zapcore.InfoLevel)
	tokens := httpapi.NewTokens([]byte(secret))
	e := httpapi.New(httpapi.Options{BodyLimit: "4K", RequestTimeout: time.Second}, httpapi.UseCases{}, tokens, nil, zap.New(core))
	user, err := tokens.Mint(7, false, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		method, path, token string
		want                int
	}{
		{http.MethodGet, "/healthz", "", http.StatusOK},
		{http.MethodGet, "/api/v1/orders", "", http.StatusUnauthorized},
		{http.MethodGet, "/api/v1/orders/not-an-order-id", user, http.StatusBadRequest},
		{http.MethodPost, "/api/v1/vouchers", user, http.StatusForbidden},
		{http.MethodGet, "/no/such/path", "", http.StatusNotFound},
	} {
		req := httptest.NewRequest(tc.method, tc.path, nil)
		if tc.token != "" {
			req.Header.Set("Authorization", "Bearer "+tc.token)
		}
		rec := httptest.NewRecorder()
		e.ServeHTTP(rec, req)
		var lines []observer.LoggedEntry
		for _, l := range logs.TakeAll() {
			if l.Message == "request" {
				lines = append(lines, l)
			}
		}
		if rec.Code != tc.want || len(lines) != 1 {
			t.Fatalf("%s %s answered %d with %d log lines, want %d and one line", tc.method, tc.path, rec.Code, len(lines), tc.want)
		}
		if got := lines[0].ContextMap()["status"]; got != int64(tc.want) {
			t.Errorf("%s %s logged status %v, answered %d", tc.method, tc.path, got, tc.want)
		}
	}
}
