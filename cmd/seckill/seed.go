package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/seckill/seckill/adapters/redisstore"
	"github.com/seckill/seckill/adapters/sqlstore"
	"github.com/seckill/seckill/domain"
)

type seedCmd struct {
	Common `embed:""`

	Vouchers int `name:"vouchers" default:"10" help:"How many vouchers on sale to make."`
	Orders   int `name:"orders" default:"1000" help:"How many orders the first voucher made (the popular sale) holds."`
}

// seedBatch is how many rows or reservations one statement or pipeline carries.
const seedBatch = 5000

// Validate checks the flags before Run.
func (c *seedCmd) Validate() error {
	switch {
	case c.Vouchers < 1:
		return errors.New("--vouchers: must be at least 1")
	case c.Orders < 0:
		return errors.New("--orders: must not be negative")
	case c.embeddedRedis():
		// The in-process Redis lives inside serve; there is nothing to fill.
		return errors.New("SECKILL_REDIS_URL (--redis-url) or SECKILL_REDIS_SENTINELS (--redis-sentinels): is required by seed")
	}
	return c.Common.validate()
}

// Run fills the database and Redis with consistent generated sales: --vouchers live
// vouchers (stock 100 each, on sale from an hour ago for a day), the first of which
// holds --orders orders of one unit, one per user (users 1 to --orders), made over
// the last --orders milliseconds: 70% paid, 20% awaiting payment, 10% cancelled (and
// released). Every voucher's sale state is loaded in Redis with the reservations of
// its live orders, as a warm-up would leave it, and its stock is 10% above the live
// units. It prints what it made and how long each part took, as JSON.
func (c *seedCmd) Run(ctx context.Context) error {
	log, err := newLogger(c.LogLevel, c.LogFormat)
	if err != nil {
		return err
	}
	defer func() { _ = log.Sync() }()
	m := newMetrics()
	db, closeDB, err := openDatabase(ctx, c.Common, log, m)
	if err != nil {
		return err
	}
	defer closeDB()
	client, closeRedis, err := openRedis(ctx, c.Common, log, m, redisstore.NewRestarts())
	if err != nil {
		return err
	}
	defer closeRedis()
	stock := redisstore.NewStock(client, stockOptions(c.Common))
	audit := redisstore.NewAudit(client, stockOptions(c.Common))
	orders := sqlstore.NewOrders(db)
	report := map[string]any{"vouchers": c.Vouchers, "orders": c.Orders}
	lap := func(name string, start time.Time) { report[name+"_ms"] = time.Since(start).Milliseconds() }

	now := time.Now()
	live := c.Orders - (c.Orders+9)/10 // one in ten (i%10 == 0) is cancelled
	vs := make([]domain.Voucher, c.Vouchers)
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
			return err
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
			return err
		}
	}
	lap("redis_warm", start)

	hot := stored[0]
	entropy := ulid.Monotonic(rand.New(rand.NewSource(1)), 0) //nolint:gosec // ids of generated data
	var dbTime, redisTime time.Duration
	for batch := range chunks(c.Orders, seedBatch) {
		batchOrders := make([]domain.Order, 0, batch.to-batch.from)
		var rs []domain.Reservation
		for i := batch.from; i < batch.to; i++ {
			at := now.Add(time.Duration(i-c.Orders) * time.Millisecond)
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
				rs = append(rs, domain.Reservation{OrderID: o.ID, VoucherID: o.VoucherID, UserID: o.UserID,
					Quantity: o.Quantity, At: o.CreatedAt})
			}
		}
		t := time.Now()
		if err := orders.Import(ctx, batchOrders); err != nil {
			return err
		}
		dbTime += time.Since(t)
		t = time.Now()
		if err := audit.Import(ctx, rs); err != nil {
			return err
		}
		redisTime += time.Since(t)
	}
	report["db_orders_ms"], report["redis_reservations_ms"] = dbTime.Milliseconds(), redisTime.Milliseconds()

	start = time.Now()
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
