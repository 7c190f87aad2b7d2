package redisstore_test

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/adapters/breaker"
	"github.com/seckill/seckill/adapters/redisstore"
	"github.com/seckill/seckill/adapters/testenv"
)

// BenchmarkBreakerHook compares a round trip with and without the breaker hook, in
// the same run: the hook's cost is the difference.
func BenchmarkBreakerHook(b *testing.B) {
	addr := testenv.RedisAddr(b)
	for _, tc := range []struct {
		name string
		hook bool
	}{{"plain", false}, {"breaker", true}} {
		b.Run(tc.name, func(b *testing.B) {
			opts := &redis.Options{Addr: addr}
			redisstore.TuneClientOptions(opts)
			client := redis.NewClient(opts)
			defer client.Close()
			if tc.hook {
				client.AddHook(redisstore.NewBreakerHook("bench", breaker.Settings{}))
			}
			ctx := context.Background()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if err := client.Ping(ctx).Err(); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}
