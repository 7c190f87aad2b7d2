package redisstore_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/seckill/seckill/domain"
)

// BenchmarkReserve measures successful reservations (checks, decrement, buyer and order
// records, XADD) by distinct users, in parallel, on one voucher with stock for all.
func BenchmarkReserve(b *testing.B) {
	ctx := context.Background()
	client, s := newStock(b, 0)
	v := voucher(1, b.N, 1)
	warm(b, client, s, v)

	var next atomic.Int64
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			user := domain.UserID(next.Add(1))
			if err := s.Reserve(ctx, grab(v.ID, user, 1)); err != nil {
				b.Errorf("reserve for user %d: %v", user, err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s")
}

// BenchmarkReserveSoldOut measures grabs that Redis answers sold out: the cost of the
// checks alone, as after a sale ends before the instances learn of it.
func BenchmarkReserveSoldOut(b *testing.B) {
	ctx := context.Background()
	client, s := newStock(b, 0)
	v := voucher(1, 1, 1)
	warm(b, client, s, v)
	check(b, s.Reserve(ctx, grab(v.ID, 1, 1)))

	var next atomic.Int64
	next.Store(1)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			user := domain.UserID(next.Add(1))
			if err := s.Reserve(ctx, grab(v.ID, user, 1)); !errors.Is(err, domain.ErrSoldOut) {
				b.Errorf("reserve for user %d: %v, want %v", user, err, domain.ErrSoldOut)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s")
}
