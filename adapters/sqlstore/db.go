// Package sqlstore keeps seckill's records in PostgreSQL through Bun: the connection,
// the schema migrations and the repositories behind the ports.
package sqlstore

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/pgdialect"
)

// Connection pool limits. The grab path never touches the database, fulfilment writes
// in batches and the rest reads by key, so twenty connections carry an instance without
// crowding the server's limit when several run; recycling them lets a restarted or
// failed-over server take its share of load back.
const (
	maxOpenConns    = 20
	maxIdleConns    = 10
	connMaxLifetime = 30 * time.Minute
	connMaxIdleTime = 5 * time.Minute
)

// Open connects to the PostgreSQL database named by dsn (a postgres:// URL or a
// key=value string) through pgx's database/sql driver, and checks within ctx that the
// server answers. It returns an error for a malformed dsn or an unreachable server;
// the caller closes the DB.
func Open(ctx context.Context, dsn string) (*bun.DB, error) {
	cfg, err := parseDSN(dsn)
	if err != nil {
		return nil, err
	}
	return openDB(ctx, stdlib.GetConnector(*cfg))
}

// parseDSN reads dsn first, so a malformed one is reported as such rather than as a
// failed ping.
func parseDSN(dsn string) (*pgx.ConnConfig, error) {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("parse database url: %w", err)
	}
	// Bun formats every argument into the SQL text, so queries reach pgx without
	// parameters. In pgx's default mode each distinct text (every voucher id a new one)
	// would be prepared and cached server-side first, an extra round trip that only
	// churns the cache; the simple protocol sends it once, and works behind PgBouncer.
	cfg.DefaultQueryExecMode = pgx.QueryExecModeSimpleProtocol
	return cfg, nil
}

// openDB puts a pool with seckill's limits over connector and checks within ctx that
// the server answers.
func openDB(ctx context.Context, connector driver.Connector) (*bun.DB, error) {
	sqldb := sql.OpenDB(connector)
	sqldb.SetMaxOpenConns(maxOpenConns)
	sqldb.SetMaxIdleConns(maxIdleConns)
	sqldb.SetConnMaxLifetime(connMaxLifetime)
	sqldb.SetConnMaxIdleTime(connMaxIdleTime)

	db := bun.NewDB(sqldb, pgdialect.New())
	if err := db.PingContext(ctx); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("ping database: %w", err)
	}
	return db, nil
}
