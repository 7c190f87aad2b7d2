package httpapi_test

import (
	"context"
	"errors"
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
	t.Parallel()
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

// At the info level the request lines of one route and status are sampled, so a flood
// does not write a line per request; 5xx answers are always logged.
func TestRequestLogIsSampledButNeverFor5xx(t *testing.T) {
	t.Parallel()
	core, logs := observer.New(zapcore.InfoLevel)
	down := []httpapi.Check{{Name: "redis", Ping: func(context.Context) error { return errors.New("down") }}}
	e := httpapi.New(httpapi.Options{BodyLimit: "4K", RequestTimeout: time.Second}, httpapi.UseCases{},
		httpapi.NewTokens([]byte(secret)), down, zap.New(core))
	count := func(path string, n int) int {
		for range n {
			e.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, path, nil))
		}
		lines := 0
		for _, l := range logs.TakeAll() {
			if l.Message == "request" {
				lines++
			}
		}
		return lines
	}
	// The sampler lets the first 10 a second through, then one in 100.
	if got := count("/healthz", 500); got < 10 || got >= 500 {
		t.Errorf("500 requests to /healthz wrote %d lines, want at least 10 and far fewer than 500", got)
	}
	if got := count("/readyz", 50); got != 50 {
		t.Errorf("50 answers of 503 wrote %d lines, want every one", got)
	}
}
