package sqlstore

import (
	"context"
	"fmt"

	"github.com/uptrace/bun"
)

// inProcessRedisLockKey keys the PostgreSQL advisory lock that a serve with an
// in-process Redis of its own holds on its database (HoldInProcessRedisLock).
const inProcessRedisLockKey int64 = 0x5EC1_0001

// HoldInProcessRedisLock takes, on a connection of its own, the PostgreSQL session
// lock that says "a serve with an in-process Redis uses this database", and holds it
// until release is called or the process ends (the server drops a session's locks
// with it, kill -9 included). Two such serves would each count the stock in their own
// Redis and sell the same units twice. It reports false, holding nothing, when
// another session holds the lock. PostgreSQL only: a SQLite file is locked beside it.
func HoldInProcessRedisLock(ctx context.Context, db *bun.DB) (release func(), ok bool, err error) {
	conn, err := db.Conn(ctx)
	if err != nil {
		return nil, false, fmt.Errorf("lock the database for an in-process redis: %w", Classify(err))
	}
	if err := conn.NewRaw("SELECT pg_try_advisory_lock(?)", inProcessRedisLockKey).Scan(ctx, &ok); err != nil {
		_ = conn.Close()
		return nil, false, fmt.Errorf("lock the database for an in-process redis: %w", Classify(err))
	}
	if !ok {
		_ = conn.Close()
		return nil, false, nil
	}
	return func() {
		_, _ = conn.ExecContext(context.Background(), "SELECT pg_advisory_unlock(?)", inProcessRedisLockKey)
		_ = conn.Close()
	}, true, nil
}
