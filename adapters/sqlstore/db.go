// Package sqlstore keeps seckill's records in a SQL database through Bun — PostgreSQL
// in production, or a SQLite file for trying and testing with nothing installed — with
// the same repositories and migrations on both: the connection, the schema migrations
// and the repositories behind the ports.
//
// Where the two differ, the difference is in one place each: row locks (rowLock), the
// migration lock (withMigrator), the schema's identity column and current-time default
// (the migrations' template), and the errors each reports (errors.go). Timestamps the
// repositories write come from the process's clock, so both store them alike.
package sqlstore

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"
	"github.com/uptrace/bun/dialect/pgdialect"
	"github.com/uptrace/bun/dialect/sqlitedialect"
	_ "modernc.org/sqlite" // registers the cgo-free "sqlite" driver
)

// Connection pool limits. The grab path never touches the database, fulfillment writes
// in batches and the rest reads by key, so twenty connections carry an instance without
// crowding the server's limit when several run; recycling them lets a restarted or
// failed-over server take its share of load back.
const (
	maxOpenConns    = 20
	maxIdleConns    = 10
	connMaxLifetime = 30 * time.Minute
	connMaxIdleTime = 5 * time.Minute
)

// SQLite settings.
const (
	// sqliteMaxConns is one: a SQLite file has one writer at a time, so the process's
	// statements take turns for the one connection in database/sql's pool, which hands
	// it to a random waiter. With several connections they would take turns inside
	// SQLite instead, whose busy handler sleeps between tries and lets a waiter lose
	// every race for seconds while others write back to back (seen in the tests, as
	// "database is locked" after busy_timeout).
	sqliteMaxConns = 1
	// sqliteParams are the driver settings of every connection: wait up to 5 s for the
	// write lock when another process holds it, instead of failing at once
	// (busy_timeout); write-ahead logging, so another process's readers (a `seckill
	// migrate status`, say) never block the writer nor it them; enforce the foreign
	// keys (SQLite ignores them unless asked); and take the write lock when a
	// transaction begins (_txlock=immediate), so two transactions never both read and
	// then both try to write, which SQLite would resolve by failing one of them.
	sqliteParams = "_pragma=busy_timeout(5000)&_pragma=journal_mode(WAL)&_pragma=foreign_keys(1)&_txlock=immediate"
)

// SQLiteScheme starts a database URL that names a SQLite file: sqlite:PATH (relative
// to the working directory) or sqlite:///ABSOLUTE/PATH.
const SQLiteScheme = "sqlite:"

// SQLitePath returns the file a sqlite: URL names, and whether url is one. A sqlite:
// URL without a path, or whose path holds '?' or '#', is an error.
func SQLitePath(url string) (path string, ok bool, err error) {
	rest, ok := strings.CutPrefix(url, SQLiteScheme)
	if !ok {
		return "", false, nil
	}
	path = strings.TrimPrefix(rest, "//")
	if path == "" || strings.ContainsAny(path, "?#") {
		return "", true, fmt.Errorf("want sqlite:PATH or sqlite:///ABSOLUTE/PATH without '?' or '#', got %q", url)
	}
	return path, true, nil
}

// Open connects to the database named by url and checks within ctx that it answers: a
// PostgreSQL URL (postgres://… or a key=value string) through pgx's database/sql
// driver, or a sqlite: URL (see SQLitePath) through the cgo-free modernc.org/sqlite
// driver, creating the file if it is absent (not its directory). It returns an error
// for a malformed url or an unreachable database; the caller closes the DB.
func Open(ctx context.Context, url string) (*bun.DB, error) {
	path, isSQLite, err := SQLitePath(url)
	if err != nil {
		return nil, fmt.Errorf("parse database url: %w", err)
	}
	if isSQLite {
		return openSQLite(ctx, path)
	}
	cfg, err := parseDSN(url)
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
	return ping(ctx, bun.NewDB(sqldb, pgdialect.New()))
}

// openSQLite opens the SQLite file at path with sqliteParams.
func openSQLite(ctx context.Context, path string) (*bun.DB, error) {
	sqldb, err := sql.Open("sqlite", path+"?"+sqliteParams)
	if err != nil {
		return nil, fmt.Errorf("open sqlite %s: %w", path, err)
	}
	sqldb.SetMaxOpenConns(sqliteMaxConns)
	sqldb.SetMaxIdleConns(sqliteMaxConns)
	return ping(ctx, bun.NewDB(sqldb, sqlitedialect.New()))
}

func ping(ctx context.Context, db *bun.DB) (*bun.DB, error) {
	if err := db.PingContext(ctx); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("ping database: %w", err)
	}
	return db, nil
}

// IsSQLite reports whether db is a SQLite database.
func IsSQLite(db bun.IDB) bool {
	return db.Dialect().Name() == dialect.SQLite
}

// rowLock returns a query option that adds PostgreSQL's row lock clause (FOR clause)
// to a select in a write transaction, so concurrent writers of the same rows take
// turns. SQLite has no row locks and needs none: every write transaction holds the
// database's one write lock from BEGIN (_txlock=immediate), so it runs alone among
// writers and what it reads cannot change under it; there the option adds nothing.
func rowLock(clause string) func(*bun.SelectQuery) *bun.SelectQuery {
	return func(q *bun.SelectQuery) *bun.SelectQuery {
		if q.Dialect().Name() == dialect.PG {
			return q.For(clause)
		}
		return q
	}
}

// now is the time the repositories stamp on the rows they change (updated_at,
// released_at, created_at): the process's clock in UTC at the databases' common
// precision, the microsecond, so both store and compare it alike.
func now() time.Time {
	return time.Now().UTC().Truncate(time.Microsecond)
}

// txKey is the context key of a transaction a repository hands on to a callback.
type txKey struct{}

// withConn returns ctx carrying tx, for the callbacks a repository runs inside its
// transaction (UnitsByStatus's at): a repository of this package called under them
// reads through tx (Conn). On SQLite it must: the one connection is tx's until it
// ends, so a read on the pool would wait for it forever.
func withConn(ctx context.Context, tx bun.Tx) context.Context {
	return context.WithValue(ctx, txKey{}, tx)
}

// Conn returns the transaction ctx carries (withConn), or db: the handle a read must go
// through when it may be called back under a repository's transaction (Vouchers.Hold,
// Vouchers.Update's Commit, Orders.UnitsByStatus), as the postgres stock strategy's
// reads are (adapters/strategies/sqlstock).
func Conn(ctx context.Context, db *bun.DB) bun.IDB {
	if tx, ok := ctx.Value(txKey{}).(bun.Tx); ok {
		return tx
	}
	return db
}
