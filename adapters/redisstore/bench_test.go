package redisstore_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/adapters/redisstore"
	"github.com/seckill/seckill/adapters/testenv"
	"github.com/seckill/seckill/domain"
)

// BenchmarkReserve measures successful reservations (checks, decrement, buyer and order
// records, XADD) by distinct users, 32 per CPU at once, on one voucher with stock for
// all: "batched" shares calls between concurrent grabs as serve does, "per-grab" makes
// one script call per grab (Options.MaxBatch 1), in the same run; "batched-pass" and
// "per-grab-pass" are the same on a waiting room, each grab with its user's pass
// (issued before the clock starts), which the script reads and removes. Besides the
// rate it reports Redis's own CPU time per reservation (INFO cpu, user + system, so
// the network work counts) and the grabs per call. "batched-campaign-N" and
// "per-grab-campaign-N" grab the first voucher of a campaign of N, under a cap and a
// per-user limit across them (the script reads every voucher's state and buyers).
func BenchmarkReserve(b *testing.B) {
	for _, tc := range []struct {
		name     string
		maxBatch int
		room     bool
		campaign int
	}{{"batched", 0, false, 0}, {"per-grab", 1, false, 0}, {"batched-pass", 0, true, 0}, {"per-grab-pass", 1, true, 0},
		{"batched-campaign-20", 0, false, 20}, {"per-grab-campaign-20", 1, false, 20}} {
		b.Run(tc.name, func(b *testing.B) {
			client := testenv.Redis(b)
			s := redisstore.NewStock(client, redisstore.Options{Prefix: "t" + testenv.Unique(), MaxBatch: tc.maxBatch})
			v := voucher(1, b.N, 1)
			var pass time.Time
			if tc.room {
				v.Admission, pass = domain.AdmissionWaitingRoom, now.Add(time.Hour)
				issuePasses(b, client, s.Keys(), v.ID, b.N, pass)
			}
			if tc.campaign > 0 {
				c, vs := drop(1, tc.campaign, 10, b.N+10*tc.campaign, 2)
				vs[0].Stock, vs[0].PerUserLimit = b.N, 1
				warmDrop(b, client, s, c, vs)
				v = vs[0]
			} else {
				warm(b, client, s, v)
			}

			cpu0, calls0 := redisCPU(b, client), scriptCalls(b, client)
			reserveInParallel(b, s, v, pass)
			b.ReportMetric((redisCPU(b, client)-cpu0).Seconds()*1e6/float64(b.N), "redis-µs/op")
			b.ReportMetric(float64(b.N)/float64(scriptCalls(b, client)-calls0), "grabs/call")
		})
	}
}

// issuePasses gives users 1 to n a pass of voucher id expiring at expires, as the
// waiting room does, a thousand to a call.
func issuePasses(b *testing.B, client redis.UniversalClient, k redisstore.Keys, id domain.VoucherID, n int, expires time.Time) {
	members := make([]redis.Z, 0, 1000)
	for user := 1; user <= n; user++ {
		members = append(members, redis.Z{Score: float64(expires.UnixMilli()), Member: strconv.Itoa(user)})
		if len(members) == cap(members) || user == n {
			check(b, client.ZAdd(context.Background(), k.Passes(id), members...).Err())
			members = members[:0]
		}
	}
}

// redisCPU returns the CPU time the Redis server has used so far (INFO cpu: user and
// system, main thread and all).
func redisCPU(b *testing.B, client redis.UniversalClient) time.Duration {
	info := infoFields(b, client, "cpu")
	var total float64
	for _, f := range []string{"used_cpu_user", "used_cpu_sys"} {
		v, err := strconv.ParseFloat(info[f], 64)
		check(b, err)
		total += v
	}
	return time.Duration(total * float64(time.Second))
}

// scriptCalls returns how many EVALSHA and EVAL commands the server has run.
func scriptCalls(b *testing.B, client redis.UniversalClient) int64 {
	info := infoFields(b, client, "commandstats")
	var total int64
	for _, f := range []string{"cmdstat_evalsha", "cmdstat_eval"} {
		// calls=12,usec=34,…
		for _, kv := range strings.Split(info[f], ",") {
			if n, ok := strings.CutPrefix(kv, "calls="); ok {
				v, err := strconv.ParseInt(n, 10, 64)
				check(b, err)
				total += v
			}
		}
	}
	return total
}

func infoFields(b *testing.B, client redis.UniversalClient, section string) map[string]string {
	text, err := client.Info(context.Background(), section).Result()
	check(b, err)
	fields := map[string]string{}
	for _, line := range strings.Split(text, "\r\n") {
		if k, v, ok := strings.Cut(line, ":"); ok {
			fields[k] = v
		}
	}
	return fields
}

// BenchmarkReserveSoldOut measures grabs that Redis answers sold out: the cost of the
// checks alone, as after a sale ends before the instances learn of it.
func BenchmarkReserveSoldOut(b *testing.B) {
	ctx := context.Background()
	client, s := newStock(b, 0)
	v := voucher(1, 1, 1)
	warm(b, client, s, v)
	check(b, s.Reserve(ctx, grab(v.ID, 1, 1)))

	var next atomic.Int64
	next.Store(1)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			user := domain.UserID(next.Add(1))
			if err := s.Reserve(ctx, grab(v.ID, user, 1)); !errors.Is(err, domain.ErrSoldOut) {
				b.Errorf("reserve for user %d: %v, want %v", user, err, domain.ErrSoldOut)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s")
}
