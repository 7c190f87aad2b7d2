package redisstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/seckill/seckill/adapters/redisstore"
	"github.com/seckill/seckill/adapters/testenv"
)

func TestDenialsReachEverySubscriber(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	rdb := testenv.Redis(t)
	opts := redisstore.Options{Prefix: "t" + testenv.Unique()}
	// Two subscribers and an announcer on the same Redis stand for three instances.
	a := redisstore.NewDenyChanges(rdb, opts)
	heard := []chan struct{}{make(chan struct{}, 10), make(chan struct{}, 10)}
	done := make(chan error, len(heard))
	for _, ch := range heard {
		go func() {
			done <- redisstore.NewDenyChanges(rdb, opts).SubscribeDenials(ctx, func() { ch <- struct{}{} })
		}()
	}
	wait := func(what string) {
		t.Helper()
		for i, ch := range heard {
			select {
			case <-ch:
			case <-time.After(10 * time.Second):
				t.Fatalf("subscriber %d heard no %s", i, what)
			}
		}
	}
	wait("confirmation") // each calls fn once subscribed
	if err := a.AnnounceDenials(ctx); err != nil {
		t.Fatal(err)
	}
	wait("change")
	cancel()
	for range heard {
		if err := <-done; err != nil {
			t.Fatalf("SubscribeDenials: %v, want nil once ctx is done", err)
		}
	}
}
