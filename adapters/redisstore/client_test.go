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

// The failover client carries the URL's credentials and database and every setting
// the tune function made, as the single server's client does; the address is the
// sentinels' business.
func TestNewFailoverClientKeepsTheTuning(t *testing.T) {
	tune := func(o *redis.Options) {
		redisstore.TuneClientOptions(o)
		o.PoolSize, o.MaxIdleConns = 64, 16
	}
	c, err := redisstore.NewFailoverClient("redis://user:secret@ignored:1/3", "seckill", []string{"127.0.0.1:1"}, tune)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// Compared with a single server's client, both after go-redis's defaults.
	wantOpts := &redis.Options{}
	tune(wantOpts)
	single := redis.NewClient(wantOpts)
	defer single.Close()
	want, got := single.Options(), c.Options()
	if got.Username != "user" || got.Password != "secret" || got.DB != 3 {
		t.Errorf("credentials and db: got %q %q %d, want user secret 3", got.Username, got.Password, got.DB)
	}
	type setting struct {
		name      string
		got, want any
	}
	for _, s := range []setting{
		{"ContextTimeoutEnabled", got.ContextTimeoutEnabled, want.ContextTimeoutEnabled},
		{"DialTimeout", got.DialTimeout, want.DialTimeout},
		{"DialerRetries", got.DialerRetries, want.DialerRetries},
		{"ReadTimeout", got.ReadTimeout, want.ReadTimeout},
		{"WriteTimeout", got.WriteTimeout, want.WriteTimeout},
		{"MaxRetries", got.MaxRetries, want.MaxRetries},
		{"MinRetryBackoff", got.MinRetryBackoff, want.MinRetryBackoff},
		{"MaxRetryBackoff", got.MaxRetryBackoff, want.MaxRetryBackoff},
		{"PoolTimeout", got.PoolTimeout, want.PoolTimeout},
		{"PoolSize", got.PoolSize, want.PoolSize},
		{"MaxIdleConns", got.MaxIdleConns, want.MaxIdleConns},
	} {
		if s.got != s.want {
			t.Errorf("%s: got %v, want %v", s.name, s.got, s.want)
		}
	}
}

func TestNewFailoverClientRefusesABadURL(t *testing.T) {
	if _, err := redisstore.NewFailoverClient("http://127.0.0.1:1", "seckill", []string{"127.0.0.1:1"}, func(*redis.Options) {}); err == nil {
		t.Fatal("a URL that is not redis:// was accepted")
	}
}
