package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"strings"
	"time"

	"github.com/oklog/ulid/v2"
	"github.com/uptrace/bun"

	"github.com/seckill/seckill/adapters/redisstore"
	"github.com/seckill/seckill/adapters/sqlstore"
	"github.com/seckill/seckill/domain"
)

type seedCmd struct {
	RedisURL    string        `name:"redis-url" env:"SECKILL_REDIS_URL" help:"Redis URL (one server, or any node of a Redis Cluster), e.g. redis://127.0.0.1:6379/0; required."`
	DatabaseURL string        `name:"database-url" env:"SECKILL_DATABASE_URL" help:"The migrated database: a PostgreSQL URL, e.g. postgres://user@127.0.0.1:5432/seckill?sslmode=disable, or sqlite:PATH; required."`
	KeyPrefix   string        `name:"key-prefix" env:"SECKILL_KEY_PREFIX" default:"seckill" help:"Prefix of every Redis key, as the service has it."`
	KeyGrace    time.Duration `name:"key-grace" env:"SECKILL_KEY_GRACE" default:"24h" help:"How long a voucher's Redis keys outlive the end of its sale, as the service has it."`

	Vouchers int `name:"vouchers" default:"10" help:"How many vouchers on sale to make."`
	Orders   int `name:"orders" default:"1000" help:"How many orders the first voucher made (the popular sale) holds."`
}

// seedBatch is how many rows or reservations one statement or pipeline carries.
const seedBatch = 5000

// Validate checks the flags before Run (kong calls it; a failure exits 2).
func (c *seedCmd) Validate() error {
	switch {
	case c.Vouchers < 1:
		return errors.New("--vouchers: must be at least 1")
	case c.Orders < 0:
		return errors.New("--orders: must not be negative")
	case c.RedisURL == "":
		return errors.New("SECKILL_REDIS_URL (--redis-url): is required by seed")
	case c.DatabaseURL == "":
		return errors.New("SECKILL_DATABASE_URL (--database-url): is required by seed")
	case c.KeyPrefix == "" || strings.ContainsAny(c.KeyPrefix, "{} \t\n"):
		return fmt.Errorf("SECKILL_KEY_PREFIX (--key-prefix): %q must be non-empty, without braces or spaces", c.KeyPrefix)
	case c.KeyGrace <= 0:
		return errors.New("SECKILL_KEY_GRACE (--key-grace): must be greater than 0")
	}
	if _, _, err := redisstore.ParseURL(c.RedisURL); err != nil {
		return fmt.Errorf("SECKILL_REDIS_URL (--redis-url): %v", err)
	}
	return nil
}

// connectTimeout bounds the connection to Redis and to the database.
const connectTimeout = 5 * time.Second

// seedVouchers stores n vouchers in the database, the first holding live units of
// live orders (the orders come after), and loads their sale state in Redis; lap times
// each part. It returns them as stored, with their sold units.
func seedVouchers(ctx context.Context, db *bun.DB, stock *redisstore.Stock, n, live int, now time.Time, lap func(string, time.Time)) ([]domain.Voucher, error) {
	vs := make([]domain.Voucher, n)
	for i := range vs {
		vs[i] = domain.Voucher{Title: fmt.Sprintf("Seeded sale %d", i+1), Stock: 100,
			BeginsAt: now.Add(-time.Hour), EndsAt: now.Add(24 * time.Hour), PerUserLimit: 1}
	}
	vs[0].Stock, vs[0].Sold = max(live+live/10, 1), live
	start := time.Now()
	var stored []domain.Voucher
	for batch := range chunks(len(vs), seedBatch) {
		got, err := sqlstore.NewVouchers(db).Import(ctx, vs[batch.from:batch.to])
		if err != nil {
			return nil, err
		}
		stored = append(stored, got...)
	}
	for i := range stored {
		stored[i].Sold = vs[i].Sold
	}
	lap("db_vouchers", start)

	start = time.Now()
	for _, v := range stored {
		if _, err := stock.Warm(ctx, v); err != nil {
			return nil, err
		}
	}
	lap("redis_warm", start)
	return stored, nil
}

// seedOrders writes n orders of voucher hot, in batches, to the database and the
// reservations of the live ones to Redis, and returns the time each took. One in ten
// is cancelled, two in ten await payment, the rest are paid; they were made a
// millisecond apart up to now.
func seedOrders(ctx context.Context, orders *sqlstore.Orders, audit *redisstore.Audit, hot domain.Voucher, n int, now time.Time) (dbTime, redisTime time.Duration, err error) {
	entropy := ulid.Monotonic(rand.New(rand.NewSource(1)), 0) //nolint:gosec // ids of generated data
	for batch := range chunks(n, seedBatch) {
		batchOrders := make([]domain.Order, 0, batch.to-batch.from)
		var rs []domain.Reservation
		for i := batch.from; i < batch.to; i++ {
			at := now.Add(time.Duration(i-n) * time.Millisecond)
			o := domain.Order{ID: domain.OrderID(ulid.MustNew(ulid.Timestamp(at), entropy).String()),
				VoucherID: hot.ID, UserID: domain.UserID(i + 1), Quantity: 1, Status: domain.StatusPaid, CreatedAt: at}
			switch i % 10 {
			case 0:
				o.Status = domain.StatusCancelled
			case 1, 2:
				o.Status = domain.StatusAwaitingPayment
			}
			batchOrders = append(batchOrders, o)
			if o.Status.HoldsStock() {
				rs = append(rs, o.Reservation())
			}
		}
		t := time.Now()
		if err := orders.Import(ctx, batchOrders); err != nil {
			return 0, 0, err
		}
		dbTime += time.Since(t)
		t = time.Now()
		if err := audit.Import(ctx, rs); err != nil {
			return 0, 0, err
		}
		redisTime += time.Since(t)
	}
	return dbTime, redisTime, nil
}

// Run fills the database and Redis with consistent generated sales: --vouchers live
// vouchers (stock 100 each, on sale from an hour ago for a day), the first of which
// holds --orders orders of one unit, one per user (users 1 to --orders), made over
// the last --orders milliseconds: 70% paid, 20% awaiting payment, 10% cancelled (and
// released). Every voucher's sale state is loaded in Redis with the reservations of
// its live orders, as a warm-up would leave it, and its stock is 10% above the live
// units. It prints what it made and how long each part took, as JSON.
func (c *seedCmd) Run(ctx context.Context) error {
	db, err := c.openDatabase(ctx)
	if err != nil {
		return err
	}
	defer db.Close()
	connectCtx, cancel := context.WithTimeout(ctx, connectTimeout)
	defer cancel()
	client, err := redisstore.NewClient(connectCtx, c.RedisURL, redisstore.TuneClientOptions)
	if err != nil {
		return fmt.Errorf("connect to redis: %w", err)
	}
	defer client.Close()
	opts := redisstore.Options{Prefix: c.KeyPrefix, Grace: c.KeyGrace}
	stock := redisstore.NewStock(client, opts)
	audit := redisstore.NewAudit(client, opts)
	orders := sqlstore.NewOrders(db)
	report := map[string]any{"vouchers": c.Vouchers, "orders": c.Orders}
	lap := func(name string, start time.Time) { report[name+"_ms"] = time.Since(start).Milliseconds() }

	now := time.Now()
	live := c.Orders - (c.Orders+9)/10 // one in ten (i%10 == 0) is cancelled
	stored, err := seedVouchers(ctx, db, stock, c.Vouchers, live, now, lap)
	if err != nil {
		return err
	}
	hot := stored[0]
	dbTime, redisTime, err := seedOrders(ctx, orders, audit, hot, c.Orders, now)
	if err != nil {
		return err
	}
	report["db_orders_ms"], report["redis_reservations_ms"] = dbTime.Milliseconds(), redisTime.Milliseconds()

	start := time.Now()
	for _, v := range stored {
		if v.Sold > 0 {
			if err := audit.Restored(ctx, v.ID); err != nil {
				return err
			}
		}
	}
	for {
		n, err := orders.FoldUnits(ctx, 100000)
		if err != nil {
			return err
		}
		if n == 0 {
			break
		}
	}
	lap("finish", start)
	report["hot_voucher"] = hot.ID.String()
	enc := json.NewEncoder(os.Stdout)
	return enc.Encode(report)
}

// openDatabase connects to the database and checks that its schema is the one this
// build knows.
func (c *seedCmd) openDatabase(ctx context.Context) (*bun.DB, error) {
	connectCtx, cancel := context.WithTimeout(ctx, connectTimeout)
	defer cancel()
	db, err := sqlstore.Open(connectCtx, c.DatabaseURL)
	if err != nil {
		return nil, fmt.Errorf("connect to database: %w", err)
	}
	if err := sqlstore.CheckSchema(connectCtx, db); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("database: %w; run `seckill migrate up` first", err)
	}
	return db, nil
}

// span is a batch's range of indexes, from inclusive, to exclusive.
type span struct{ from, to int }

// chunks yields the spans of n items, size at a time.
func chunks(n, size int) func(yield func(span) bool) {
	return func(yield func(span) bool) {
		for from := 0; from < n; from += size {
			if !yield(span{from, min(from+size, n)}) {
				return
			}
		}
	}
}
