package redisstore_test

import (
	"context"
	"testing"

	"github.com/seckill/seckill/adapters/redisstore"
	"github.com/seckill/seckill/domain"
)

// BenchmarkWaitlistHandOff measures the hand-off: one release of a sold-out voucher's
// only unit whose script hands it to the head of a waitlist of b.N users (the order
// record, the buyer, the stream entry, the user leaving the list), one after the
// other, each releasing the order the one before was handed. It reports hand-offs a
// second; a hand-off is one script call (Stock.Release), as a release without a
// waitlist is, plus the users' index write after it.
func BenchmarkWaitlistHandOff(b *testing.B) {
	ctx := context.Background()
	client, s := newStock(b, 0)
	w := redisstore.NewWaitlist(s)
	v := liveVoucher(1, 1, 1)
	warm(b, client, s, v)
	first := take(b, s, v.ID, 1)[0]
	users := make([]domain.UserID, b.N)
	for i := range users {
		users[i] = domain.UserID(1000 + i)
		if _, err := w.Join(ctx, v.ID, users[i], domain.OrderID("w"+users[i].String())); err != nil {
			b.Fatal(err)
		}
	}
	b.Cleanup(func() {
		keys := make([]string, 0, 2*len(users))
		for _, u := range users {
			keys = append(keys, s.Keys().UserOrders(u), s.Keys().UserWaits(u))
		}
		for len(keys) > 0 {
			n := min(len(keys), 500)
			for _, k := range keys[:n] {
				client.Del(ctx, k) // each key in its own slot on a cluster
			}
			keys = keys[n:]
		}
	})
	held := order(first)
	b.ResetTimer()
	for i, u := range users {
		released, err := s.Release(ctx, held)
		if err != nil || !released {
			b.Fatalf("release %d: %v, %v", i, released, err)
		}
		held = domain.Order{ID: domain.OrderID("w" + u.String()), VoucherID: v.ID, UserID: u, Quantity: 1, Status: domain.StatusCancelled}
	}
	b.StopTimer()
	if s.HandOffs() != int64(b.N) {
		b.Fatalf("%d hand-offs, want %d", s.HandOffs(), b.N)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "handoffs/s")
}

// BenchmarkReleaseToSale is the baseline of BenchmarkWaitlistHandOff, in the same
// terms: one release of a voucher's only unit with nobody waiting, so it goes back on
// sale (and is announced), the next user's grab taking it again untimed.
func BenchmarkReleaseToSale(b *testing.B) {
	ctx := context.Background()
	client, s := newStock(b, 0)
	v := liveVoucher(1, 1, 1)
	warm(b, client, s, v)
	held := order(take(b, s, v.ID, 1)[0])
	b.ResetTimer()
	for i := range b.N {
		released, err := s.Release(ctx, held)
		if err != nil || !released {
			b.Fatalf("release %d: %v, %v", i, released, err)
		}
		b.StopTimer()
		held = order(take(b, s, v.ID, domain.UserID(1000+i))[0])
		b.StartTimer()
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "releases/s")
}
