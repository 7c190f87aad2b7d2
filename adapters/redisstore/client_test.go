package redisstore_test

import (
	"context"
	"net/url"
	"os"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/adapters/redisstore"
	"github.com/seckill/seckill/adapters/testenv"
)

// NewClient makes a cluster client when the server named is a cluster node, even with
// no other seed given, and a plain client otherwise, ignoring addr parameters there.
func TestNewClientDetectsACluster(t *testing.T) {
	ctx := context.Background()
	raw := testenv.RedisURL(t)
	u, err := url.Parse(raw)
	check(t, err)
	cluster := os.Getenv(testenv.RedisURLVar) == testenv.ClusterRedis
	q := u.Query()
	if cluster {
		q.Del("addr") // the first node alone
	} else {
		q.Add("addr", "127.0.0.1:1") // a seed nobody listens on: ignored
	}
	u.RawQuery = q.Encode()

	var tuned atomic.Int64 // node clients may be made concurrently
	client, err := redisstore.NewClient(ctx, u.String(), func(*redis.Options) { tuned.Add(1) })
	check(t, err)
	t.Cleanup(func() { _ = client.Close() })
	check(t, client.Ping(ctx).Err())
	_, isCluster := client.(*redis.ClusterClient)
	if isCluster != cluster {
		t.Fatalf("NewClient(%s) made %T; want a cluster client: %v", u.Redacted(), client, cluster)
	}
	if tuned.Load() == 0 {
		t.Fatal("the tuning was never applied")
	}
	if cluster {
		// Every node's client is tuned, not only the first one asked.
		check(t, client.(*redis.ClusterClient).ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error {
			return c.Ping(ctx).Err()
		}))
		if n := tuned.Load(); n < 3 {
			t.Fatalf("tuned %d clients, want the first node's and each master's", n)
		}
	}
}

func TestNewClientRefusesABadURL(t *testing.T) {
	for _, raw := range []string{"http://127.0.0.1:6379", "redis://127.0.0.1:6379?addr=nohost", "redis://127.0.0.1:6379?bogus=1"} {
		if _, err := redisstore.NewClient(context.Background(), raw, func(*redis.Options) {}); err == nil {
			t.Errorf("NewClient(%q) = nil error, want a parse error", raw)
		}
	}
}
