package main

import (
	"time"

	"go.opentelemetry.io/otel"
	"go.uber.org/zap"

	"github.com/seckill/seckill/adapters/telemetry"
	"github.com/seckill/seckill/application"
	"github.com/seckill/seckill/ports"
)

// The fulfillment worker.

// fulfillOrder tells persisted (nil: nobody) each order it commits.
func fulfillOrder(orders ports.Orders, queue ports.Queue, compensate *application.Compensate, changes ports.Changes,
	persisted *application.PersistedOrders, cfg Config) *application.FulfillOrder {
	return application.NewFulfillOrder(orders, queue, compensate, persisted.Changes(changes), cfg.MaxDeliveries)
}

func workerOptions(cfg Config) application.WorkerOptions {
	return application.WorkerOptions{
		Batch:      cfg.BatchSize,
		Block:      readBlock,
		ClaimIdle:  cfg.ClaimIdle,
		ClaimEvery: max(cfg.ClaimIdle/4, time.Second),
		MinBackoff: 100 * time.Millisecond,
		MaxBackoff: 5 * time.Second,
	}
}

// workerObserver logs the worker's changes of health, once each, and every dead
// letter or delivery left pending.
func workerObserver(log *zap.Logger, m *metrics, cfg Common) application.WorkerObserver {
	o := application.WorkerObserver{
		Health: func(healthy bool, err error) {
			if healthy {
				log.Info("fulfillment recovered: persisting again")
				return
			}
			log.Error("fulfillment paused: a dependency is down; reservations stay pending and are retried with back-off", zap.Error(err))
		},
		Problem:   func(err error) { log.Warn("fulfillment", zap.Error(err)) },
		Fulfilled: m.fulfilled,
	}
	if cfg.tracing() {
		o.Persisting = telemetry.PersistSpans(otel.GetTracerProvider())
	}
	return o
}
