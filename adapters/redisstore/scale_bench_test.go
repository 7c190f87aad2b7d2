package redisstore_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/adapters/redisstore"
	"github.com/seckill/seckill/domain"
)

// scaleRedisVar names the Redis the scale benchmarks fill and whose slow log they
// set and read: a throwaway server of their own, never a shared one.
const scaleRedisVar = "SECKILL_SCALE_REDIS_URL"

// scaleRedis returns a client of the server scaleRedisVar names, or skips.
func scaleRedis(b *testing.B) redis.UniversalClient {
	b.Helper()
	url := os.Getenv(scaleRedisVar)
	if url == "" {
		b.Skipf("%s is not set: these benchmarks fill a throwaway Redis of their own and change its slow log settings", scaleRedisVar)
	}
	opts, err := redis.ParseURL(url)
	if err != nil {
		b.Fatal(err)
	}
	client := redis.NewClient(opts)
	b.Cleanup(func() { _ = client.Close() })
	return client
}

// fillReservations records n reservations of voucher v (users 1…n, one unit each,
// order ids "r<user>") as the grab path would have left them once persisted — buyers
// and orders hashes, remaining at stock minus n — and appends unacked of them to the
// stream, not yet delivered. It writes 1,000 fields per command and pipelines 16
// commands, so a million take seconds; no command is longer than a few milliseconds.
func fillReservations(b *testing.B, client redis.UniversalClient, s *redisstore.Stock, v domain.Voucher, n, unacked int) []domain.Reservation {
	b.Helper()
	ctx := context.Background()
	k := s.Keys()
	if _, err := s.Warm(ctx, v); err != nil {
		b.Fatal(err)
	}
	at := time.Now().Add(-time.Hour)
	rs := make([]domain.Reservation, n)
	for i := range rs {
		u := domain.UserID(i + 1)
		rs[i] = domain.Reservation{OrderID: domain.OrderID("r" + u.String()), VoucherID: v.ID, UserID: u, Quantity: 1, At: at}
	}
	const fields, depth = 1000, 16
	pipe := client.Pipeline()
	flush := func() {
		if _, err := pipe.Exec(ctx); err != nil {
			b.Fatal(err)
		}
	}
	for start := 0; start < n; start += fields {
		part := rs[start:min(start+fields, n)]
		buyers := make([]any, 0, 2*len(part))
		orders := make([]any, 0, 2*len(part))
		for _, r := range part {
			buyers = append(buyers, r.UserID.String(), string(r.OrderID))
			orders = append(orders, string(r.OrderID), r.UserID.String()+":1:"+strconv.FormatInt(at.UnixMilli(), 10))
		}
		pipe.HSet(ctx, k.Buyers(v.ID), buyers...)
		pipe.HSet(ctx, k.Orders(v.ID), orders...)
		if pipe.Len() >= 2*depth {
			flush()
		}
	}
	for _, r := range rs[:unacked] {
		pipe.XAdd(ctx, &redis.XAddArgs{Stream: k.Stream(v.ID), Values: []any{
			"order", string(r.OrderID), "voucher", v.ID.String(), "user", r.UserID.String(), "qty", "1",
			"at", strconv.FormatInt(at.UnixMilli(), 10)}})
		if pipe.Len() >= fields {
			flush()
		}
	}
	pipe.HSet(ctx, k.Meta(v.ID), "remaining", v.Stock-n)
	for _, key := range []string{k.Buyers(v.ID), k.Orders(v.ID)} {
		pipe.PExpireAt(ctx, key, v.EndsAt.Add(time.Hour))
	}
	flush()
	return rs
}

// watchSlowLog makes the server log every command over 10 ms and forgets what it
// logged so far; the returned func reports the longest command logged since, and
// LATENCY's worst event.
func watchSlowLog(b *testing.B, client redis.UniversalClient) func(step string) {
	b.Helper()
	ctx := context.Background()
	for _, cmd := range [][]any{
		{"CONFIG", "SET", "slowlog-log-slower-than", "10000"},
		{"CONFIG", "SET", "latency-monitor-threshold", "10"},
		{"SLOWLOG", "RESET"},
		{"LATENCY", "RESET"},
	} {
		if err := client.Do(ctx, cmd...).Err(); err != nil {
			b.Fatal(err)
		}
	}
	return func(step string) {
		b.Helper()
		logs, err := client.SlowLogGet(ctx, 128).Result()
		if err != nil {
			b.Fatal(err)
		}
		var longest time.Duration
		type tally struct {
			n       int
			longest time.Duration
		}
		byName := map[string]*tally{}
		for _, l := range logs {
			longest = max(longest, l.Duration)
			name := fmt.Sprint(l.Args[0])
			if len(name) > 20 {
				name = name[:20]
			}
			if byName[name] == nil {
				byName[name] = &tally{}
			}
			byName[name].n++
			byName[name].longest = max(byName[name].longest, l.Duration)
		}
		for name, t := range byName {
			b.Logf("%s: slow log: %d × %q, longest %v", step, t.n, name, t.longest)
		}
		b.ReportMetric(float64(longest.Microseconds()), "slowlog-max-µs")
		b.ReportMetric(float64(len(logs)), "slowlog-entries")
		latest, err := client.Do(ctx, "LATENCY", "LATEST").Result()
		if err != nil {
			b.Fatal(err)
		}
		b.Logf("%s: LATENCY LATEST %v", step, latest)
	}
}

// BenchmarkMillionReservations fills a voucher with SECKILL_SCALE_RESERVATIONS
// reservations (1,000,000 by default) and times what reconciliation, stats, warm-up
// and repair do with them: Snapshot, Recount, and Restore of all of them after the
// sale state lost them. The slow log (threshold 10 ms) is reset after the fill: it
// must stay empty. Run it against a throwaway server:
//
//	SECKILL_SCALE_REDIS_URL=redis://127.0.0.1:PORT/0 go test -run '^$' \
//	  -bench BenchmarkMillionReservations -benchtime 1x ./adapters/redisstore
func BenchmarkMillionReservations(b *testing.B) {
	client := scaleRedis(b)
	ctx := context.Background()
	n := 1_000_000
	if s := os.Getenv("SECKILL_SCALE_RESERVATIONS"); s != "" {
		var err error
		if n, err = strconv.Atoi(s); err != nil {
			b.Fatal(err)
		}
	}
	s := redisstore.NewStock(client, redisstore.Options{Prefix: "scale" + strconv.FormatInt(time.Now().UnixNano(), 36)})
	a := redisstore.NewAudit(client, redisstore.Options{Prefix: s.Keys().Prefix})
	now := time.Now()
	v := domain.Voucher{ID: 1, Title: "scale", Stock: n + 1000, BeginsAt: now.Add(-time.Hour), EndsAt: now.Add(time.Hour), PerUserLimit: 1}
	k := s.Keys()
	b.Cleanup(func() {
		for id := domain.VoucherID(1); id <= 2; id++ {
			_ = client.Unlink(context.Background(), k.Meta(id), k.Buyers(id), k.Orders(id), k.Stream(id)).Err()
		}
		_ = client.Unlink(context.Background(), k.Registry(), k.Active()).Err()
	})

	start := time.Now()
	rs := fillReservations(b, client, s, v, n, 1000)
	b.ReportMetric(time.Since(start).Seconds(), "fill-s")
	report := watchSlowLog(b, client)

	for b.Loop() {
		start = time.Now()
		snap, err := a.Snapshot(ctx, v.ID)
		if err != nil {
			b.Fatal(err)
		}
		if len(snap.Reservations) != n || len(snap.Unacked) != 1000 {
			b.Fatalf("snapshot holds %d reservations and %d entries, want %d and 1000", len(snap.Reservations), len(snap.Unacked), n)
		}
		b.ReportMetric(float64(time.Since(start).Milliseconds()), "snapshot-ms")

		start = time.Now()
		left, err := a.Recount(ctx, v.ID)
		if err != nil || left != 1000 {
			b.Fatalf("recount = %d, %v; want 1000", left, err)
		}
		b.ReportMetric(float64(time.Since(start).Milliseconds()), "recount-ms")

		// A sale state that lost its reservations, as after a Redis restart: another
		// voucher, warmed empty. (Deleting the first one's would measure Redis freeing
		// a million fields in the background at the same time.)
		lost := v
		lost.ID = 2
		if _, err := s.Warm(ctx, lost); err != nil {
			b.Fatal(err)
		}
		for i := range rs {
			rs[i].VoucherID = lost.ID
		}
		start = time.Now()
		flags, err := a.Restore(ctx, live(rs...)...)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(time.Since(start).Milliseconds()), "restore-ms")
		for i, ok := range flags {
			if !ok {
				b.Fatalf("reservation %d not restored", i)
			}
		}
	}
	report("snapshot, recount, restore")

	// The baseline, on the same server right after: ten seconds of O(1) commands
	// (HGET of one field), 32 to a round trip. What the slow log catches of them is
	// the machine (a busy CPU descheduling Redis mid-command), not the command.
	if err := client.Do(ctx, "SLOWLOG", "RESET").Err(); err != nil {
		b.Fatal(err)
	}
	for start := time.Now(); time.Since(start) < 10*time.Second; {
		pipe := client.Pipeline()
		for range 32 {
			pipe.HGet(ctx, k.Meta(v.ID), "stock")
		}
		if _, err := pipe.Exec(ctx); err != nil {
			b.Fatal(err)
		}
	}
	logs, err := client.SlowLogGet(ctx, 128).Result()
	if err != nil {
		b.Fatal(err)
	}
	var longest time.Duration
	for _, l := range logs {
		longest = max(longest, l.Duration)
	}
	b.ReportMetric(float64(len(logs)), "baseline-slowlog-entries")
	b.ReportMetric(float64(longest.Microseconds()), "baseline-slowlog-max-µs")
}

// BenchmarkReservationsOfAUser reads a user's reservations (ForUser) and one of them by
// id (Find, and Find of an unknown id) with 2 and with 10,000 vouchers warmed and on
// sale; neither should depend on how many there are. An admin's Find (user 0) looks in
// the vouchers on sale a page at a time until one holds the order, and is shown too:
// found on the first page, and not found at all (every page).
//
//	SECKILL_SCALE_REDIS_URL=redis://127.0.0.1:PORT/0 go test -run '^$' \
//	  -bench BenchmarkReservationsOfAUser ./adapters/redisstore
func BenchmarkReservationsOfAUser(b *testing.B) {
	for _, vouchers := range []int{2, 10_000} {
		b.Run(fmt.Sprintf("vouchers=%d", vouchers), func(b *testing.B) {
			client := scaleRedis(b)
			ctx := context.Background()
			s := redisstore.NewStock(client, redisstore.Options{Prefix: "scale" + strconv.FormatInt(time.Now().UnixNano(), 36)})
			res := redisstore.NewReservations(client, redisstore.Options{Prefix: s.Keys().Prefix})
			k := s.Keys()
			now := time.Now()
			var keys []string
			for id := 1; id <= vouchers; id++ {
				v := domain.Voucher{ID: domain.VoucherID(id), Stock: 10, BeginsAt: now.Add(-time.Hour), EndsAt: now.Add(time.Hour), PerUserLimit: 1}
				if _, err := s.Warm(ctx, v); err != nil {
					b.Fatal(err)
				}
				keys = append(keys, k.Meta(v.ID), k.Stream(v.ID))
			}
			mine := domain.Reservation{OrderID: "bench-order", VoucherID: 1, UserID: 7, Quantity: 1, At: now}
			if err := s.Reserve(ctx, mine); err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() {
				keys = append(keys, k.Buyers(1), k.Orders(1), k.Registry(), k.Active(), k.UserOrders(7))
				for start := 0; start < len(keys); start += 1000 {
					_ = client.Unlink(context.Background(), keys[start:min(start+1000, len(keys))]...).Err()
				}
			})
			b.Run("ForUser", func(b *testing.B) {
				for b.Loop() {
					if got, err := res.ForUser(ctx, 7); err != nil || len(got) != 1 {
						b.Fatalf("ForUser = %v, %v", got, err)
					}
				}
			})
			b.Run("Find", func(b *testing.B) {
				for b.Loop() {
					if _, err := res.Find(ctx, 7, mine.OrderID); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run("FindUnknown", func(b *testing.B) {
				for b.Loop() {
					if _, err := res.Find(ctx, 7, "unknown"); err == nil {
						b.Fatal("found an unknown order")
					}
				}
			})
			b.Run("FindAsAdmin", func(b *testing.B) {
				for b.Loop() {
					if _, err := res.Find(ctx, 0, mine.OrderID); err != nil {
						b.Fatal(err)
					}
				}
			})
			// The admin's worst case: an id no voucher holds is looked for in every
			// page of the vouchers on sale.
			b.Run("FindUnknownAsAdmin", func(b *testing.B) {
				for b.Loop() {
					if _, err := res.Find(ctx, 0, "unknown"); err == nil {
						b.Fatal("found an unknown order")
					}
				}
			})
		})
	}
}
