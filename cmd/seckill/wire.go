//go:build wireinject

package main

import (
	"context"

	"github.com/google/wire"
	"go.uber.org/zap"

	"github.com/seckill/seckill/adapters/redisstore"
	"github.com/seckill/seckill/application"
	"github.com/seckill/seckill/ports"
)

// buildApp assembles serve's object graph.
func buildApp(ctx context.Context, cfg Config, log *zap.Logger) (*app, func(), error) {
	wire.Build(commonSet, redisSet, postgresSet, systemSet, applicationSet, httpSet, wire.Struct(new(app), "*"))
	return nil, nil, nil
}

// buildReconcile assembles what `seckill reconcile` needs.
func buildReconcile(ctx context.Context, cfg Common, log *zap.Logger) (*application.Reconcile, func(), error) {
	wire.Build(
		openRedis, stockOptions, redisstore.NewStock, wire.Bind(new(ports.Stock), new(*redisstore.Stock)),
		redisstore.NewAudit, wire.Bind(new(ports.StockAudit), new(*redisstore.Audit)),
		postgresSet, systemSet, application.NewCompensate, reconcile,
	)
	return nil, nil, nil
}
