package redisstore

import (
	"context"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
)

// traceParent is the W3C traceparent of ctx's span through the process's propagator,
// "" when ctx carries none (tracing off: the propagator is a no-op or the span is not
// recording), so an untraced grab adds nothing to its entry.
func traceParent(ctx context.Context) string {
	carrier := propagation.MapCarrier{}
	otel.GetTextMapPropagator().Inject(ctx, carrier)
	return carrier.Get("traceparent")
}
