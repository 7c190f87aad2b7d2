package main

import (
	"fmt"
	"os"

	"github.com/mattn/go-isatty"
	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// logFormat is the log format to use: the configured one, or when none is, console
// for a terminal (a person reads it, and JSON would bury serve's banner) and json for
// anything else (a file, a pipe, a log collector).
func logFormat(configured string, terminal bool) string {
	switch {
	case configured != "":
		return configured
	case terminal:
		return "console"
	}
	return "json"
}

// newLogger builds the process logger, writing to stderr, at the configured level and
// format (see logFormat).
func newLogger(level, format string) (*zap.Logger, error) {
	lvl, err := zapcore.ParseLevel(level)
	if err != nil {
		return nil, fmt.Errorf("log level: %w", err)
	}
	cfg := zap.NewProductionConfig()
	if logFormat(format, isatty.IsTerminal(os.Stderr.Fd())) == "console" {
		cfg = zap.NewDevelopmentConfig()
	}
	cfg.Level = zap.NewAtomicLevelAt(lvl)
	cfg.DisableStacktrace = true
	log, err := cfg.Build()
	if err != nil {
		return nil, fmt.Errorf("build logger: %w", err)
	}
	redis.SetLogger(redisLog{log.Named("redis")})
	return log, nil
}
