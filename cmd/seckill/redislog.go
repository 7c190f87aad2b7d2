package main

import (
	"context"
	"fmt"

	"go.uber.org/zap"
)

// redisLog carries go-redis's own messages (a failed dial, a bad connection thrown
// away) into the process log at debug level. The failures they describe reach seckill
// as errors that it reports once, in its own words — a wrong SECKILL_REDIS_URL stops
// start-up with one line, not a line per pooled connection.
type redisLog struct{ log *zap.Logger }

// Printf implements go-redis's internal logging interface.
func (l redisLog) Printf(_ context.Context, format string, v ...any) {
	l.log.Debug(fmt.Sprintf(format, v...))
}
