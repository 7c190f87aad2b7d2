package redisstore_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seckill/seckill/domain"
)

// BenchmarkWaitingRoomJoin measures joins of one voucher's waiting room by distinct
// users, 32 per CPU at once: "early" before the start (into the set shuffled at the
// start), "late" after it (appended to the line with their arrival number), each one
// script call. It reports Redis's own CPU time per join.
func BenchmarkWaitingRoomJoin(b *testing.B) {
	for _, tc := range []struct {
		name   string
		offset time.Duration
	}{{"early", -time.Second}, {"late", time.Second}} {
		b.Run(tc.name, func(b *testing.B) {
			w := room(b)
			v := voucher(1, 10, 1)
			*w.at = v.BeginsAt.Add(tc.offset).UnixMilli()
			var next atomic.Int64
			cpu0 := redisCPU(b, w.client)
			b.SetParallelism(32)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, err := w.Join(context.Background(), v, domain.UserID(next.Add(1))); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.StopTimer()
			b.ReportMetric((redisCPU(b, w.client)-cpu0).Seconds()*1e6/float64(b.N), "redis-µs/op")
		})
	}
}

// BenchmarkWaitingRoomInstall measures the install of a shuffled order of 100,000
// early joiners (twenty script calls of 5,000), and the position read that follows.
func BenchmarkWaitingRoomInstall(b *testing.B) {
	const n = 100000
	order := make([]domain.UserID, n)
	for i := range order {
		order[i] = domain.UserID(n - i)
	}
	b.Run("install-100000", func(b *testing.B) {
		for range b.N {
			b.StopTimer()
			w := room(b)
			v := voucher(1, 10, 1)
			b.StartTimer()
			if err := w.Install(context.Background(), v, order); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("place", func(b *testing.B) {
		w := room(b)
		v := voucher(1, 10, 1)
		if err := w.Install(context.Background(), v, order); err != nil {
			b.Fatal(err)
		}
		b.ResetTimer()
		for i := range b.N {
			if _, err := w.Place(context.Background(), v.ID, order[i%n]); err != nil {
				b.Fatal(err)
			}
		}
	})
}
