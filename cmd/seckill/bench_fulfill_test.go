package main

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"github.com/seckill/seckill/adapters/redisstore"
	"github.com/seckill/seckill/adapters/sqlstore"
	"github.com/seckill/seckill/adapters/testenv"
	"github.com/seckill/seckill/application"
	"github.com/seckill/seckill/domain"
)

// fulfillBench is a voucher on real Redis and PostgreSQL with a worker over it.
type fulfillBench struct {
	b       *testing.B
	db      *bun.DB
	stock   *redisstore.Stock
	queue   *redisstore.Queue
	fulfill *application.FulfillOrder
	users   int
}

// newFulfillBench wires the bench; with webhooks the worker writes the webhook events
// of each batch (sqlstore.Orders.WithOutbox), as serve does with SECKILL_WEBHOOK_URL.
func newFulfillBench(b *testing.B, webhooks ...bool) *fulfillBench {
	ctx := context.Background()
	rdb := testenv.Redis(b)
	db, err := sqlstore.Open(ctx, testenv.PostgresURL(b))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = db.Close() })
	if _, err := sqlstore.MigrateUp(ctx, db); err != nil {
		b.Fatal(err)
	}
	prefix := "b" + testenv.Unique()
	b.Cleanup(func() {
		iter := rdb.Scan(ctx, 0, prefix+":*", 1000).Iterator()
		for iter.Next(ctx) {
			rdb.Unlink(ctx, iter.Val())
		}
	})
	stock := redisstore.NewStock(rdb, redisstore.Options{Prefix: prefix})
	queue := redisstore.NewQueue(rdb, redisstore.QueueOptions{Prefix: prefix, Consumer: "bench"})
	orders := sqlstore.NewOrders(db)
	if len(webhooks) > 0 && webhooks[0] {
		orders = orders.WithOutbox()
	}
	return &fulfillBench{b: b, db: db, stock: stock, queue: queue,
		fulfill: application.NewFulfillOrder(orders, queue, application.NewCompensate(stock, orders), redisstore.NewChanges(rdb, redisstore.Options{Prefix: prefix}), 5)}
}

// reserve puts a fresh voucher on sale and makes n reservations of it, which wait in
// its stream.
func (f *fulfillBench) reserve(n int) domain.VoucherID {
	ctx := context.Background()
	now := time.Now()
	v := domain.Voucher{Title: "bench", Stock: max(n, 1), BeginsAt: now.Add(-time.Minute), EndsAt: now.Add(time.Hour), PerUserLimit: 1}
	if err := sqlstore.NewVouchers(f.db).Create(ctx, &v, domain.Author{}, nil); err != nil {
		f.b.Fatal(err)
	}
	if _, err := f.stock.Warm(ctx, v); err != nil {
		f.b.Fatal(err)
	}
	for i := 0; i < n; i++ {
		f.users++
		r := domain.Reservation{OrderID: domain.OrderID(fmt.Sprintf("%026d", f.users)), VoucherID: v.ID,
			UserID: domain.UserID(f.users), Quantity: 1, At: now}
		if err := f.stock.Reserve(ctx, r); err != nil {
			f.b.Fatal(err)
		}
	}
	return v.ID
}

// drain runs a worker with the given batch size until want orders of voucher v are
// in the database.
func (f *fulfillBench) drain(v domain.VoucherID, batch, want int) {
	ctx, cancel := context.WithCancel(context.Background())
	w := application.NewWorker(f.fulfill, f.queue, application.WorkerOptions{
		Batch: batch, Block: 10 * time.Millisecond, ClaimIdle: time.Minute, ClaimEvery: time.Minute,
		MinBackoff: 10 * time.Millisecond, MaxBackoff: 100 * time.Millisecond,
	}, application.WorkerObserver{Problem: func(err error) { f.b.Error(err) }})
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	for {
		var n int
		if err := f.db.NewSelect().TableExpr("orders").ColumnExpr("count(*)").Where("voucher_id = ?", int64(v)).Scan(ctx, &n); err != nil {
			f.b.Fatal(err)
		}
		if n >= want {
			break
		}
		time.Sleep(time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		f.b.Fatal(err)
	}
}

// BenchmarkFulfill measures fulfillment from stream to committed rows: one worker reads
// the voucher's stream, persists in batches of the given size, acknowledges. Each
// operation is one order.
func BenchmarkFulfill(b *testing.B) {
	for _, batch := range []int{1, 10, 100} {
		b.Run("batch="+strconv.Itoa(batch), func(b *testing.B) {
			f := newFulfillBench(b)
			v := f.reserve(b.N)
			b.ResetTimer()
			f.drain(v, batch, b.N)
			b.StopTimer()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "orders/s")
		})
	}
}

// BenchmarkFulfillWithWebhooks is BenchmarkFulfill with webhooks on: each batch's
// transaction also writes an order.awaiting_payment event per order (and
// voucher.sold_out for the last), in one more multi-row insert.
func BenchmarkFulfillWithWebhooks(b *testing.B) {
	for _, batch := range []int{1, 10, 100} {
		b.Run("batch="+strconv.Itoa(batch), func(b *testing.B) {
			f := newFulfillBench(b, true)
			v := f.reserve(b.N)
			b.ResetTimer()
			f.drain(v, batch, b.N)
			b.StopTimer()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "orders/s")
		})
	}
}

// BenchmarkDrain20k is the yardstick: 20,000 reservations waiting in the stream
// after a sale, persisted by one worker with the default batch size.
func BenchmarkDrain20k(b *testing.B) {
	f := newFulfillBench(b)
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		v := f.reserve(20_000)
		b.StartTimer()
		f.drain(v, 100, 20_000)
	}
	b.ReportMetric(b.Elapsed().Seconds()*1000/float64(b.N), "ms/20k")
}
