package redisstore_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/adapters/redisstore"
	"github.com/seckill/seckill/adapters/testenv"
	"github.com/seckill/seckill/domain"
	"github.com/seckill/seckill/ports"
)

// The embedded server needs nothing installed, so these tests always run.

// embedded starts an Embedded server for the test and returns it with a client of it,
// connected and tuned as serve's (in memory, through Dial); both are closed when the
// test ends.
func embedded(t *testing.T) (*redisstore.Embedded, redis.UniversalClient) {
	t.Helper()
	e, err := redisstore.StartEmbedded()
	check(t, err)
	t.Cleanup(e.Close)
	opts, err := redis.ParseURL(e.URL())
	check(t, err)
	redisstore.TuneClientOptions(opts) // as serve connects
	opts.Dialer = e.Dial
	opts.ReadTimeout, opts.WriteTimeout = -1, -1
	client := redis.NewClient(opts)
	client.AddHook(e.BusyHook())
	t.Cleanup(func() { _ = client.Close() })
	return e, client
}

// A call that waits past its deadline for the embedded server, busy with another
// command, fails as unavailable — a 503 — saying the server was busy, not with the
// pipe's bare "i/o timeout" (which the API would answer 500); a pipeline too; and the
// client goes on once the server is free.
func TestEmbeddedBusyPastTheDeadlineIsUnavailable(t *testing.T) {
	e, client := embedded(t)
	check(t, client.Set(t.Context(), "k", "v", 0).Err())
	release := redisstore.HoldEmbedded(t, e)
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	err := client.Get(ctx, "k").Err()
	if !errors.Is(err, domain.ErrUnavailable) || !strings.Contains(err.Error(), "in-process redis was busy") {
		t.Fatalf("GET while the server is busy past the deadline: %v, want unavailable, saying it was busy", err)
	}
	ctx, cancel = context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	pipe := client.Pipeline()
	get := pipe.Get(ctx, "k")
	_, err = pipe.Exec(ctx)
	if !errors.Is(err, domain.ErrUnavailable) || !errors.Is(get.Err(), domain.ErrUnavailable) {
		t.Fatalf("a pipeline while the server is busy past the deadline: %v, %v; want unavailable", err, get.Err())
	}
	release()
	if got, err := client.Get(t.Context(), "k").Result(); err != nil || got != "v" {
		t.Fatalf("GET once the server is free: %q, %v", got, err)
	}
}

func TestEmbeddedStartsAndCloses(t *testing.T) {
	ctx := context.Background()
	e, client := embedded(t)
	host, port, err := net.SplitHostPort(e.Addr())
	check(t, err)
	if host != "127.0.0.1" || port == "0" || port == "" {
		t.Fatalf("address %s, want 127.0.0.1 and a port", e.Addr())
	}
	if got, want := e.URL(), "redis://"+e.Addr(); got != want {
		t.Fatalf("URL = %s, want %s", got, want)
	}
	if got, want := client.Ping(ctx).Val(), "PONG"; got != want {
		t.Fatalf("PING = %q, want %q", got, want)
	}

	e.Close()
	e.Close() // a second Close does nothing
	fresh := redis.NewClient(&redis.Options{Addr: e.Addr(), MaxRetries: -1, DialTimeout: time.Second})
	defer fresh.Close()
	if err := fresh.Ping(ctx).Err(); err == nil {
		t.Fatal("PING after Close answered, want an error")
	}
	if err := client.Ping(ctx).Err(); err == nil {
		t.Fatal("PING on a connection opened before Close answered, want an error")
	}
}

// A pipeline far larger than what the server reads at once is answered whole: the
// client writes every command before it reads a reply, so the server's replies must
// not wait for it (an in-memory pipe has no buffer of its own).
func TestEmbeddedAnswersALongPipeline(t *testing.T) {
	ctx := context.Background()
	_, client := embedded(t)
	done := make(chan error, 1)
	go func() {
		pipe := client.Pipeline()
		for i := range 5000 {
			pipe.HSet(ctx, "long-pipeline", fmt.Sprintf("field-%d", i), strings.Repeat("x", 64))
		}
		_, err := pipe.Exec(ctx)
		done <- err
	}()
	select {
	case err := <-done:
		check(t, err)
	case <-time.After(time.Minute):
		t.Fatal("a pipeline of 5,000 commands was not answered within a minute: client and server wait for each other")
	}
	if got, want := client.HLen(ctx, "long-pipeline").Val(), int64(5000); got != want {
		t.Fatalf("HLEN = %d, want %d", got, want)
	}
}

// TestEmbeddedRunsTheStockScripts runs warm, reserve, release and recount, and a
// paged snapshot, on the embedded server.
func TestEmbeddedRunsTheStockScripts(t *testing.T) {
	ctx := context.Background()
	_, client := embedded(t)
	opts := redisstore.Options{Prefix: "e"}
	s := redisstore.NewStock(client, opts)
	a := redisstore.NewAudit(client, opts)
	v := voucher(1, 2, 1)

	loaded, err := s.Warm(ctx, v)
	check(t, err)
	if loaded != ports.WarmLoaded {
		t.Fatalf("first warm-up = %v, want WarmLoaded", loaded)
	}
	loaded, err = s.Warm(ctx, v)
	check(t, err)
	if loaded != ports.WarmPresent {
		t.Fatalf("second warm-up = %v, want WarmPresent (nothing loaded again)", loaded)
	}

	first := grab(v.ID, 1, 1)
	check(t, s.Reserve(ctx, first))
	var held *domain.AlreadyPurchasedError
	if err := s.Reserve(ctx, grab(v.ID, 1, 1)); !errors.As(err, &held) || held.OrderID != first.OrderID {
		t.Fatalf("second grab of user 1 = %v, want already purchased %s", err, first.OrderID)
	}
	check(t, s.Reserve(ctx, grab(v.ID, 2, 1)))
	if err := s.Reserve(ctx, grab(v.ID, 3, 1)); !errors.Is(err, domain.ErrSoldOut) {
		t.Fatalf("grab of user 3 = %v, want sold out", err)
	}
	if got, want := remaining(t, s, v.ID), 0; got != want {
		t.Fatalf("remaining = %d, want %d", got, want)
	}

	// Two entries pending, read a page of one at a time.
	redisstore.SetAuditPage(t, 1)
	q := redisstore.NewQueue(client, redisstore.QueueOptions{Prefix: "e", Consumer: "c"})
	ds, err := q.Read(ctx, 10, 0)
	check(t, err)
	if got, want := len(ds), 2; got != want {
		t.Fatalf("read %d entries, want %d", got, want)
	}
	snap, err := a.Snapshot(ctx, v.ID)
	check(t, err)
	if got, want := len(snap.Unacked), 2; got != want {
		t.Fatalf("snapshot with %d unacknowledged entries, want %d", got, want)
	}

	restocks := listen(t, client, s.Keys().Restock())
	released, err := s.Release(ctx, order(first))
	check(t, err)
	if !released {
		t.Fatal("release released nothing")
	}
	released, err = s.Release(ctx, order(first))
	check(t, err)
	if released {
		t.Fatal("a second release released again")
	}
	if got, want := restocks(), []string{"1"}; !slices.Equal(got, want) {
		t.Fatalf("restocks announced %v, want %v", got, want)
	}
	if got, want := remaining(t, s, v.ID), 1; got != want {
		t.Fatalf("remaining after the release = %d, want %d", got, want)
	}

	left, err := a.Recount(ctx, v.ID)
	check(t, err)
	if got, want := left, 1; got != want {
		t.Fatalf("recount = %d, want %d", got, want)
	}
	check(t, client.HSet(ctx, s.Keys().Orders(v.ID), "bad", "garbage").Err())
	if _, err := a.Recount(ctx, v.ID); err == nil || !strings.Contains(err.Error(), `malformed record "garbage"`) {
		t.Fatalf("recount over a malformed record = %v, want an error naming it", err)
	}
}

// TestEmbeddedQueue reads, acknowledges, claims and trims on the embedded server.
func TestEmbeddedQueue(t *testing.T) {
	ctx := context.Background()
	_, client := embedded(t)
	s := redisstore.NewStock(client, redisstore.Options{Prefix: "e"})
	v := voucher(1, 10, 1)
	_, err := s.Warm(ctx, v)
	check(t, err)
	reserve(t, s, v.ID, 1, 2, 3)

	a, b := newQueue(client, s, "a"), newQueue(client, s, "b")
	ds := read(t, a, 10)
	if got, want := len(ds), 3; got != want {
		t.Fatalf("read %d entries, want %d", got, want)
	}
	for i, d := range ds {
		if d.Deliveries != 1 || d.Malformed != "" || d.Reservation.UserID != domain.UserID(i+1) {
			t.Fatalf("delivery %d = %+v, want user %d's first delivery", i, d, i+1)
		}
	}
	if got := read(t, a, 10); len(got) != 0 {
		t.Fatalf("read %d entries again, want none", len(got))
	}
	check(t, a.Ack(ctx, ds[0]))

	claimed := claimUntil(t, b, 2)
	if got, want := ids(claimed), ids(ds[1:]); !slices.Equal(got, want) {
		t.Fatalf("claimed %v, want %v", got, want)
	}
	for _, d := range claimed {
		if got, want := d.Deliveries, int64(2); got != want {
			t.Fatalf("claimed entry %s delivered %d times, want %d", d.ID, got, want)
		}
	}
	check(t, b.Ack(ctx, claimed...))
	if got := len(pending(t, client, s, v.ID)); got != 0 {
		t.Fatalf("%d entries pending after every ack, want none", got)
	}

	trimmed, err := b.Trim(ctx)
	check(t, err)
	if got, want := trimmed, int64(3); got != want {
		t.Fatalf("trimmed %d entries, want %d", got, want)
	}
}

// TestEmbeddedExpiresKeys checks that keys expire by the wall clock, with nothing but
// time passing, and that an expiry reads back as it was set.
func TestEmbeddedExpiresKeys(t *testing.T) {
	ctx := context.Background()
	_, client := embedded(t)

	check(t, client.Set(ctx, "past", "v", 0).Err())
	check(t, client.PExpireAt(ctx, "past", time.Now().Add(-time.Second)).Err())
	if got, want := client.Exists(ctx, "past").Val(), int64(0); got != want {
		t.Fatalf("EXISTS of a key expired in the past = %d, want %d", got, want)
	}

	at := time.Now().Add(time.Hour).Truncate(time.Millisecond).Add(time.Millisecond)
	check(t, client.Set(ctx, "later", "v", 0).Err())
	check(t, client.PExpireAt(ctx, "later", at).Err())
	got, err := client.PExpireTime(ctx, "later").Result()
	check(t, err)
	if want := at.UnixMilli(); got.Milliseconds() != want {
		t.Fatalf("PEXPIRETIME = %d, want %d as set", got.Milliseconds(), want)
	}

	// A sale that ends in a moment, with its keys kept a moment longer: they all go
	// by themselves.
	s := redisstore.NewStock(client, redisstore.Options{Prefix: "e", Grace: 50 * time.Millisecond})
	v := voucher(1, 10, 1)
	v.BeginsAt, v.EndsAt = time.Now().Add(-time.Hour), time.Now().Add(100*time.Millisecond)
	_, err = s.Warm(ctx, v)
	check(t, err)
	r := grab(v.ID, 1, 1)
	r.At = time.Now()
	check(t, s.Reserve(ctx, r))
	k := s.Keys()
	keys := []string{k.Meta(v.ID), k.Buyers(v.ID), k.Orders(v.ID), k.Stream(v.ID)}
	if got, want := client.Exists(ctx, keys...).Val(), int64(len(keys)); got != want {
		t.Fatalf("%d of the sale's %d keys exist after the grab, want all", got, want)
	}
	testenv.Eventually(t, testenv.Patience, "the sale's keys expire", func() (bool, string) {
		n := client.Exists(ctx, keys...).Val()
		return n == 0, fmt.Sprintf("%d keys exist", n)
	})
	left, err := s.Remaining(ctx, v.ID)
	check(t, err)
	if _, ok := left[v.ID]; ok {
		t.Fatalf("remaining of an expired sale = %v, want none", left)
	}
}
