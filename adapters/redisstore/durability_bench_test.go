package redisstore_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/adapters/redisstore"
	"github.com/seckill/seckill/adapters/testenv"
	"github.com/seckill/seckill/domain"
)

// BenchmarkReserveDurability measures coalesced reservations (as serve makes them, 32
// grabs per CPU at once) under each durability setting, in the same run, so their
// ratios hold on a busy machine: "min-replicas=0" and "min-replicas=1" (a WAIT for one
// replica per call, Options.MinReplicas), both without an append-only file, then
// "appendfsync=everysec" and "appendfsync=always" (AOF on, no WAIT). It changes the
// server's persistence with CONFIG SET, so it runs only when
// SECKILL_BENCH_DURABILITY=1 says the Redis of SECKILL_TEST_REDIS_URL is a throwaway
// master with a replica (scripts/bench/durability.sh), and restores AOF off after.
func BenchmarkReserveDurability(b *testing.B) {
	if os.Getenv("SECKILL_BENCH_DURABILITY") != "1" {
		b.Skip("SECKILL_BENCH_DURABILITY is not 1: run scripts/bench/durability.sh")
	}
	client := testenv.Redis(b)
	if n, _ := strconv.Atoi(infoFields(b, client, "replication")["connected_slaves"]); n < 1 {
		b.Fatal("the master has no replica: run scripts/bench/durability.sh")
	}
	b.Cleanup(func() { setAOF(b, client, "no", "everysec") })
	for _, tc := range []struct {
		name        string
		aof, fsync  string
		minReplicas int
	}{
		{"min-replicas=0", "no", "everysec", 0},
		{"min-replicas=1", "no", "everysec", 1},
		{"appendfsync=everysec", "yes", "everysec", 0},
		{"appendfsync=always", "yes", "always", 0},
	} {
		b.Run(tc.name, func(b *testing.B) {
			setAOF(b, client, tc.aof, tc.fsync)
			s := redisstore.NewStock(client, redisstore.Options{Prefix: "t" + testenv.Unique(), MinReplicas: tc.minReplicas})
			v := voucher(1, b.N, 1)
			warm(b, client, s, v)
			reserveInParallel(b, s, v, time.Time{})
		})
	}
}

// reserveInParallel times b.N reservations of v by distinct users, 32 per CPU at
// once, and reports their rate.
func reserveInParallel(b *testing.B, s *redisstore.Stock, v domain.Voucher, pass time.Time) {
	ctx := context.Background()
	var next atomic.Int64
	b.SetParallelism(32)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			user := domain.UserID(next.Add(1))
			r := grab(v.ID, user, 1)
			r.Pass = pass
			if err := s.Reserve(ctx, r); err != nil {
				b.Errorf("reserve for user %d: %v", user, err)
				return
			}
		}
	})
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s")
}

// setAOF sets the server's appendonly and appendfsync, and waits until the rewrite
// that turning AOF on starts has finished, so it does not weigh on the run.
func setAOF(b *testing.B, client redis.UniversalClient, appendonly, fsync string) {
	b.Helper()
	ctx := context.Background()
	check(b, client.ConfigSet(ctx, "appendfsync", fsync).Err())
	check(b, client.ConfigSet(ctx, "appendonly", appendonly).Err())
	testenv.Eventually(b, time.Minute, "AOF "+appendonly+" settled", func() (bool, string) {
		info := infoFields(b, client, "persistence")
		return info["aof_rewrite_in_progress"] == "0" && info["aof_rewrite_scheduled"] == "0" && info["aof_enabled"] == map[string]string{"yes": "1", "no": "0"}[appendonly],
			fmt.Sprint(info)
	})
}
