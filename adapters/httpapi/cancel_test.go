package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/seckill/seckill/adapters/testenv"
)

// TestClientCancellationIsNoError: a request whose client disconnects while a use
// case waits is no failure: it is logged at debug, recorded as 499, never 500.
func TestClientCancellationIsNoError(t *testing.T) {
	t.Parallel()
	core, logs := observer.New(zapcore.DebugLevel)
	log := zap.New(core)
	e := echo.New()
	e.HTTPErrorHandler = errorHandler(log)
	e.Use(NewMetrics(prometheus.NewRegistry()).observe(func() map[string]bool { return nil }, &requestLogger{log: log}))
	waiting := make(chan struct{})
	e.GET("/slow", func(c echo.Context) error {
		close(waiting)
		<-c.Request().Context().Done()
		// As a store wraps the failure of its call.
		return fmt.Errorf("list orders: %w", c.Request().Context().Err())
	})
	srv := httptest.NewServer(e)
	t.Cleanup(srv.Close)

	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/slow", nil)
	done := make(chan error, 1)
	go func() {
		res, err := http.DefaultClient.Do(req)
		if err == nil {
			_ = res.Body.Close()
		}
		done <- err
	}()
	<-waiting
	cancel()
	if err := <-done; err == nil {
		t.Fatal("the cancelled request got an answer")
	}
	testenv.Eventually(t, 3*testenv.Patience, "the request logged", func() (bool, string) {
		return logs.FilterMessage("request").Len() > 0, ""
	})
	lines := logs.FilterMessage("request").All()
	if len(lines) != 1 {
		t.Fatalf("request log lines: %d, want 1", len(lines))
	}
	if got := lines[0].ContextMap()["status"]; got != int64(StatusClientClosedRequest) {
		t.Fatalf("logged status %v, want %d", got, StatusClientClosedRequest)
	}
	if n := logs.FilterLevelExact(zapcore.ErrorLevel).Len(); n != 0 {
		t.Fatalf("%d error lines for a client that left: %v", n, logs.FilterLevelExact(zapcore.ErrorLevel).All())
	}
	if logs.FilterMessage("request cancelled by the client").FilterLevelExact(zapcore.DebugLevel).Len() != 1 {
		t.Fatalf("no debug line for the cancelled request: %v", logs.All())
	}
}

// TestDeadlineIsStillUnavailable: a request that outlives its own deadline, with the
// client still there, is answered 503 as before.
func TestDeadlineIsStillUnavailable(t *testing.T) {
	t.Parallel()
	e := echo.New()
	e.HTTPErrorHandler = errorHandler(zap.NewNop())
	e.GET("/slow", func(c echo.Context) error {
		ctx, cancel := context.WithTimeout(c.Request().Context(), time.Millisecond)
		defer cancel()
		<-ctx.Done()
		return ctx.Err()
	})
	rec := httptest.NewRecorder()
	e.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/slow", nil))
	if rec.Code != http.StatusServiceUnavailable {
		t.Fatalf("status %d, want 503", rec.Code)
	}
}
