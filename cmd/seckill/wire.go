//go:build wireinject

package main

import (
	"context"

	"github.com/google/wire"
	"go.uber.org/zap"
)

// buildApp assembles serve's object graph.
func buildApp(ctx context.Context, cfg Config, log *zap.Logger) (*app, func(), error) {
	wire.Build(redisSet, postgresSet, systemSet, applicationSet, httpSet, wire.Struct(new(app), "*"))
	return nil, nil, nil
}
