//go:build wireinject

package main

import (
	"context"

	"github.com/google/wire"
	"go.uber.org/zap"

	"github.com/seckill/seckill/adapters/redisstore"
	"github.com/seckill/seckill/application"
)

// buildApp assembles serve's object graph.
func buildApp(ctx context.Context, cfg Config, log *zap.Logger) (*app, func(), error) {
	wire.Build(commonSet, redisSet, databaseSet, serveRepositorySet, systemSet, applicationSet, challengeSet, metricsSet, httpSet,
		configuredStrategy, strategySet, wire.Struct(new(app), "*"))
	return nil, nil, nil
}

// buildReconcile assembles what `seckill reconcile` needs.
func buildReconcile(ctx context.Context, cfg Common, log *zap.Logger) (*application.Reconcile, func(), error) {
	wire.Build(
		redisstore.NewRestarts, inProcessRedis, openRedis, stockOptions, redisstore.NewStock, redisstore.NewAudit,
		configuredStrategy, strategySet,
		databaseSet, plainRepositorySet, systemSet, newMetrics, compensate, recoverVoucher, reconcile, noPaymentWindow,
	)
	return nil, nil, nil
}
