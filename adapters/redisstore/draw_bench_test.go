package redisstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/seckill/seckill/adapters/redisstore"
	"github.com/seckill/seckill/domain"
)

// BenchmarkDraw measures a draw of 100,000 entrants for 10,000 units as
// application.RunDraws carries it out (its default batch of 1,000 steps per call):
// closing and reading the entries, the shuffle, then the backfill's 90,000 places on
// the waitlist and the 10,000 winners' reservations (stream entries the workers
// persist as awaiting_payment orders). It reports the seconds per draw and the
// winners' reservations a second.
func BenchmarkDraw(b *testing.B) {
	const entrants, units, batch = 100_000, 10_000, 1000
	ctx := context.Background()
	client, s := newStock(b, 0)
	e := redisstore.NewEntries(s)
	members := make([]any, entrants)
	for i := range members {
		members[i] = 1_000_000 + i*7
	}
	var total time.Duration
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		v := drawVoucher(domain.VoucherID(1000+i), units, time.Now().Add(-time.Second))
		v.Seed = domain.NewSeed()
		warm(b, client, s, v)
		cleanupEntries(b, client, s, v.ID)
		check(b, client.SAdd(ctx, s.Keys().Entries(v.ID), members...).Err())
		b.StartTimer()
		start := time.Now()
		ids, err := e.Close(ctx, v)
		check(b, err)
		d := domain.NewDraw(v, ids, time.Now())
		steps := domain.DrawSteps(d.Order(), d.Winners)
		orders := make([]domain.OrderID, len(steps))
		for j := range orders {
			orders[j] = domain.OrderID("01JDRAW" + v.ID.String() + "X" + steps[j].User.String())
		}
		reserved := 0
		for taken := 0; taken < len(steps); {
			end := min(taken+batch, len(steps))
			next, n, err := e.Take(ctx, v.ID, taken, len(steps), steps[taken:end], orders[taken:end])
			check(b, err)
			reserved += n
			taken = next
		}
		total += time.Since(start)
		if reserved != units {
			b.Fatalf("reserved %d, want %d", reserved, units)
		}
	}
	b.ReportMetric(total.Seconds()/float64(b.N), "s/draw")
	b.ReportMetric(float64(units*b.N)/total.Seconds(), "winners/s")
}
