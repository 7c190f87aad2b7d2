package redisstore_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/adapters/redisstore"
	"github.com/seckill/seckill/adapters/testenv"
	"github.com/seckill/seckill/domain"
	"github.com/seckill/seckill/ports"
)

// subscriber runs s.SubscribeRestocks until the test ends or stop is called; the ids
// fn receives arrive on got. done is closed when SubscribeRestocks returned, err.
type subscriber struct {
	got  chan domain.VoucherID
	done chan struct{}
	err  error
	stop context.CancelFunc
}

func subscribe(t *testing.T, s *redisstore.Stock) *subscriber {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	sub := &subscriber{got: make(chan domain.VoucherID, 100), done: make(chan struct{}), stop: cancel}
	go func() {
		defer close(sub.done)
		sub.err = s.SubscribeRestocks(ctx, func(id domain.VoucherID) { sub.got <- id })
	}()
	t.Cleanup(func() {
		cancel()
		<-sub.done
	})
	return sub
}

// stopped cancels the subscription and returns what SubscribeRestocks returned.
func (sub *subscriber) stopped(t *testing.T) error {
	t.Helper()
	sub.stop()
	select {
	case <-sub.done:
		return sub.err
	case <-time.After(10 * time.Second):
		t.Fatal("SubscribeRestocks still running 10s after its context was cancelled")
	}
	return nil
}

// next returns the next id the subscriber received.
func (sub *subscriber) next(t *testing.T) domain.VoucherID {
	t.Helper()
	select {
	case id := <-sub.got:
		return id
	case <-sub.done:
		t.Fatalf("SubscribeRestocks returned %v while a restock was expected", sub.err)
	case <-time.After(10 * time.Second):
		t.Fatal("no restock received in 10s")
	}
	return 0
}

// waitSubscribed waits until channel has exactly one subscriber: the test's own. Its
// prefix is the test's alone, so no one else's subscription counts.
func waitSubscribed(t *testing.T, client redis.UniversalClient, channel string) {
	t.Helper()
	numSub := func() (map[string]int64, error) {
		cc, ok := client.(*redis.ClusterClient)
		if !ok {
			return client.PubSubNumSub(context.Background(), channel).Result()
		}
		node, err := cc.MasterForKey(context.Background(), channel)
		if err != nil {
			return nil, err
		}
		return node.PubSubShardNumSub(context.Background(), channel).Result()
	}
	testenv.Eventually(t, testenv.Patience, channel+" has one subscriber", func() (bool, string) {
		n, err := numSub()
		return err == nil && n[channel] == 1, fmt.Sprintf("%v, %v", n, err)
	})
}

func TestSubscribeRestocksDeliversUntilCancelled(t *testing.T) {
	ctx := context.Background()
	client, s := newStock(t, 0)
	channel := s.RestockChannel(1)
	warm(t, client, s, voucher(1, 5, 1))
	warm(t, client, s, voucher(2, 5, 1))
	a, b := grab(1, 1, 1), grab(2, 1, 1)
	check(t, s.Reserve(ctx, a))
	check(t, s.Reserve(ctx, b))

	sub := subscribe(t, s)
	waitSubscribed(t, client, channel)
	waitSubscribed(t, client, s.RestockChannel(2))
	// Payloads that are not voucher ids are skipped; the ids after them still arrive,
	// in order.
	for _, junk := range []string{"", "x", "0", "-3", "1.5", "99999999999999999999"} {
		check(t, publish(ctx, client, channel, junk))
	}
	if _, err := s.Release(ctx, order(a)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Release(ctx, order(a)); err != nil { // refused: announces nothing
		t.Fatal(err)
	}
	if _, err := s.Release(ctx, order(b)); err != nil {
		t.Fatal(err)
	}
	// One channel keeps its order; on a cluster the two vouchers' channels are apart
	// (on their own shards, read by their own connections), so they may come either way.
	got := []domain.VoucherID{sub.next(t), sub.next(t)}
	slices.Sort(got)
	if want := []domain.VoucherID{1, 2}; !slices.Equal(got, want) {
		t.Fatalf("restocks of vouchers %v, want %v", got, want)
	}

	if err := sub.stopped(t); err != nil {
		t.Fatalf("SubscribeRestocks = %v after cancel, want nil", err)
	}
	select {
	case id := <-sub.got:
		t.Fatalf("unexpected restock of voucher %d", id)
	default:
	}
}

func TestSubscribeRestocksReportsAFailedSubscription(t *testing.T) {
	// Nothing listens on the port of a listener just closed.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	check(t, err)
	addr := l.Addr().String()
	check(t, l.Close())
	client := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	t.Cleanup(func() { _ = client.Close() })
	s := redisstore.NewStock(client, redisstore.Options{})

	err = s.SubscribeRestocks(context.Background(), func(domain.VoucherID) {})
	if err == nil || !strings.HasPrefix(err.Error(), "subscribe to restocks: ") {
		t.Fatalf("SubscribeRestocks without a server = %v, want a subscribe error", err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := s.SubscribeRestocks(ctx, func(domain.VoucherID) {}); err != nil {
		t.Fatalf("SubscribeRestocks with a done context = %v, want nil", err)
	}
}

// ownRedis starts a redis-server of the test's own on a free port and returns its
// address and functions that kill it (as a crash would) and start it again on the same
// port, with no data. The shared test server is left alone: other packages' tests use
// it at the same time.
func ownRedis(t *testing.T) (addr string, kill, start func()) {
	t.Helper()
	testenv.RedisURL(t) // skip, or fail in CI, as every Redis test does
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("redis-server not found: %v", err)
		}
		t.Skipf("redis-server not found: %v", err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	check(t, err)
	port := l.Addr().(*net.TCPAddr).Port
	check(t, l.Close())
	addr = "127.0.0.1:" + strconv.Itoa(port)
	dir := t.TempDir()

	var cmd *exec.Cmd
	start = func() {
		t.Helper()
		cmd = exec.Command(bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1",
			"--save", "", "--appendonly", "no", "--dir", dir)
		check(t, cmd.Start())
		probe := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
		defer probe.Close()
		testenv.Eventually(t, testenv.Patience, "own redis-server on "+addr+" answers", func() (bool, string) {
			err := probe.Ping(context.Background()).Err()
			return err == nil, fmt.Sprint(err)
		})
	}
	kill = func() {
		t.Helper()
		if cmd == nil {
			return
		}
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		cmd = nil
	}
	start()
	t.Cleanup(kill)
	return addr, kill, start
}

func TestSubscribeRestocksSurvivesARedisRestart(t *testing.T) {
	ctx := context.Background()
	addr, kill, start := ownRedis(t)
	client := redis.NewClient(&redis.Options{Addr: addr})
	t.Cleanup(func() { _ = client.Close() })
	s := redisstore.NewStock(client, redisstore.Options{Prefix: "t" + testenv.Unique()})
	channel := s.Keys().Restock()

	sub := subscribe(t, s)
	waitSubscribed(t, client, channel)
	check(t, client.Publish(ctx, channel, "5").Err())
	if got, want := sub.next(t), domain.VoucherID(5); got != want {
		t.Fatalf("restock of voucher %d, want %d", got, want)
	}

	kill()
	start() // empty: the sale state is gone with the old process
	waitSubscribed(t, client, channel)
	select {
	case <-sub.done:
		t.Fatalf("SubscribeRestocks returned %v across a restart", sub.err)
	default:
	}

	v := voucher(6, 3, 1)
	loaded, err := s.Warm(ctx, v)
	check(t, err)
	if loaded != ports.WarmLoaded {
		t.Fatal("warm-up after the restart loaded nothing")
	}
	r := grab(v.ID, 1, 1)
	check(t, s.Reserve(ctx, r))
	released, err := s.Release(ctx, order(r))
	check(t, err)
	if !released {
		t.Fatal("release after the restart released nothing")
	}
	if got, want := sub.next(t), v.ID; got != want {
		t.Fatalf("restock of voucher %d after the restart, want %d", got, want)
	}

	if err := sub.stopped(t); err != nil {
		t.Fatalf("SubscribeRestocks = %v after cancel, want nil", err)
	}
}

// A voucher warmed after the subscription started is heard of too: on a cluster its
// own channel is subscribed to as it is warmed.
func TestSubscribeRestocksHearsOfVouchersWarmedLater(t *testing.T) {
	ctx := context.Background()
	client, s := newStock(t, 0)
	t.Cleanup(func() { _ = client.Unlink(context.Background(), s.Keys().Active()).Err() })
	sub := subscribe(t, s)
	v := voucher(3, 5, 1)
	warm(t, client, s, v)
	waitSubscribed(t, client, s.RestockChannel(v.ID))
	r := grab(v.ID, 1, 1)
	check(t, s.Reserve(ctx, r))
	released, err := s.Release(ctx, order(r))
	check(t, err)
	if !released {
		t.Fatal("release released nothing")
	}
	if got := sub.next(t); got != v.ID {
		t.Fatalf("restock of voucher %d, want %d", got, v.ID)
	}
}
