package redisstore_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/sony/gobreaker/v2"

	"github.com/seckill/seckill/adapters/breaker"
	"github.com/seckill/seckill/adapters/redisstore"
	"github.com/seckill/seckill/adapters/testenv"
	"github.com/seckill/seckill/domain"
)

// guardedClient returns a client of addr tuned by TuneClientOptions and guarded by a
// breaker hook, closed when the test ends.
func guardedClient(t *testing.T, addr string, s breaker.Settings) (*redis.Client, *redisstore.BreakerHook, *redis.Options) {
	t.Helper()
	opts := &redis.Options{Addr: addr}
	redisstore.TuneClientOptions(opts)
	client := redis.NewClient(opts)
	hook := redisstore.NewBreakerHook("test", s)
	client.AddHook(hook)
	t.Cleanup(func() { _ = client.Close() })
	return client, hook, opts
}

func TestTuneClientOptions(t *testing.T) {
	var o redis.Options
	redisstore.TuneClientOptions(&o)
	if !o.ContextTimeoutEnabled {
		t.Error("ContextTimeoutEnabled is off: calls would not follow their request's deadline")
	}
	for name, d := range map[string]time.Duration{"DialTimeout": o.DialTimeout, "ReadTimeout": o.ReadTimeout, "WriteTimeout": o.WriteTimeout} {
		if d <= 0 || d > time.Second {
			t.Errorf("%s = %v, want (0, 1s]: a dead Redis is answered within a second", name, d)
		}
	}
	if got, want := o.DialerRetries, 2; got != want {
		t.Errorf("DialerRetries = %d, want %d (one more attempt)", got, want)
	}
	if got, want := o.MaxRetries, -1; got != want {
		t.Errorf("MaxRetries = %d, want %d (go-redis: no retries; 0 means 3)", got, want)
	}
	if o.PoolTimeout < time.Second {
		t.Errorf("PoolTimeout = %v: a burst waiting for a connection would fail before its request's deadline", o.PoolTimeout)
	}
}

// TestBreakerCountsOnlyOutages sends commands that fail for reasons of their own to
// a live Redis, through a breaker that opens on the first failure it counts: none of
// them may open it, and the client's errors stay what Redis said.
func TestBreakerCountsOnlyOutages(t *testing.T) {
	ctx := context.Background()
	shared := testenv.Redis(t)
	client, hook, _ := guardedClient(t, testenv.RedisAddr(t), breaker.Settings{MinCalls: 1, FailureRatio: 0.01})
	prefix := "t" + testenv.Unique()
	str, stream := prefix+":str", prefix+":stream"
	t.Cleanup(func() { shared.Del(context.Background(), str, stream) })
	check(t, client.Set(ctx, str, "x", time.Minute).Err())

	for _, tc := range []struct {
		name   string
		err    error
		prefix string // of Redis's error reply; empty for redis.Nil
	}{
		{"nil", client.Get(ctx, prefix+":missing").Err(), ""},
		{"noscript", client.EvalSha(ctx, "0123456789012345678901234567890123456789", nil).Err(), "NOSCRIPT"},
		{"wrongtype", client.LPush(ctx, str, "y").Err(), "WRONGTYPE"},
		{"nogroup", client.XReadGroup(ctx, &redis.XReadGroupArgs{Group: "g", Consumer: "c", Streams: []string{stream, ">"}, Block: -1}).Err(), "NOGROUP"},
		{"busygroup", func() error {
			check(t, client.XGroupCreateMkStream(ctx, stream, "g", "0").Err())
			return client.XGroupCreateMkStream(ctx, stream, "g", "0").Err()
		}(), "BUSYGROUP"},
		{"script error", client.Eval(ctx, "return redis.error_reply('NOPE no')", nil).Err(), "NOPE"},
		{"pipeline", func() error {
			_, err := client.Pipelined(ctx, func(p redis.Pipeliner) error {
				p.Get(ctx, prefix+":missing")
				p.LPush(ctx, str, "y")
				return nil
			})
			return err
		}(), ""},
	} {
		if tc.err == nil {
			t.Errorf("%s: no error", tc.name)
			continue
		}
		if errors.Is(tc.err, domain.ErrUnavailable) {
			t.Errorf("%s: %v counted as an outage", tc.name, tc.err)
		}
		if tc.prefix != "" && !redis.HasErrorPrefix(tc.err, tc.prefix) {
			t.Errorf("%s: %v, want Redis's %s reply", tc.name, tc.err, tc.prefix)
		}
	}
	if got, want := hook.State(), "closed"; got != want {
		t.Fatalf("breaker %s after answers of a live server, want %s", got, want)
	}
	// The script fallback (EVALSHA, NOSCRIPT, EVAL) works through the hook.
	script := redis.NewScript("return '" + testenv.Unique() + "'")
	if err := script.Run(ctx, client, nil).Err(); err != nil {
		t.Fatalf("script through the breaker: %v", err)
	}
}

// privateRedis starts a Redis server of the test's own, so the test can stop and
// restart it without disturbing the shared one other tests and packages use. It
// follows testenv's rule: skipped without the test services, failed in CI.
func privateRedis(t *testing.T) (addr string, stop, start func()) {
	t.Helper()
	bin := redisServer(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	check(t, err)
	addr = l.Addr().String()
	check(t, l.Close())
	_, port, _ := net.SplitHostPort(addr)
	dir := t.TempDir()
	var cmd *exec.Cmd
	stop = func() {
		if cmd == nil {
			return
		}
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		cmd = nil
	}
	start = func() {
		t.Helper()
		cmd = exec.Command(bin, "--port", port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir)
		check(t, cmd.Start())
		probe := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
		defer probe.Close()
		testenv.Eventually(t, testenv.Patience, "redis-server on "+addr+" answers", func() (bool, string) {
			err := probe.Ping(context.Background()).Err()
			return err == nil, fmt.Sprint(err)
		})
	}
	start()
	t.Cleanup(stop)
	return addr, stop, start
}

// TestBreakerRedisDownAndBack kills Redis under a Stock: the calls answer
// ErrUnavailable, the breaker opens and then refuses at once, far quicker than the
// client's timeout; once Redis is back (empty, its scripts forgotten), the client
// recovers by itself.
func TestBreakerRedisDownAndBack(t *testing.T) {
	ctx := context.Background()
	addr, stop, start := privateRedis(t)
	client, hook, _ := guardedClient(t, addr, breaker.Settings{MinCalls: 3, OpenFor: 200 * time.Millisecond})
	s := redisstore.NewStock(client, redisstore.Options{Prefix: "t" + testenv.Unique()})
	v := voucher(1, 10, 1)
	if _, err := s.Warm(ctx, v); err != nil {
		t.Fatal(err)
	}
	check(t, s.Reserve(ctx, grab(v.ID, 1, 1)))

	stop()
	// Every grab fails, at once (a refused connection), until the failures outnumber
	// the successes of the window; then the breaker is open.
	for i := 0; hook.State() != "open"; i++ {
		if i == 50 {
			t.Fatalf("breaker %s after %d failures, want open", hook.State(), i)
		}
		err := s.Reserve(ctx, grab(v.ID, domain.UserID(10+i), 1))
		if !errors.Is(err, domain.ErrUnavailable) {
			t.Fatalf("reserve %d with Redis down: %v, want ErrUnavailable", i, err)
		}
	}
	// The open breaker answers without the network: its own refusal.
	err := s.Reserve(ctx, grab(v.ID, 200, 1))
	if !errors.Is(err, domain.ErrUnavailable) || !errors.Is(err, gobreaker.ErrOpenState) {
		t.Fatalf("reserve with the breaker open: %v, want ErrUnavailable from the open breaker", err)
	}
	_, err = client.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.Get(ctx, "a")
		p.Get(ctx, "b")
		return nil
	})
	if !errors.Is(err, gobreaker.ErrOpenState) {
		t.Fatalf("pipeline with the breaker open: %v", err)
	}

	start()
	// The restarted server is empty and has no scripts: the half-open probe meets
	// NOSCRIPT, which must count as an answer, not as a failure.
	testenv.Eventually(t, testenv.Patience, "recovery after Redis restarted", func() (bool, string) {
		_, err := s.Warm(ctx, v)
		if err != nil && !errors.Is(err, domain.ErrUnavailable) {
			t.Fatalf("warm while Redis comes back: %v", err)
		}
		return err == nil, fmt.Sprintf("%v (breaker %s)", err, hook.State())
	})
	check(t, s.Reserve(ctx, grab(v.ID, 30, 1)))
	if got, want := hook.State(), "closed"; got != want {
		t.Fatalf("breaker %s after recovery, want %s", got, want)
	}
}

// TestBreakerRedisHung puts a link that stops answering between the client and
// Redis: each call gives up within the client's timeout (no call waits 1 s), the
// breaker opens and then refuses at once; when the link answers again, the client
// recovers by itself.
func TestBreakerRedisHung(t *testing.T) {
	ctx := context.Background()
	shared := testenv.Redis(t)
	link := testenv.NewLink(t, testenv.RedisAddr(t))
	client, hook, _ := guardedClient(t, link.Addr(), breaker.Settings{MinCalls: 2, OpenFor: 200 * time.Millisecond})
	key := "t" + testenv.Unique() + ":k"
	t.Cleanup(func() { shared.Del(context.Background(), key) })
	check(t, client.Set(ctx, key, "v", time.Minute).Err())

	link.Hang()
	// A call whose own deadline is short gives up with it: that timeout is the
	// caller's, not evidence against Redis, and does not count.
	for i := range 5 {
		short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
		err := client.Get(short, key).Err()
		cancel()
		if !errors.Is(err, domain.ErrUnavailable) {
			t.Fatalf("get %d with a short deadline on a hung link: %v, want ErrUnavailable", i, err)
		}
	}
	if got, want := hook.State(), "closed"; got != want {
		t.Fatalf("breaker %s after timeouts of short deadlines, want %s", got, want)
	}
	// A call that waited the client's whole timeout counts; the breaker opens once
	// such failures are half the window's calls.
	for i := 0; hook.State() != "open"; i++ {
		if i == 20 {
			t.Fatalf("breaker %s after %d timeouts, want open", hook.State(), i)
		}
		if err := client.Get(ctx, key).Err(); !errors.Is(err, domain.ErrUnavailable) {
			t.Fatalf("get %d on a hung link: %v, want ErrUnavailable", i, err)
		}
	}
	if err := client.Get(ctx, key).Err(); !errors.Is(err, gobreaker.ErrOpenState) {
		t.Fatalf("get with the breaker open: %v (breaker %s)", err, hook.State())
	}

	link.Heal()
	testenv.Eventually(t, testenv.Patience, "recovery after the link healed", func() (bool, string) {
		v, err := client.Get(ctx, key).Result()
		if err == nil && v != "v" {
			t.Fatalf("get after recovery = %q, want %q", v, "v")
		}
		return err == nil, fmt.Sprintf("%v (breaker %s)", err, hook.State())
	})
}
