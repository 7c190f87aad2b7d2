package redisstore_test

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/adapters/redisstore"
	"github.com/seckill/seckill/adapters/stocktest"
	"github.com/seckill/seckill/adapters/strategies/watchstock"
	"github.com/seckill/seckill/adapters/testenv"
	"github.com/seckill/seckill/domain"
)

// TestStockContract runs the ports.Stock contract suite against the reserve script.
func TestStockContract(t *testing.T) {
	stocktest.Run(t, func(t *testing.T) stocktest.Subject {
		client, s := newStock(t, 0)
		forgetPrefix(t, client, s.Keys().Prefix)
		return stocktest.Subject{Stock: s, Recorded: streamed(client, s.Keys()), IssuePass: issuePass(client, s.Keys()),
			Audit: redisstore.NewAudit(client, redisstore.Options{Prefix: s.Keys().Prefix})}
	})
}

// TestWatchStockContract runs it against the WATCH/MULTI strategy, which may give up
// under contention (its retry cap: TestWatchReserveGivesUpAfterItsAttempts).
func TestWatchStockContract(t *testing.T) {
	stocktest.Run(t, func(t *testing.T) stocktest.Subject {
		// A connection for every grab of the concurrency test, so they all contend at
		// once.
		client, err := redisstore.NewClient(context.Background(), testenv.RedisURL(t), func(o *redis.Options) { o.PoolSize = 2000 })
		check(t, err)
		t.Cleanup(func() { _ = client.Close() })
		w := watchstock.New(redisstore.NewStock(client, redisstore.Options{Prefix: "w" + testenv.Unique()}), 0)
		forgetPrefix(t, client, w.Keys().Prefix)
		return stocktest.Subject{Stock: w, Recorded: streamed(client, w.Keys()), UnavailableUnderContention: true,
			IssuePass: issuePass(client, w.Keys()),
			Audit:     redisstore.NewAudit(client, redisstore.Options{Prefix: w.Keys().Prefix})}
	})
}

// forgetPrefix deletes every key under prefix when the test ends.
func forgetPrefix(t *testing.T, client redis.UniversalClient, prefix string) {
	t.Cleanup(func() {
		if err := testenv.DeleteKeys(context.Background(), client, prefix+":*"); err != nil {
			t.Errorf("delete the keys of %s: %v", prefix, err)
		}
	})
}

// issuePass makes a pass outstanding under k as the waiting room does: the user's
// member of the voucher's passes set, scored with the pass's expiry.
func issuePass(client redis.UniversalClient, k redisstore.Keys) func(*testing.T, domain.Pass) {
	return func(t *testing.T, p domain.Pass) {
		t.Helper()
		check(t, client.ZAdd(context.Background(), k.Passes(p.Voucher),
			redis.Z{Score: float64(p.Expires.UnixMilli()), Member: p.User.String()}).Err())
	}
}

// streamed returns what a grab recorded for fulfillment under k: the entries of a
// voucher's stream, decoded.
func streamed(client redis.UniversalClient, k redisstore.Keys) func(*testing.T, domain.VoucherID) []domain.Reservation {
	return func(t *testing.T, id domain.VoucherID) []domain.Reservation {
		t.Helper()
		entries, err := client.XRange(context.Background(), k.Stream(id), "-", "+").Result()
		check(t, err)
		var out []domain.Reservation
		for _, e := range entries {
			r, err := redisstore.DecodeEntry(id, e.Values)
			if err != nil {
				t.Fatalf("stream entry %s: %v", e.ID, err)
			}
			out = append(out, r)
		}
		return out
	}
}
