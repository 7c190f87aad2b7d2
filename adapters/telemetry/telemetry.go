// Package telemetry sets up OpenTelemetry tracing for seckill and ties the fulfillment
// of a reservation to the grab that made it: the grab's trace context rides in its
// queue entry, and the span that persists a batch links to the grab of each entry.
package telemetry

import (
	"context"
	"fmt"
	"io"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/seckill/seckill/ports"
)

// Exporters are the values SECKILL_OTEL_EXPORTER accepts.
var Exporters = []string{"none", "stdout", "otlp"}

// NewTracerProvider returns a tracer provider exporting in batches to exporter:
// "stdout" writes each span as JSON to w, "otlp" sends them over OTLP/HTTP to the
// endpoint the standard OTEL_EXPORTER_OTLP_ENDPOINT (or _TRACES_ENDPOINT) names,
// localhost:4318 by default. "none" returns nil: no tracing. Shut the provider down
// to flush what is buffered.
func NewTracerProvider(ctx context.Context, exporter string, w io.Writer) (*sdktrace.TracerProvider, error) {
	var exp sdktrace.SpanExporter
	var err error
	switch exporter {
	case "", "none":
		return nil, nil
	case "stdout":
		exp, err = stdouttrace.New(stdouttrace.WithWriter(w))
	case "otlp":
		exp, err = otlptracehttp.New(ctx)
	default:
		return nil, fmt.Errorf("unknown trace exporter %q (want none, stdout or otlp)", exporter)
	}
	if err != nil {
		return nil, fmt.Errorf("%s trace exporter: %w", exporter, err)
	}
	res, err := resource.Merge(resource.Default(),
		resource.NewSchemaless(attribute.String("service.name", "seckill")))
	if err != nil {
		return nil, fmt.Errorf("trace resource: %w", err)
	}
	return sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res)), nil
}

// Propagator is the W3C trace context propagator the service uses, over HTTP and in
// queue entries.
func Propagator() propagation.TextMapPropagator { return propagation.TraceContext{} }

// PersistSpans returns a hook for the fulfillment worker (application.WorkerObserver's
// Persisting): each attempt to persist a batch runs in a span "fulfill batch" — so its
// SQL statements and Redis calls are its children — linked to the trace of every
// grab whose entry carries one.
func PersistSpans(tp trace.TracerProvider) func(context.Context, []ports.Delivery) (context.Context, func(error)) {
	tracer := tp.Tracer("github.com/seckill/seckill/adapters/telemetry")
	prop := Propagator()
	return func(ctx context.Context, ds []ports.Delivery) (context.Context, func(error)) {
		links := make([]trace.Link, 0, len(ds))
		for _, d := range ds {
			if d.TraceParent == "" {
				continue
			}
			grab := trace.SpanContextFromContext(prop.Extract(context.Background(),
				propagation.MapCarrier{"traceparent": d.TraceParent}))
			if grab.IsValid() {
				links = append(links, trace.Link{SpanContext: grab, Attributes: []attribute.KeyValue{
					attribute.String("seckill.order_id", string(d.Reservation.OrderID)),
				}})
			}
		}
		ctx, span := tracer.Start(ctx, "fulfill batch", trace.WithLinks(links...),
			trace.WithAttributes(attribute.Int("seckill.batch.size", len(ds))))
		return ctx, func(err error) {
			if err != nil {
				span.RecordError(err)
				span.SetStatus(codes.Error, "persist batch")
			}
			span.End()
		}
	}
}
