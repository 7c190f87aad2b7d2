package sqlstore

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/uptrace/bun"

	"github.com/seckill/seckill/adapters/breaker"
	"github.com/seckill/seckill/domain"
)

// Defaults of GuardOptions.
const (
	// DefaultConnectTimeout bounds one connection attempt, dial to authentication.
	DefaultConnectTimeout = time.Second
	// DefaultCallTimeout is the deadline of a call whose context has none.
	DefaultCallTimeout = 5 * time.Second
)

// GuardOptions tune the breaker and the deadlines OpenGuarded puts in front of the
// database. The zero value uses the defaults.
type GuardOptions struct {
	// ConnectTimeout bounds each connection attempt; DefaultConnectTimeout when 0. A
	// shorter connect_timeout in the dsn wins.
	ConnectTimeout time.Duration
	// CallTimeout is the deadline given to a call whose context has none (the
	// fulfillment worker's, say), so no call waits forever on a hung server: each
	// statement and ping, and a transaction from BEGIN to COMMIT. A context with a
	// deadline keeps its own. DefaultCallTimeout when 0; negative turns it off.
	CallTimeout time.Duration
	// Breaker tunes the circuit breaker (package breaker); a zero Patience is the
	// connect timeout, the longest a healthy server makes a call wait for a connection.
	Breaker breaker.Settings
}

// OpenGuarded is Open with a circuit breaker and deadlines between the pool and the
// server: every connection attempt and every round trip (statement, BEGIN, ping,
// prepare) goes through the breaker (package breaker: it opens when a share of a
// rolling window's calls failed for want of the database — unreachable, timed out
// while this process was not saturated, shutting down: what unavailable says; a
// cancelled call and a stale pooled connection, which database/sql replaces by itself,
// do not count). While open, every call fails at once with an error wrapping
// domain.ErrUnavailable, without touching the network; after a while one probe goes
// through and its success closes the breaker, so the pool recovers by itself when the
// server is back.
//
// A call that must wait for a free connection waits inside database/sql before it
// reaches the breaker, so with every connection stuck on a hung server, callers wait
// until those calls' deadlines (CallTimeout, or the request's) free them; with the
// server down the calls fail at once and free their connections immediately.
//
// It returns an error for a malformed dsn or a server that does not answer within ctx;
// the caller closes the DB. The pool's driver connections are wrapped: code that
// reaches for *stdlib.Conn through sql.Conn.Raw must use Open instead, as migrations,
// which hold a transaction longer than CallTimeout, should.
//
// A sqlite: dsn is opened as Open opens it: a file on the local disk has no server to
// lose, so there is nothing for a breaker to guard.
func OpenGuarded(ctx context.Context, dsn string, opts GuardOptions) (*bun.DB, error) {
	if _, isSQLite, _ := SQLitePath(dsn); isSQLite {
		return Open(ctx, dsn)
	}
	cfg, err := parseDSN(dsn)
	if err != nil {
		return nil, err
	}
	limit := opts.ConnectTimeout
	if limit <= 0 {
		limit = DefaultConnectTimeout
	}
	if cfg.ConnectTimeout <= 0 || cfg.ConnectTimeout > limit {
		cfg.ConnectTimeout = limit
	}
	if opts.Breaker.Patience == 0 {
		opts.Breaker.Patience = cfg.ConnectTimeout
	}
	return openDB(ctx, guard(stdlib.GetConnector(*cfg), opts))
}

// guard wraps a pgx connector in a breaker configured by opts.
func guard(inner driver.Connector, opts GuardOptions) *guardedConnector {
	callTimeout := opts.CallTimeout
	if callTimeout == 0 {
		callTimeout = DefaultCallTimeout
	}
	return &guardedConnector{
		inner:       inner,
		b:           breaker.New("postgres", opts.Breaker, classifySQL),
		callTimeout: callTimeout,
	}
}

// classifySQL says what an error of a database call tells about the database. A
// cancelled call says nothing about the server. A bad connection is one database/sql
// throws away and retries on another, new if need be: that retry is the call that
// counts.
func classifySQL(err error) breaker.Verdict {
	switch {
	case err == nil:
		return breaker.Success
	case errors.Is(err, context.Canceled), errors.Is(err, driver.ErrBadConn):
		return breaker.Ignore
	case errors.Is(err, context.DeadlineExceeded), pgconn.Timeout(err):
		return breaker.Timeout
	case unavailable(err):
		return breaker.Failure
	}
	return breaker.Success
}

// guardedConnector is a driver.Connector whose connections answer through its breaker.
type guardedConnector struct {
	inner       driver.Connector
	b           *breaker.Breaker
	callTimeout time.Duration
}

// pgxConn is what pgx's database/sql connection implements and database/sql uses.
type pgxConn interface {
	driver.Conn
	driver.ConnPrepareContext
	driver.ConnBeginTx
	driver.ExecerContext
	driver.QueryerContext
	driver.Pinger
	driver.SessionResetter
	driver.NamedValueChecker
}

var (
	_ pgxConn = (*stdlib.Conn)(nil)
	_ pgxRows = (*stdlib.Rows)(nil)
)

// Connect opens a connection through the breaker: at once refused while it is open.
func (g *guardedConnector) Connect(ctx context.Context) (driver.Conn, error) {
	var conn driver.Conn
	err := g.call(func() (err error) {
		conn, err = g.inner.Connect(ctx)
		return err
	})
	if err != nil {
		return nil, err
	}
	pc, ok := conn.(pgxConn)
	if !ok {
		_ = conn.Close()
		return nil, fmt.Errorf("guard database connection: %T is not a pgx connection", conn)
	}
	return &guardedConn{inner: pc, g: g}, nil
}

// Driver returns the wrapped connector's driver.
func (g *guardedConnector) Driver() driver.Driver { return g.inner.Driver() }

// call runs fn through the breaker and returns fn's own error, as the driver gave it
// (database/sql looks for driver.ErrBadConn and driver.ErrSkip in it; the
// repositories classify the rest); a refusal of the open breaker wraps
// domain.ErrUnavailable.
func (g *guardedConnector) call(fn func() error) error {
	var ferr error
	err := g.b.Do(func() error { ferr = fn(); return ferr })
	if breaker.Refused(err) {
		return err
	}
	return ferr
}

// guarded runs one round trip through the breaker, under ctx given the call deadline
// when it has none. On success it also returns the function that releases that
// deadline, which the caller calls once the result is done with: at once for a
// statement or a ping, at COMMIT or ROLLBACK for a transaction (pgx keeps BEGIN's
// context for them), when they are closed for rows (read under the query's context).
// On an error the deadline is released already.
func guarded[T any](ctx context.Context, g *guardedConnector, fn func(context.Context) (T, error)) (T, context.CancelFunc, error) {
	ctx, cancel := breaker.Bound(ctx, g.callTimeout)
	if cancel == nil {
		cancel = func() {}
	}
	var v T
	err := g.call(func() (err error) {
		v, err = fn(ctx)
		return err
	})
	if err != nil {
		cancel()
		var zero T
		return zero, nil, err
	}
	return v, cancel, nil
}

// guardedConn is one pgx connection whose round trips go through the breaker.
type guardedConn struct {
	inner pgxConn
	g     *guardedConnector
}

func (c *guardedConn) Prepare(query string) (driver.Stmt, error) {
	return c.PrepareContext(context.Background(), query)
}

func (c *guardedConn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	stmt, release, err := guarded(ctx, c.g, func(ctx context.Context) (driver.Stmt, error) {
		return c.inner.PrepareContext(ctx, query)
	})
	if err != nil {
		return nil, err
	}
	release()
	return stmt, nil
}

func (c *guardedConn) Close() error { return c.inner.Close() }

func (c *guardedConn) Begin() (driver.Tx, error) {
	return c.BeginTx(context.Background(), driver.TxOptions{})
}

// BeginTx starts a transaction through the breaker; a deadline added here covers the
// whole transaction and is released when it ends.
func (c *guardedConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	tx, release, err := guarded(ctx, c.g, func(ctx context.Context) (driver.Tx, error) {
		return c.inner.BeginTx(ctx, opts)
	})
	if err != nil {
		return nil, err
	}
	return &boundTx{Tx: tx, cancel: release}, nil
}

func (c *guardedConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	res, release, err := guarded(ctx, c.g, func(ctx context.Context) (driver.Result, error) {
		return c.inner.ExecContext(ctx, query, args)
	})
	if err != nil {
		return nil, err
	}
	release()
	return res, nil
}

// QueryContext runs a query through the breaker; a deadline added here is released
// when the rows are closed.
func (c *guardedConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	rows, release, err := guarded(ctx, c.g, func(ctx context.Context) (driver.Rows, error) {
		return c.inner.QueryContext(ctx, query, args)
	})
	if err != nil {
		return nil, err
	}
	if pr, ok := rows.(pgxRows); ok {
		return &boundRows{pgxRows: pr, cancel: release}, nil
	}
	return &boundPlainRows{Rows: rows, cancel: release}, nil
}

func (c *guardedConn) Ping(ctx context.Context) error {
	_, release, err := guarded(ctx, c.g, func(ctx context.Context) (struct{}, error) {
		return struct{}{}, c.inner.Ping(ctx)
	})
	if err != nil {
		return err
	}
	release()
	return nil
}

// ResetSession may ping a connection idle for a while; it is bounded but not counted,
// since its failure only makes database/sql take another connection.
func (c *guardedConn) ResetSession(ctx context.Context) error {
	ctx, cancel := breaker.Bound(ctx, c.g.callTimeout)
	if cancel != nil {
		defer cancel()
	}
	return c.inner.ResetSession(ctx)
}

func (c *guardedConn) CheckNamedValue(v *driver.NamedValue) error { return c.inner.CheckNamedValue(v) }

// boundTx releases the deadline its connection added once the transaction ends.
type boundTx struct {
	driver.Tx
	cancel context.CancelFunc
}

// Commit commits. No constraint here is deferred to the commit, so a COMMIT that
// fails is the database failing (and the outcome may be unknown): its error wraps
// domain.ErrUnavailable, whatever the driver said.
func (t *boundTx) Commit() error {
	defer t.cancel()
	if err := t.Tx.Commit(); err != nil {
		return fmt.Errorf("commit: %w: %w", domain.ErrUnavailable, err)
	}
	return nil
}

func (t *boundTx) Rollback() error {
	defer t.cancel()
	return t.Tx.Rollback()
}

// pgxRows is what pgx's rows implement and database/sql uses for ColumnTypes.
type pgxRows interface {
	driver.Rows
	driver.RowsColumnTypeDatabaseTypeName
	driver.RowsColumnTypeLength
	driver.RowsColumnTypePrecisionScale
	driver.RowsColumnTypeScanType
}

// boundRows releases the deadline their query added once they are closed.
type boundRows struct {
	pgxRows
	cancel context.CancelFunc
}

func (r *boundRows) Close() error {
	defer r.cancel()
	return r.pgxRows.Close()
}

type boundPlainRows struct {
	driver.Rows
	cancel context.CancelFunc
}

func (r *boundPlainRows) Close() error {
	defer r.cancel()
	return r.Rows.Close()
}
