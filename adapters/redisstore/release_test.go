package redisstore_test

import (
	"context"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/domain"
)

// listen subscribes to channel and returns a function that collects what was published
// there since: it publishes an end marker and returns the payloads before it. Redis
// delivers one subscriber's messages in the order it ran the PUBLISHes, so nothing
// published before the marker can arrive after it.
func listen(t *testing.T, client redis.UniversalClient, channel string) func() []string {
	t.Helper()
	ctx := context.Background()
	sub := client.Subscribe(ctx, channel)
	if _, ok := client.(*redis.ClusterClient); ok {
		sub = client.SSubscribe(ctx, channel)
	}
	t.Cleanup(func() { _ = sub.Close() })
	if _, err := sub.Receive(ctx); err != nil {
		t.Fatalf("subscribe to %s: %v", channel, err)
	}
	const end = "end-of-test"
	return func() []string {
		t.Helper()
		check(t, publish(ctx, client, channel, end))
		var got []string
		for {
			wait, cancel := context.WithTimeout(ctx, 10*time.Second)
			m, err := sub.ReceiveMessage(wait)
			cancel()
			if err != nil {
				t.Fatalf("receive from %s: %v", channel, err)
			}
			if m.Payload == end {
				return got
			}
			got = append(got, m.Payload)
		}
	}
}

// order returns the order r became, as the database would hand it to Release.
// live returns the live orders (awaiting payment) rs became, as the database holds
// them for Restore.
func live(rs ...domain.Reservation) []domain.Order {
	out := make([]domain.Order, len(rs))
	for i, r := range rs {
		out[i] = order(r)
		out[i].Status = domain.StatusAwaitingPayment
	}
	return out
}

func order(r domain.Reservation) domain.Order {
	return domain.Order{
		ID:        r.OrderID,
		VoucherID: r.VoucherID,
		UserID:    r.UserID,
		Quantity:  r.Quantity,
		Status:    domain.StatusCancelled,
		CreatedAt: r.At,
	}
}

// TestReleaseForgetsTheRecords checks what a release does to the buyers and orders
// hashes (the contract suite, TestStockContract, checks the units and the answers): it
// deletes the order's records, and only while the buyer's record still names the order.
func TestReleaseForgetsTheRecords(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	client, s := newStock(t, 0)
	v := voucher(1, 5, 1)
	warm(t, client, s, v)
	first := reserve(t, s, v.ID, 1, 2)[0]

	released, err := s.Release(ctx, order(first))
	check(t, err)
	if !released {
		t.Fatal("release released nothing")
	}
	k := s.Keys()
	buyers, err := client.HGetAll(ctx, k.Buyers(v.ID)).Result()
	check(t, err)
	if want := map[string]string{"2": "o2"}; !maps.Equal(buyers, want) {
		t.Fatalf("buyers after the release = %v, want %v", buyers, want)
	}
	orders, err := client.HGetAll(ctx, k.Orders(v.ID)).Result()
	check(t, err)
	if got, want := slices.Sorted(maps.Keys(orders)), []string{"o2"}; !slices.Equal(got, want) {
		t.Fatalf("orders after the release = %v, want %v", got, want)
	}

	// The user grabs again; a release of the former order leaves the new one's records.
	again := grab(v.ID, 1, 1)
	again.OrderID = "o1-again"
	check(t, s.Reserve(ctx, again))
	released, err = s.Release(ctx, order(first))
	check(t, err)
	if released {
		t.Fatal("a release of the user's former order released")
	}
	buyers, err = client.HGetAll(ctx, k.Buyers(v.ID)).Result()
	check(t, err)
	if want := map[string]string{"1": "o1-again", "2": "o2"}; !maps.Equal(buyers, want) {
		t.Fatalf("buyers after a stale release = %v, want %v", buyers, want)
	}
	orders, err = client.HGetAll(ctx, k.Orders(v.ID)).Result()
	check(t, err)
	if got, want := slices.Sorted(maps.Keys(orders)), []string{"o1-again", "o2"}; !slices.Equal(got, want) {
		t.Fatalf("orders after a stale release = %v, want %v", got, want)
	}
}

func TestReleaseWithoutSaleStateChangesNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	client, s := newStock(t, 0)
	cleanup(t, client, s, 99)
	k := s.Keys()
	// A leftover buyer record without sale state: still nothing to release into.
	check(t, client.HSet(ctx, k.Buyers(99), "1", "o1").Err())

	ok, err := s.Release(ctx, order(grab(99, 1, 1)))
	check(t, err)
	if ok {
		t.Fatal("released into a voucher without sale state")
	}
	n, err := client.Exists(ctx, k.Meta(99), k.Orders(99), k.Stream(99)).Result()
	check(t, err)
	if n != 0 {
		t.Fatalf("a release without sale state created %d keys", n)
	}
	holds, err := client.HGet(ctx, k.Buyers(99), "1").Result()
	check(t, err)
	if got, want := holds, "o1"; got != want {
		t.Fatalf("buyer record = %q, want it untouched (%q)", got, want)
	}
}

// publish sends payload on channel as the scripts do: SPUBLISH on a cluster.
func publish(ctx context.Context, client redis.UniversalClient, channel, payload string) error {
	if _, ok := client.(*redis.ClusterClient); ok {
		return client.SPublish(ctx, channel, payload).Err()
	}
	return client.Publish(ctx, channel, payload).Err()
}

func TestReleaseAnnouncesEachReleaseOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	client, s := newStock(t, 0)
	v := voucher(4, 5, 1)
	warm(t, client, s, v)
	r, other := grab(v.ID, 1, 1), grab(v.ID, 2, 1)
	check(t, s.Reserve(ctx, r))
	check(t, s.Reserve(ctx, other))
	published := listen(t, client, s.RestockChannel(v.ID))

	for i, want := range []bool{true, false} {
		ok, err := s.Release(ctx, order(r))
		check(t, err)
		if ok != want {
			t.Fatalf("release %d released = %v, want %v", i+1, ok, want)
		}
	}
	// Refused releases: an order the user's reservation does not name, a user holding
	// nothing, a voucher without sale state.
	stale := order(other)
	stale.ID = "o2-stale"
	for _, o := range []domain.Order{stale, order(grab(v.ID, 9, 1)), order(grab(99, 2, 1))} {
		ok, err := s.Release(ctx, o)
		check(t, err)
		if ok {
			t.Fatalf("release of %+v released", o)
		}
	}
	if got, want := published(), []string{"4"}; !slices.Equal(got, want) {
		t.Fatalf("published %q, want %q (one release, once)", got, want)
	}
}
