package redisstore_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/domain"
)

// listen subscribes to channel and returns a function that collects what was published
// there since: it publishes an end marker and returns the payloads before it. Redis
// delivers one subscriber's messages in the order it ran the PUBLISHes, so nothing
// published before the marker can arrive after it.
func listen(t *testing.T, client *redis.Client, channel string) func() []string {
	t.Helper()
	ctx := context.Background()
	sub := client.Subscribe(ctx, channel)
	t.Cleanup(func() { _ = sub.Close() })
	if _, err := sub.Receive(ctx); err != nil {
		t.Fatalf("subscribe to %s: %v", channel, err)
	}
	const end = "end-of-test"
	return func() []string {
		t.Helper()
		check(t, client.Publish(ctx, channel, end).Err())
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

func TestReleaseReturnsStockOnceUnderConcurrency(t *testing.T) {
	ctx := context.Background()
	client, s := newStock(t, 0)
	v := voucher(1, 5, 2)
	warm(t, client, s, v)
	r := grab(v.ID, 1, 2)
	check(t, s.Reserve(ctx, r))
	check(t, s.Reserve(ctx, grab(v.ID, 2, 1)))

	var released atomic.Int64
	start := make(chan struct{})
	var wg sync.WaitGroup
	for range 50 {
		wg.Go(func() {
			<-start
			ok, err := s.Release(ctx, order(r))
			if err != nil {
				t.Error(err)
			}
			if ok {
				released.Add(1)
			}
		})
	}
	close(start)
	wg.Wait()

	if got, want := released.Load(), int64(1); got != want {
		t.Fatalf("%d releases reported releasing, want %d", got, want)
	}
	if got, want := remaining(t, s, v.ID), 4; got != want {
		t.Fatalf("remaining = %d, want %d (5 - 1 still held)", got, want)
	}
	k := s.Keys()
	held, err := client.HExists(ctx, k.Buyers(v.ID), "1").Result()
	check(t, err)
	recorded, err := client.HExists(ctx, k.Orders(v.ID), string(r.OrderID)).Result()
	check(t, err)
	if held || recorded {
		t.Fatalf("after release buyer held = %v, order recorded = %v; want neither", held, recorded)
	}
	other, err := client.HGet(ctx, k.Buyers(v.ID), "2").Result()
	check(t, err)
	if got, want := other, "o2"; got != want {
		t.Fatalf("another buyer holds %q after the release, want %q", got, want)
	}

	// The user may grab again, and the new reservation takes the units again.
	again := grab(v.ID, 1, 2)
	again.OrderID = "o1-again"
	check(t, s.Reserve(ctx, again))
	if got, want := remaining(t, s, v.ID), 2; got != want {
		t.Fatalf("remaining = %d after grabbing again, want %d", got, want)
	}
}

func TestReleaseRefusesAStaleOrder(t *testing.T) {
	ctx := context.Background()
	client, s := newStock(t, 0)
	v := voucher(1, 5, 1)
	warm(t, client, s, v)
	first := grab(v.ID, 1, 1)
	check(t, s.Reserve(ctx, first))
	ok, err := s.Release(ctx, order(first))
	check(t, err)
	if !ok {
		t.Fatal("first release released nothing")
	}
	second := grab(v.ID, 1, 1)
	second.OrderID = "o1-second"
	check(t, s.Reserve(ctx, second))

	ok, err = s.Release(ctx, order(first))
	check(t, err)
	if ok {
		t.Fatal("a release of the user's former order released the current one")
	}
	if got, want := remaining(t, s, v.ID), 4; got != want {
		t.Fatalf("remaining = %d, want %d", got, want)
	}
	holds, err := client.HGet(ctx, s.Keys().Buyers(v.ID), "1").Result()
	check(t, err)
	if got, want := holds, string(second.OrderID); got != want {
		t.Fatalf("user holds %q, want %q", got, want)
	}
	n, err := client.HLen(ctx, s.Keys().Orders(v.ID)).Result()
	check(t, err)
	if got, want := n, int64(1); got != want {
		t.Fatalf("%d orders recorded, want %d", got, want)
	}

	// A user holding nothing releases nothing either.
	ok, err = s.Release(ctx, order(grab(v.ID, 7, 1)))
	check(t, err)
	if ok {
		t.Fatal("released an order nobody holds")
	}
	if got, want := remaining(t, s, v.ID), 4; got != want {
		t.Fatalf("remaining = %d, want %d", got, want)
	}
}

func TestReleaseWithoutSaleStateChangesNothing(t *testing.T) {
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

func TestReleaseRefusesQuantityBelowOne(t *testing.T) {
	client, s := newStock(t, 0)
	v := voucher(1, 5, 1)
	warm(t, client, s, v)
	r := grab(v.ID, 1, 1)
	check(t, s.Reserve(context.Background(), r))

	o := order(r)
	o.Quantity = -3
	if _, err := s.Release(context.Background(), o); !errors.Is(err, domain.ErrInvalid) {
		t.Fatalf("Release = %v, want %v", err, domain.ErrInvalid)
	}
	if got, want := remaining(t, s, v.ID), 4; got != want {
		t.Fatalf("remaining = %d, want %d", got, want)
	}
	if _, err := closedStock(t).Release(context.Background(), order(r)); !errors.Is(err, redis.ErrClosed) {
		t.Fatalf("Release on a closed client = %v, want %v", err, redis.ErrClosed)
	}
}

func TestReleaseAnnouncesEachReleaseOnce(t *testing.T) {
	ctx := context.Background()
	client, s := newStock(t, 0)
	v := voucher(4, 5, 1)
	warm(t, client, s, v)
	r, other := grab(v.ID, 1, 1), grab(v.ID, 2, 1)
	check(t, s.Reserve(ctx, r))
	check(t, s.Reserve(ctx, other))
	published := listen(t, client, s.Keys().Restock())

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
