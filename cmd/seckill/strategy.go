package main

import (
	"fmt"
	"strings"

	"github.com/google/wire"

	"github.com/seckill/seckill/adapters/redisstore"
	"github.com/seckill/seckill/adapters/strategies/sqlstock"
	"github.com/seckill/seckill/adapters/strategies/watchstock"
	"github.com/seckill/seckill/ports"
)

// StockStrategy names an implementation of the stock port: how a grab takes units.
// All keep the three promises; they differ in speed (`seckill-lab compare`).
type StockStrategy string

// The stock strategies.
const (
	// StrategyLua judges and takes a grab, and queues it, in one Redis script.
	StrategyLua StockStrategy = "lua"
	// StrategyWatch does the same as a Redis WATCH/MULTI optimistic transaction, retried
	// a bounded number of times when another grab changed the voucher first.
	StrategyWatch StockStrategy = "watch"
	// StrategyPostgres takes a grab in one database transaction holding the voucher's
	// row lock, and stores the order at once: no Redis on the grab path.
	StrategyPostgres StockStrategy = "postgres"
)

// stockStrategies lists every strategy.
var stockStrategies = []StockStrategy{StrategyLua, StrategyWatch, StrategyPostgres}

// strategyEnv is the variable that selects the stock strategy.
const strategyEnv = "SECKILL_STOCK_STRATEGY"

// parseStockStrategy returns the strategy name names, or one line naming the setting.
func parseStockStrategy(name string) (StockStrategy, error) {
	for _, s := range stockStrategies {
		if name == string(s) {
			return s, nil
		}
	}
	names := make([]string, len(stockStrategies))
	for i, s := range stockStrategies {
		names[i] = string(s)
	}
	return "", fmt.Errorf("%s (--stock-strategy): %q is not one of %s", strategyEnv, name, strings.Join(names, ", "))
}

// StrategyConfig selects the stock strategy. Common embeds it, so serve and reconcile
// both read --stock-strategy and SECKILL_STOCK_STRATEGY, and kong calls its Validate
// with the rest of the settings.
type StrategyConfig struct {
	StockStrategy string `name:"stock-strategy" env:"SECKILL_STOCK_STRATEGY" default:"lua" help:"How a grab takes stock: lua (one Redis script), watch (Redis WATCH/MULTI, bounded retries) or postgres (one database transaction with a row lock; no Redis on the grab path)."`
}

// Validate returns one line naming the setting when it names no strategy.
func (c StrategyConfig) Validate() error {
	_, err := c.stockStrategy()
	return err
}

func (c StrategyConfig) stockStrategy() (StockStrategy, error) {
	return parseStockStrategy(c.StockStrategy)
}

// configuredStrategy returns the stock strategy cfg selects (validated already).
func configuredStrategy(cfg Common) (StockStrategy, error) {
	return cfg.stockStrategy()
}

// strategySet provides the stock port and the audit of its state for a given
// StockStrategy. The Redis adapters are built either way: the fulfillment queue, the
// reservations and the restock signal read Redis whatever takes the stock.
var strategySet = wire.NewSet(sqlstock.New, selectStock, selectStockAudit, selectWaitlist, selectEntries, selectCampaignStock)

// selectCampaignStock returns where a campaign's terms are kept beside its vouchers'
// states: the Redis stock for lua, whose grab script judges a campaign's grab, and for
// watch, whose transaction reads them (watchstock); the database for postgres, whose
// grab judges a campaign by its rows (sqlstock).
func selectCampaignStock(strategy StockStrategy, lua *redisstore.Stock, db *sqlstock.Stock) ports.CampaignStock {
	if strategy == StrategyPostgres {
		return db
	}
	return lua
}

// selectStock returns the stock port of strategy: the Lua script (lua), the
// optimistic transaction over the same keys (watch), or the database (postgres).
func selectStock(strategy StockStrategy, lua *redisstore.Stock, db *sqlstock.Stock) ports.Stock {
	switch strategy {
	case StrategyWatch:
		return watchstock.New(lua, watchstock.DefaultAttempts)
	case StrategyPostgres:
		return db
	default:
		return lua
	}
}

// selectStockAudit returns what reconciliation and stats read as the sale state of
// strategy: Redis for lua and watch, which share its keys; the database for postgres,
// where Redis holds nothing and the vouchers row is the sale state.
func selectStockAudit(strategy StockStrategy, redis *redisstore.Audit, db *sqlstock.Stock) ports.StockAudit {
	if strategy == StrategyPostgres {
		return db
	}
	return redis
}

// selectWaitlist returns the waitlists of strategy: kept in Redis beside the sale state
// for lua and watch, whose releases and edits (the same scripts) hand returned units
// to them; none for postgres, whose waitlist routes answer 409 waitlist_unsupported.
func selectWaitlist(strategy StockStrategy, lua *redisstore.Stock) ports.Waitlist {
	if strategy == StrategyPostgres {
		return sqlstock.NoWaitlist{}
	}
	return redisstore.NewWaitlist(lua)
}

// selectEntries returns the draws' entries of strategy: kept in Redis beside the sale
// state for lua and watch, whose winners are reservations and whose backfill is the
// waitlist; none for postgres, whose entries answer 409 draw_unsupported.
func selectEntries(strategy StockStrategy, lua *redisstore.Stock) ports.Entries {
	if strategy == StrategyPostgres {
		return sqlstock.NoEntries{}
	}
	return redisstore.NewEntries(lua)
}
