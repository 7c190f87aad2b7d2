package redisstore_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/adapters/redisstore"
	"github.com/seckill/seckill/adapters/stocktest"
	"github.com/seckill/seckill/adapters/testenv"
	"github.com/seckill/seckill/domain"
)

// TestStockContractWithoutCoalescing runs the ports.Stock contract suite against the
// reserve script with every grab its own call (Options.MaxBatch 1); TestStockContract
// runs it through the coalescer.
func TestStockContractWithoutCoalescing(t *testing.T) {
	stocktest.Run(t, func(t *testing.T) stocktest.Subject {
		client := testenv.Redis(t)
		s := redisstore.NewStock(client, redisstore.Options{Prefix: "t" + testenv.Unique(), MaxBatch: 1})
		forgetPrefix(t, client, s.Keys().Prefix)
		return stocktest.Subject{Stock: s, Recorded: streamed(client, s.Keys()), IssuePass: issuePass(client, s.Keys()),
			Audit: redisstore.NewAudit(client, redisstore.Options{Prefix: s.Keys().Prefix})}
	})
}

// outcome spells a grab's answer for comparison.
func outcome(err error) string {
	var ap *domain.AlreadyPurchasedError
	var rl *domain.RateLimitedError
	switch {
	case err == nil:
		return "reserved"
	case errors.As(err, &ap):
		return "already_purchased:" + string(ap.OrderID)
	case errors.As(err, &rl):
		return "rate_limited"
	case errors.Is(err, domain.ErrSoldOut):
		return "sold_out"
	case errors.Is(err, domain.ErrPaused):
		return "paused"
	case errors.Is(err, domain.ErrNotStarted):
		return "not_started"
	case errors.Is(err, domain.ErrEnded):
		return "ended"
	case errors.Is(err, domain.ErrNotFound):
		return "not_found"
	case errors.Is(err, domain.ErrInvalid):
		return "invalid"
	case errors.Is(err, domain.ErrUnavailable):
		return "unavailable"
	}
	return "error: " + err.Error()
}

func wantOutcomes(t *testing.T, errs []error, want ...string) {
	t.Helper()
	if len(errs) != len(want) {
		t.Fatalf("%d answers, want %d", len(errs), len(want))
	}
	for i, err := range errs {
		if got := outcome(err); got != want[i] {
			t.Errorf("grab %d: %s, want %s", i, got, want[i])
		}
	}
}

// TestReserveBatchMixed judges one batch in order with the single grab's rules: units
// run out in the middle, a user's second grab names the first one's order, a quantity
// above the limit and a grab before the sale are refused without taking anything.
func TestReserveBatchMixed(t *testing.T) {
	client, s := newStock(t, 0)
	v := voucher(1, 3, 2)
	warm(t, client, s, v)

	early := grab(v.ID, 4, 1)
	early.At = v.BeginsAt.Add(-time.Second)
	errs, err := s.ReserveBatch(t.Context(), []domain.Reservation{
		grab(v.ID, 1, 1),
		grab(v.ID, 1, 1), // the same user again
		grab(v.ID, 2, 3), // above the limit of 2
		early,
		grab(v.ID, 3, 2), // takes the last two
		grab(v.ID, 5, 1), // nothing left
	})
	check(t, err)
	wantOutcomes(t, errs, "reserved", "already_purchased:o1", "invalid", "not_started", "reserved", "sold_out")
	left, err := s.Remaining(t.Context(), v.ID)
	check(t, err)
	if left[v.ID] != 0 {
		t.Fatalf("remaining %d, want 0", left[v.ID])
	}
	got := streamed(client, s.Keys())(t, v.ID)
	if len(got) != 2 || got[0].OrderID != "o1" || got[1].OrderID != "o3" || got[1].Quantity != 2 {
		t.Fatalf("stream holds %+v, want o1 then o3 (2 units)", got)
	}
}

// TestReserveBatchPausedAndRateLimited: a paused sale refuses every grab of the batch,
// and the per-user rate counts each attempt of the batch in order.
func TestReserveBatchPausedAndRateLimited(t *testing.T) {
	client := testenv.Redis(t)
	s := redisstore.NewStock(client, redisstore.Options{Prefix: "t" + testenv.Unique(), UserRate: 1, UserBurst: 2})
	v := voucher(1, 10, 1)
	warm(t, client, s, v)
	t.Cleanup(func() { _ = client.Unlink(context.Background(), s.Keys().Rates(v.ID)).Err() })

	// User 7 grabs three times in one batch: the first reserves, the second is within
	// the burst of 2 and names the first's order, the third is over the rate.
	errs, err := s.ReserveBatch(t.Context(), []domain.Reservation{grab(v.ID, 7, 1), grab(v.ID, 7, 1), grab(v.ID, 7, 1)})
	check(t, err)
	wantOutcomes(t, errs, "reserved", "already_purchased:o7", "rate_limited")

	if _, err := s.SetPaused(t.Context(), v.ID, true); err != nil {
		t.Fatal(err)
	}
	errs, err = s.ReserveBatch(t.Context(), []domain.Reservation{grab(v.ID, 8, 1), grab(v.ID, 9, 1)})
	check(t, err)
	wantOutcomes(t, errs, "paused", "paused")
}

// TestReserveBatchUnknownVoucher answers every grab of a voucher without sale state
// not_found.
func TestReserveBatchUnknownVoucher(t *testing.T) {
	_, s := newStock(t, 0)
	errs, err := s.ReserveBatch(t.Context(), []domain.Reservation{grab(99, 1, 1), grab(99, 2, 1)})
	check(t, err)
	wantOutcomes(t, errs, "not_found", "not_found")
}

// TestReserveBatchRefusesMixedVouchers: one call judges one voucher's grabs.
func TestReserveBatchRefusesMixedVouchers(t *testing.T) {
	_, s := newStock(t, 0)
	if _, err := s.ReserveBatch(t.Context(), []domain.Reservation{grab(1, 1, 1), grab(2, 2, 1)}); err == nil {
		t.Fatal("a batch of two vouchers was sent")
	}
}

// countingHook counts the reserve calls (EVALSHA or EVAL) and their grabs.
type countingHook struct {
	mu    sync.Mutex
	calls int
}

func (h *countingHook) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *countingHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}
func (h *countingHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if name := cmd.Name(); name == "evalsha" || name == "eval" {
			h.mu.Lock()
			h.calls++
			h.mu.Unlock()
		}
		return next(ctx, cmd)
	}
}

// TestConcurrentGrabsShareCalls: 2,000 concurrent grabs of one voucher sell exactly
// its stock, once per user, in far fewer Redis calls than grabs; those still waiting
// when the units ran out are answered sold_out.
func TestConcurrentGrabsShareCalls(t *testing.T) {
	client := testenv.Redis(t)
	hook := &countingHook{}
	client.AddHook(hook)
	s := redisstore.NewStock(client, redisstore.Options{Prefix: "t" + testenv.Unique()})
	v := voucher(1, 100, 1)
	warm(t, client, s, v)

	const grabs = 2000
	errs := make([]error, grabs)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range grabs {
		wg.Go(func() {
			<-start
			r := grab(v.ID, domain.UserID(i%1900+1), 1) // 100 users grab twice
			r.OrderID = domain.OrderID(fmt.Sprintf("g%d", i))
			errs[i] = s.Reserve(t.Context(), r)
		})
	}
	close(start)
	wg.Wait()

	reserved, buyers := 0, map[string]bool{}
	for i, err := range errs {
		switch o := outcome(err); {
		case o == "reserved":
			reserved++
			user := fmt.Sprint(i%1900 + 1)
			if buyers[user] {
				t.Errorf("user %s reserved twice", user)
			}
			buyers[user] = true
		case o == "sold_out", len(o) > 18 && o[:18] == "already_purchased:":
		default:
			t.Errorf("grab %d: %s", i, o)
		}
	}
	if reserved != 100 {
		t.Fatalf("%d reserved, want exactly the stock of 100", reserved)
	}
	hook.mu.Lock()
	calls := hook.calls
	hook.mu.Unlock()
	t.Logf("%d grabs in %d reserve calls", grabs, calls)
	if calls >= grabs/2 {
		t.Fatalf("%d reserve calls for %d concurrent grabs: they were not shared", calls, grabs)
	}
}

// TestWaitingGrabWithdrawnWhenItsRequestEnds: a grab whose context ends while it waits
// for its turn is answered unavailable and never reaches Redis; the call in flight is
// not disturbed.
func TestWaitingGrabWithdrawnWhenItsRequestEnds(t *testing.T) {
	client := testenv.Redis(t)
	gate := &gateHook{entered: make(chan struct{}), release: make(chan struct{})}
	client.AddHook(gate)
	s := redisstore.NewStock(client, redisstore.Options{Prefix: "t" + testenv.Unique()})
	v := voucher(1, 10, 1)
	warm(t, client, s, v)
	gate.armed.Store(true)

	first := make(chan error, 1)
	go func() { first <- s.Reserve(context.Background(), grab(v.ID, 1, 1)) }()
	<-gate.entered // the first grab's call is in flight and held

	ctx, cancel := context.WithCancel(t.Context())
	second := make(chan error, 1)
	go func() { second <- s.Reserve(ctx, grab(v.ID, 2, 1)) }()
	cancel()
	if got := outcome(<-second); got != "unavailable" {
		t.Fatalf("the withdrawn grab: %s, want unavailable", got)
	}
	gate.armed.Store(false)
	close(gate.release)
	if err := <-first; err != nil {
		t.Fatalf("the grab in flight: %v", err)
	}
	recorded := streamed(client, s.Keys())(t, v.ID)
	if len(recorded) != 1 || recorded[0].UserID != 1 {
		t.Fatalf("stream holds %+v, want only user 1's reservation", recorded)
	}
}

// gateHook holds every reserve call while armed: it signals entered and waits for
// release.
type gateHook struct {
	armed   atomic.Bool
	once    sync.Once
	entered chan struct{}
	release chan struct{}
}

func (h *gateHook) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *gateHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}
func (h *gateHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if name := cmd.Name(); h.armed.Load() && (name == "evalsha" || name == "eval") {
			h.once.Do(func() { close(h.entered) })
			<-h.release
		}
		return next(ctx, cmd)
	}
}

// TestGrabThatWaitedTooLongIsNotSent: a grab that waited MaxWait behind a slow call is
// answered unavailable then — while that call is still held, not when it comes back —
// and never sent.
func TestGrabThatWaitedTooLongIsNotSent(t *testing.T) {
	client := testenv.Redis(t)
	gate := &gateHook{entered: make(chan struct{}), release: make(chan struct{})}
	client.AddHook(gate)
	s := redisstore.NewStock(client, redisstore.Options{Prefix: "t" + testenv.Unique(), MaxWait: 20 * time.Millisecond})
	v := voucher(1, 10, 1)
	warm(t, client, s, v)
	gate.armed.Store(true)

	first := make(chan error, 1)
	go func() { first <- s.Reserve(context.Background(), grab(v.ID, 1, 1)) }()
	<-gate.entered
	second := make(chan error, 1)
	go func() { second <- s.Reserve(context.Background(), grab(v.ID, 2, 1)) }()
	select {
	case err := <-second:
		if got := outcome(err); got != "unavailable" {
			t.Fatalf("the grab that waited too long: %s, want unavailable", got)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the grab that waited MaxWait was not answered while the call in flight was held")
	}
	gate.armed.Store(false)
	close(gate.release)
	if err := <-first; err != nil {
		t.Fatalf("the grab in flight: %v", err)
	}
	if recorded := streamed(client, s.Keys())(t, v.ID); len(recorded) != 1 {
		t.Fatalf("stream holds %+v, want only user 1's reservation", recorded)
	}
}

// TestMinReplicas: with Options.MinReplicas a grab counts as reserved only once a
// replica has it. With a replica attached the grabs reserve; with none, WAIT times out
// and the reservations answer unavailable — they stand on the master, so a retry is
// answered with the order.
func TestMinReplicas(t *testing.T) {
	addr, _, _ := privateRedis(t)
	client := redis.NewClient(&redis.Options{Addr: addr})
	t.Cleanup(func() { _ = client.Close() })
	s := redisstore.NewStock(client, redisstore.Options{Prefix: "t" + testenv.Unique(), MinReplicas: 1, ReplicaTimeout: time.Second})
	v := voucher(1, 10, 1)
	_, err := s.Warm(t.Context(), v)
	check(t, err)

	if got := outcome(s.Reserve(t.Context(), grab(v.ID, 1, 1))); got != "unavailable" {
		t.Fatalf("grab with no replica: %s, want unavailable", got)
	}
	if got := outcome(s.Reserve(t.Context(), grab(v.ID, 1, 1))); got != "already_purchased:o1" {
		t.Fatalf("its retry: %s, want already_purchased naming the order", got)
	}

	replica := startReplica(t, addr)
	testenv.Eventually(t, 2*testenv.Patience, "the replica in sync and acknowledging", func() (bool, string) {
		if !strings.Contains(replica.Info(t.Context(), "replication").Val(), "master_link_status:up") {
			return false, "replica link down"
		}
		n, err := client.Do(t.Context(), "WAIT", 1, 100).Int()
		return err == nil && n >= 1, fmt.Sprintf("WAIT = %d, %v", n, err)
	})
	if err := s.Reserve(t.Context(), grab(v.ID, 2, 1)); err != nil {
		t.Fatalf("grab with a replica: %v, want reserved", err)
	}
}

// startReplica starts a redis-server replicating addr, stopped when the test ends, and
// returns a client of it.
// TestMinReplicasWithASpareReplica: with one replica more than Options.MinReplicas (two
// for one, as docs/operations.md advises operators), a replica that goes down does not stop
// grabs: the other confirms them.
func TestMinReplicasWithASpareReplica(t *testing.T) {
	addr, _, _ := privateRedis(t)
	client := redis.NewClient(&redis.Options{Addr: addr})
	t.Cleanup(func() { _ = client.Close() })
	s := redisstore.NewStock(client, redisstore.Options{Prefix: "t" + testenv.Unique(), MinReplicas: 1, ReplicaTimeout: 5 * time.Second})
	v := voucher(1, 10, 1)
	_, err := s.Warm(t.Context(), v)
	check(t, err)
	replicas := []*redis.Client{startReplica(t, addr), startReplica(t, addr)}
	testenv.Eventually(t, 2*testenv.Patience, "both replicas in sync and acknowledging", func() (bool, string) {
		n, err := client.Do(t.Context(), "WAIT", 2, 100).Int()
		return err == nil && n >= 2, fmt.Sprintf("WAIT = %d, %v", n, err)
	})
	if err := s.Reserve(t.Context(), grab(v.ID, 1, 1)); err != nil {
		t.Fatalf("grab with two replicas: %v, want reserved", err)
	}
	// The connection ends with the server: SHUTDOWN's own answer is an error.
	_ = replicas[0].ShutdownNoSave(t.Context()).Err()
	testenv.Eventually(t, 2*testenv.Patience, "the master sees one replica left", func() (bool, string) {
		info := client.Info(t.Context(), "replication").Val()
		return strings.Contains(info, "connected_slaves:1"), info
	})
	if err := s.Reserve(t.Context(), grab(v.ID, 2, 1)); err != nil {
		t.Fatalf("grab with one of the two replicas down: %v, want reserved", err)
	}
}

func startReplica(t *testing.T, master string) *redis.Client {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	check(t, err)
	addr := l.Addr().String()
	check(t, l.Close())
	host, port, _ := net.SplitHostPort(master)
	_, own, _ := net.SplitHostPort(addr)
	cmd := exec.Command("redis-server", "--port", own, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
		"--dir", t.TempDir(), "--replicaof", host, port)
	check(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	c := redis.NewClient(&redis.Options{Addr: addr})
	t.Cleanup(func() { _ = c.Close() })
	return c
}
