package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/extra/bunotel"
	"go.uber.org/zap"

	"github.com/seckill/seckill/adapters/breaker"
	"github.com/seckill/seckill/adapters/sqlstore"
)

// The database (databaseSet, serveRepositorySet): connecting to it, and the repositories
// that write webhook events.

// outboxVouchers writes voucher.updated with each edit, pause and resume when
// webhooks are on. Off, no event is kept: an outbox nobody delivers would only grow.
func outboxVouchers(db *bun.DB, cfg Config) *sqlstore.Vouchers {
	if cfg.WebhookURL == "" {
		return sqlstore.NewVouchers(db)
	}
	return sqlstore.NewVouchers(db).WithOutbox()
}

// outboxCampaigns writes campaign.updated with each change of a campaign when webhooks
// are on.
func outboxCampaigns(db *bun.DB, cfg Config) *sqlstore.Campaigns {
	if cfg.WebhookURL == "" {
		return sqlstore.NewCampaigns(db)
	}
	return sqlstore.NewCampaigns(db).WithOutbox()
}

// outboxOrders writes the orders' and sold-out events when webhooks are on.
func outboxOrders(db *bun.DB, cfg Config) *sqlstore.Orders {
	if cfg.WebhookURL == "" {
		return sqlstore.NewOrders(db)
	}
	return sqlstore.NewOrders(db).WithOutbox()
}

// openDatabase connects to cfg.DatabaseURL with short connect timeouts, a deadline on
// every call that has none, and a circuit breaker like Redis's; every statement is
// counted (seckill_db_statements_total). When it names a SQLite
// file — by default, with SECKILL_DATABASE_URL unset — it says that this is for trying
// and testing, and applies the pending migrations, as the zero-setup mode has no
// separate step for them.
func openDatabase(ctx context.Context, cfg Common, log *zap.Logger, m *metrics) (*bun.DB, func(), error) {
	url := databaseURL(cfg.DatabaseURL)
	pingCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	db, err := sqlstore.OpenGuarded(pingCtx, url, sqlstore.GuardOptions{Breaker: breaker.Settings{OnStateChange: m.breaker(logBreaker(log))}})
	if err != nil {
		return nil, nil, fmt.Errorf("connect to database %s: %w", redactURL(url), err)
	}
	db = db.WithQueryHook(statementCounter{m.statements})
	if cfg.tracing() {
		db = db.WithQueryHook(bunotel.NewQueryHook(bunotel.WithDBName("seckill")))
	}
	if sqlstore.IsSQLite(db) {
		log.Warn("using a SQLite file as the database (set SECKILL_DATABASE_URL to a PostgreSQL URL otherwise); for trying and testing, not production",
			zap.String("database", url))
		if _, err := sqlstore.MigrateUp(ctx, db); err != nil {
			_ = db.Close()
			return nil, nil, fmt.Errorf("migrate %s: %w", url, err)
		}
	}
	// Without its schema every call would fail with 500: refuse to start instead.
	checkCtx, cancelCheck := context.WithTimeout(ctx, 5*time.Second)
	defer cancelCheck()
	if err := sqlstore.CheckSchema(checkCtx, db); err != nil {
		_ = db.Close()
		if errors.Is(err, sqlstore.ErrSchemaBehind) {
			return nil, nil, settingError{fmt.Errorf("database %s: %w; run `seckill migrate up` first", redactURL(url), err)}
		}
		return nil, nil, fmt.Errorf("database %s: %w", redactURL(url), err)
	}
	return db, func() { _ = db.Close() }, nil
}
