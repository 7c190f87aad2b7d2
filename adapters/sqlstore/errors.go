package sqlstore

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"

	"github.com/jackc/pgx/v5/pgconn"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/seckill/seckill/domain"
)

// Classify marks the errors that mean the database is unreachable, restarting or
// overloaded as domain.ErrUnavailable, so callers wait and retry instead of treating
// a healthy request as broken (the fulfillment worker keeps its batch pending; the
// API answers 503). Other errors pass through unchanged. Every repository of this
// package and the postgres stock strategy (adapters/strategies/sqlstock) wrap their
// database errors with it.
func Classify(err error) error {
	if err == nil || !unavailable(err) {
		return err
	}
	return fmt.Errorf("%w: %w", domain.ErrUnavailable, err)
}

func unavailable(err error) bool {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		// Class 08: connection exception; 57P0x: the server is shutting down or
		// starting; 53300: too many connections.
		return strings.HasPrefix(pgErr.Code, "08") || strings.HasPrefix(pgErr.Code, "57P0") || pgErr.Code == "53300"
	}
	var liteErr *sqlite.Error
	if errors.As(err, &liteErr) {
		// The file stayed locked by another process past busy_timeout.
		primary := liteErr.Code() & 0xff
		return primary == sqlite3.SQLITE_BUSY || primary == sqlite3.SQLITE_LOCKED
	}
	var connectErr *pgconn.ConnectError
	var netErr net.Error
	return errors.As(err, &connectErr) ||
		errors.As(err, &netErr) ||
		errors.Is(err, driver.ErrBadConn) ||
		errors.Is(err, pgconn.ErrConnClosed) ||
		errors.Is(err, io.EOF) ||
		errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNREFUSED) ||
		errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, context.DeadlineExceeded) ||
		pgconn.Timeout(err)
}

// violation is the kind of integrity constraint that refused a statement.
type violation int

const (
	noViolation violation = iota
	// foreignKey: a row's reference is missing (here, an order whose voucher does
	// not exist).
	foreignKey
	// check: a CHECK constraint refused the row, or a trigger that stands in for one.
	check
	// unique: a unique index already holds the row's key (PostgreSQL only: on SQLite
	// Persist never inserts without ON CONFLICT).
	unique
)

// sqliteCheckFailed starts SQLite's message for a CHECK violation, which names the
// constraint after it: "CHECK constraint failed: vouchers_stock_check".
const sqliteCheckFailed = "CHECK constraint failed: "

// sqliteRaised starts the message of an error a SQLite trigger raised: the schema's
// triggers that stand in for a CHECK (the campaigns migration's) raise the name of the
// constraint they stand for, "constraint failed: campaign_units_limit_check", as
// PostgreSQL's functions raise a check_violation naming it.
const sqliteRaised = "constraint failed: "

// constraintViolation reports which kind of constraint refused err's statement, if
// any, and the constraint's name where the database gives one.
func constraintViolation(err error) (violation, string) {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch pgErr.Code {
		case "23503":
			return foreignKey, pgErr.ConstraintName
		case "23514":
			return check, pgErr.ConstraintName
		case "23505":
			return unique, pgErr.ConstraintName
		}
		return noViolation, ""
	}
	var liteErr *sqlite.Error
	if errors.As(err, &liteErr) {
		switch liteErr.Code() {
		case sqlite3.SQLITE_CONSTRAINT_FOREIGNKEY:
			return foreignKey, ""
		case sqlite3.SQLITE_CONSTRAINT_CHECK:
			_, name, _ := strings.Cut(liteErr.Error(), sqliteCheckFailed)
			name, _, _ = strings.Cut(name, " ")
			return check, name
		case sqlite3.SQLITE_CONSTRAINT_TRIGGER:
			_, name, _ := strings.Cut(liteErr.Error(), sqliteRaised)
			name, _, _ = strings.Cut(name, " ")
			return check, name
		}
	}
	return noViolation, ""
}
