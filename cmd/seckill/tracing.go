package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"go.opentelemetry.io/otel"
	"go.uber.org/zap"

	"github.com/seckill/seckill/adapters/telemetry"
)

// tracing reports whether SECKILL_OTEL_EXPORTER turns traces on.
func (c Common) tracing() bool { return c.OtelExporter != "" && c.OtelExporter != "none" }

// startTracing installs the process's tracer provider and W3C propagator when
// SECKILL_OTEL_EXPORTER asks for traces, before the graph is built, so that the Redis
// and SQL instrumentation (which use the process's provider) and the API's find it.
// The returned function flushes the spans still buffered; call it at exit.
func startTracing(ctx context.Context, c Common, log *zap.Logger) (func(), error) {
	if !c.tracing() {
		return func() {}, nil
	}
	tp, err := telemetry.NewTracerProvider(ctx, c.OtelExporter, os.Stderr)
	if err != nil {
		return nil, fmt.Errorf("SECKILL_OTEL_EXPORTER: %w", err)
	}
	otel.SetTracerProvider(tp)
	otel.SetTextMapPropagator(telemetry.Propagator())
	log.Info("tracing on", zap.String("exporter", c.OtelExporter))
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := tp.Shutdown(ctx); err != nil {
			log.Warn("flush traces", zap.Error(err))
		}
	}, nil
}
