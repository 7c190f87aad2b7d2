package httpapi_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/extra/redisotel/v9"
	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/seckill/seckill/adapters/telemetry"
	"github.com/seckill/seckill/domain"
)

// One grab's trace reaches the span that persists it: the request's span (and its
// Redis call beneath it) carries a trace id that rides in the queue entry's "tp"
// field, and the worker's "fulfill batch" span links to it, with the batch's own Redis
// calls beneath that span.
func TestTraceRunsFromTheGrabToItsPersistSpan(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	prev := otel.GetTextMapPropagator()
	otel.SetTextMapPropagator(telemetry.Propagator())
	t.Cleanup(func() { otel.SetTextMapPropagator(prev); _ = tp.Shutdown(ctx) })

	a := newAPI(t, func(s *setup) { s.http.TracerProvider = tp })
	if err := redisotel.InstrumentTracing(a.redis, redisotel.WithTracerProvider(tp)); err != nil {
		t.Fatal(err)
	}
	id := a.createVoucher(5, 1)
	r := a.do(http.MethodPost, "/api/v1/vouchers/"+id+"/grab", a.token(7, false), "")
	if r.Status != http.StatusAccepted {
		t.Fatalf("grab: %d %s", r.Status, r.Raw)
	}
	order := r.Body["order_id"].(string)

	var grab *tracetest.SpanStub
	spans := exp.GetSpans()
	for i, s := range spans {
		if s.SpanKind.String() == "server" && strings.HasSuffix(s.Name, "/grab") {
			grab = &spans[i]
		}
	}
	if grab == nil {
		t.Fatalf("no server span for the grab among %d spans", len(spans))
	}
	traceID := grab.SpanContext.TraceID()
	if !hasSpan(spans, func(s tracetest.SpanStub) bool {
		return s.SpanContext.TraceID() == traceID && s.Parent.SpanID() == grab.SpanContext.SpanID() && s.SpanKind.String() == "client"
	}) {
		t.Fatalf("the grab's trace has no Redis call beneath its request span")
	}

	ds, err := a.queue.Read(ctx, 10, time.Millisecond)
	if err != nil || len(ds) != 1 || string(ds[0].Reservation.OrderID) != order {
		t.Fatalf("read %+v, %v: want order %s", ds, err, order)
	}
	if tpField := ds[0].TraceParent; !strings.Contains(tpField, traceID.String()) {
		t.Fatalf("the entry's traceparent %q does not name the grab's trace %s", tpField, traceID)
	}
	exp.Reset()
	pctx, done := telemetry.PersistSpans(tp)(ctx, ds)
	rep, err := a.fulfill.Handle(pctx, ds)
	done(err)
	if err != nil || rep.Persisted != 1 {
		t.Fatalf("persist: %+v, %v", rep, err)
	}
	spans = exp.GetSpans()
	var persist *tracetest.SpanStub
	for i, s := range spans {
		if s.Name == "fulfill batch" {
			persist = &spans[i]
		}
	}
	if persist == nil {
		t.Fatalf("no persist span among %d spans", len(spans))
	}
	linked := false
	for _, l := range persist.Links {
		linked = linked || l.SpanContext.TraceID() == traceID
	}
	if !linked {
		t.Fatalf("the persist span links to %v, not the grab's trace %s", persist.Links, traceID)
	}
	if !hasSpan(spans, func(s tracetest.SpanStub) bool { return s.Parent.SpanID() == persist.SpanContext.SpanID() }) {
		t.Fatal("the persist span has no child: its acknowledgement to Redis is not beneath it")
	}
	if got := a.do(http.MethodGet, "/api/v1/orders/"+order, a.token(7, false), ""); got.Body["status"] != string(domain.StatusAwaitingPayment) {
		t.Fatalf("order after persist: %d %s", got.Status, got.Raw)
	}
}

func hasSpan(spans []tracetest.SpanStub, match func(tracetest.SpanStub) bool) bool {
	for _, s := range spans {
		if match(s) {
			return true
		}
	}
	return false
}
