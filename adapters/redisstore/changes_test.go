package redisstore_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/seckill/seckill/adapters/redisstore"
	"github.com/seckill/seckill/adapters/testenv"
	"github.com/seckill/seckill/domain"
	"github.com/seckill/seckill/ports"
)

func TestChangesReachTheVouchersSubscribers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb := testenv.Redis(t)
	opts := redisstore.Options{Prefix: "t" + testenv.Unique()}
	// Two announcers on the same Redis stand for two instances.
	a, b := redisstore.NewChanges(rdb, opts), redisstore.NewChanges(rdb, opts)
	got := make(chan ports.Change, 10)
	stop, err := b.Subscribe(ctx, 7, func(ch ports.Change) { got <- ch })
	if err != nil {
		t.Fatal(err)
	}
	order, second, third := domain.OrderID("01KB0000000000000000000001"), domain.OrderID("01KB0000000000000000000002"),
		domain.OrderID("01KB0000000000000000000003")
	// A batch's orders of one voucher travel as one message; the subscriber is called
	// once for each, in order, and for the voucher's own change.
	if err := a.Publish(ctx, ports.Change{Voucher: 8, Order: order}, ports.Change{Voucher: 7, Order: order}, ports.Change{Voucher: 7},
		ports.Change{Voucher: 7, Order: second}, ports.Change{Voucher: 8, Order: second}, ports.Change{Voucher: 7, Order: third}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []ports.Change{{Voucher: 7, Order: order}, {Voucher: 7, Order: second}, {Voucher: 7, Order: third}, {Voucher: 7}} {
		select {
		case ch := <-got:
			if ch != want {
				t.Fatalf("got %+v, want %+v", ch, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("no change %+v", want)
		}
	}
	stop()
	if err := a.Publish(ctx, ports.Change{Voucher: 7}); err != nil {
		t.Fatal(err)
	}
	// stop has returned: fn is called no more.
	select {
	case ch := <-got:
		t.Fatalf("a change after stop: %+v", ch)
	default:
	}
	if err := a.Publish(ctx); err != nil {
		t.Fatalf("publish nothing: %v", err)
	}
}

func TestTicketsRedeemOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb := testenv.Redis(t)
	opts := redisstore.Options{Prefix: "t" + testenv.Unique()}
	tickets := redisstore.NewTickets(rdb, opts)
	if err := tickets.Issue(ctx, "ticket-a", 42, time.Minute); err != nil {
		t.Fatal(err)
	}
	// Many instances redeem it at once: one gets it.
	var wg sync.WaitGroup
	var mu sync.Mutex
	won := 0
	for range 20 {
		wg.Go(func() {
			user, err := redisstore.NewTickets(rdb, opts).Redeem(ctx, "ticket-a")
			switch {
			case err == nil && user == 42:
				mu.Lock()
				won++
				mu.Unlock()
			case !errors.Is(err, domain.ErrNotFound):
				t.Errorf("redeem: %d, %v", user, err)
			}
		})
	}
	wg.Wait()
	if won != 1 {
		t.Fatalf("redeemed %d times, want once", won)
	}
	if _, err := tickets.Redeem(ctx, "never-issued"); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("unknown ticket: %v", err)
	}
	if err := tickets.Issue(ctx, "ticket-b", 43, time.Millisecond); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte("ticket-b"))
	key := redisstore.Keys{Prefix: opts.Prefix}.Ticket(hex.EncodeToString(sum[:]))
	testenv.Eventually(t, 10*time.Second, "the ticket expires", func() (bool, string) {
		n, err := rdb.Exists(ctx, key).Result()
		return err == nil && n == 0, "still there"
	})
	if _, err := tickets.Redeem(ctx, "ticket-b"); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("expired ticket: %v", err)
	}
}

// BenchmarkPublishChange measures what announcing a change costs: one PUBLISH (or
// SPUBLISH) round trip per call, nobody subscribed. It is the price a publish per grab
// would add to the grab path, which is why grabs announce nothing (the voucher streams
// read the units instead).
func BenchmarkPublishChange(b *testing.B) {
	ctx := context.Background()
	changes := redisstore.NewChanges(testenv.Redis(b), redisstore.Options{Prefix: "b" + testenv.Unique()})
	ch := ports.Change{Voucher: 7, Order: "01KB0000000000000000000001"}
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := changes.Publish(ctx, ch); err != nil {
				b.Error(err)
				return
			}
		}
	})
}
