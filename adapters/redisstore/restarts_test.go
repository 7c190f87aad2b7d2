package redisstore_test

import (
	"context"
	"errors"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/adapters/redisstore"
	"github.com/seckill/seckill/adapters/testenv"
	"github.com/seckill/seckill/domain"
)

// TestRestartsGateGrabsAfterARestart: a client whose connections report the server's
// run_id notices a restart with its first command after it; from then on the stock
// answers grabs unavailable until Healed, and a heal overtaken by a newer restart does
// not end the gate.
func TestRestartsGateGrabsAfterARestart(t *testing.T) {
	ctx := context.Background()
	addr, stop, start := privateRedis(t)
	restarts := redisstore.NewRestarts()
	opts := &redis.Options{Addr: addr, OnConnect: restarts.Observe}
	redisstore.TuneClientOptions(opts)
	client := redis.NewClient(opts)
	t.Cleanup(func() { _ = client.Close() })
	check(t, restarts.Watch(ctx, client))
	s := redisstore.NewStock(client, redisstore.Options{Prefix: "t" + testenv.Unique(), Restarts: restarts})
	v := voucher(1, 10, 1)
	_, err := s.Warm(ctx, v)
	check(t, err)
	check(t, s.Reserve(ctx, grab(v.ID, 1, 1)))
	if restarts.Healing() {
		t.Fatal("healing before any restart")
	}

	stop()
	start()
	_ = client.Ping(ctx).Err() // the first command after the restart
	if !restarts.Healing() {
		t.Fatal("the restart went unnoticed")
	}
	select {
	case <-restarts.Changed():
	default:
		t.Fatal("no change signaled")
	}
	if err := s.Reserve(ctx, grab(v.ID, 2, 1)); !errors.Is(err, domain.ErrUnavailable) {
		t.Fatalf("grab while healing: %v, want ErrUnavailable", err)
	}
	gen := restarts.Generation()
	stop()
	start()
	_ = client.Ping(ctx).Err()
	restarts.Healed(gen) // overtaken by the second restart
	if !restarts.Healing() {
		t.Fatal("a heal overtaken by a newer restart ended the gate")
	}
	restarts.Healed(restarts.Generation())
	if restarts.Healing() {
		t.Fatal("still healing after Healed")
	}
}
