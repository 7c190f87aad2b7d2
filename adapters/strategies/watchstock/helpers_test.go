package watchstock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/adapters/redisstore"
	"github.com/seckill/seckill/adapters/strategies/watchstock"
	"github.com/seckill/seckill/adapters/testenv"
	"github.com/seckill/seckill/domain"
	"github.com/seckill/seckill/ports"
)

// The fixtures of redisstore's tests that these use, declared again: the strategy
// shares the reserve script's keys and is checked against it.

// now is the application's clock in these tests. It lies far in the future because
// the keys expire at EndsAt+Grace by the Redis server's own clock.
var now = time.Date(2099, time.January, 1, 12, 0, 0, 0, time.UTC)

// voucher returns a voucher on sale from an hour before now to an hour after.
func voucher(id domain.VoucherID, stock, limit int) domain.Voucher {
	return domain.Voucher{ID: id, Title: "voucher " + id.String(), Stock: stock,
		BeginsAt: now.Add(-time.Hour), EndsAt: now.Add(time.Hour), PerUserLimit: limit}
}

// grab returns user's reservation of qty units of id at now, under order id o<user>.
func grab(id domain.VoucherID, user domain.UserID, qty int) domain.Reservation {
	return domain.Reservation{OrderID: domain.OrderID("o" + user.String()), VoucherID: id, UserID: user, Quantity: qty, At: now}
}

// check stops the test on an unexpected error.
func check(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// newStock returns a reserve script's Stock on the test server under a prefix of its own.
func newStock(t testing.TB, grace time.Duration) (redis.UniversalClient, *redisstore.Stock) {
	t.Helper()
	client := testenv.Redis(t)
	return client, redisstore.NewStock(client, redisstore.Options{Prefix: "t" + testenv.Unique(), Grace: grace})
}

// newWatchStock returns a Stock on the test server under a prefix of its own, with
// opts (its Prefix is set here).
func newWatchStock(t testing.TB, opts redisstore.Options) (redis.UniversalClient, *watchstock.Stock) {
	t.Helper()
	client := testenv.Redis(t)
	opts.Prefix = "w" + testenv.Unique()
	return client, watchstock.New(redisstore.NewStock(client, opts), 0)
}

// limitedStock returns a reserve script's Stock with opts under a prefix of its own.
func limitedStock(t *testing.T, opts redisstore.Options) *redisstore.Stock {
	t.Helper()
	client, base := newStock(t, 0)
	opts.Prefix = base.Keys().Prefix
	return redisstore.NewStock(client, opts)
}

// warm loads v through s and deletes its keys when the test ends.
func warm(t testing.TB, client redis.UniversalClient, s ports.Stock, v domain.Voucher) {
	t.Helper()
	k := s.(interface{ Keys() redisstore.Keys }).Keys()
	t.Cleanup(func() {
		err := errors.Join(
			client.Unlink(context.Background(), k.Meta(v.ID), k.Buyers(v.ID), k.Orders(v.ID), k.Stream(v.ID), k.Dead(v.ID),
				k.Waitlist(v.ID), k.Waiting(v.ID), k.Passes(v.ID)).Err(),
			client.Unlink(context.Background(), k.Registry()).Err(),
			client.Unlink(context.Background(), k.Active()).Err())
		if err != nil {
			t.Errorf("delete keys of voucher %d: %v", v.ID, err)
		}
	})
	loaded, err := s.Warm(context.Background(), v)
	check(t, err)
	if loaded == ports.WarmPresent {
		t.Fatalf("warm %d loaded nothing", v.ID)
	}
}

// remaining returns the units left of id.
func remaining(t testing.TB, s ports.Stock, id domain.VoucherID) int {
	t.Helper()
	left, err := s.Remaining(context.Background(), id)
	check(t, err)
	n, ok := left[id]
	if !ok {
		t.Fatalf("voucher %d has no sale state", id)
	}
	return n
}
