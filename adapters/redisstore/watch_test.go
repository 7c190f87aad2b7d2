package redisstore_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/adapters/redisstore"
	"github.com/seckill/seckill/adapters/testenv"
	"github.com/seckill/seckill/domain"
)

// newWatchStock returns a WatchStock on the test server under a prefix of its own,
// with opts (its Prefix is set here).
func newWatchStock(t testing.TB, opts redisstore.Options) (*redis.Client, *redisstore.WatchStock) {
	t.Helper()
	client := testenv.Redis(t)
	opts.Prefix = "w" + testenv.Unique()
	return client, redisstore.NewWatchStock(redisstore.NewStock(client, opts), 0)
}

func TestWatchReserveOutcomes(t *testing.T) {
	ctx := context.Background()
	client, w := newWatchStock(t, redisstore.Options{})
	tests := []struct {
		name   string
		at     time.Time
		qty    int
		paused bool
		want   error
	}{
		{"reserved", now, 1, false, nil},
		{"reserved at the opening instant", now.Add(-time.Hour), 1, false, nil},
		{"reserved at the last millisecond", now.Add(time.Hour - time.Millisecond), 2, false, nil},
		{"not started", now.Add(-time.Hour - time.Millisecond), 1, false, domain.ErrNotStarted},
		{"ended at the closing instant", now.Add(time.Hour), 1, false, domain.ErrEnded},
		{"ended", now.Add(48 * time.Hour), 1, false, domain.ErrEnded},
		{"paused", now, 1, true, domain.ErrPaused},
		{"over the per-user limit", now, 3, false, domain.ErrInvalid},
		{"zero quantity", now, 0, false, domain.ErrInvalid},
		{"negative quantity", now, -1, false, domain.ErrInvalid},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v := voucher(domain.VoucherID(i+1), 10, 2)
			v.Paused = tc.paused
			warm(t, client, w.Stock, v)
			r := grab(v.ID, 1, tc.qty)
			r.At = tc.at

			err := w.Reserve(ctx, r)
			if !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
				t.Fatalf("Reserve = %v, want %v", err, tc.want)
			}
			left, recorded := 10, int64(0)
			if tc.want == nil {
				left, recorded = 10-tc.qty, 1
			}
			if got, want := remaining(t, w.Stock, v.ID), left; got != want {
				t.Fatalf("remaining = %d, want %d", got, want)
			}
			n, err := client.XLen(ctx, w.Keys().Stream(v.ID)).Result()
			check(t, err)
			if got, want := n, recorded; got != want {
				t.Fatalf("XLEN = %d, want %d", got, want)
			}
			n, err = client.HLen(ctx, w.Keys().Buyers(v.ID)).Result()
			check(t, err)
			if got, want := n, recorded; got != want {
				t.Fatalf("buyers = %d, want %d", got, want)
			}
		})
	}
}

func TestWatchReserveAlreadyPurchasedAndSoldOut(t *testing.T) {
	ctx := context.Background()
	client, w := newWatchStock(t, redisstore.Options{})
	v := voucher(1, 2, 1)
	warm(t, client, w.Stock, v)
	check(t, w.Reserve(ctx, grab(v.ID, 1, 1)))

	again := grab(v.ID, 1, 1)
	again.OrderID = "another"
	var held *domain.AlreadyPurchasedError
	if err := w.Reserve(ctx, again); !errors.As(err, &held) || !errors.Is(err, domain.ErrAlreadyPurchased) {
		t.Fatalf("Reserve = %v, want an *domain.AlreadyPurchasedError", err)
	}
	if got, want := held.OrderID, domain.OrderID("o1"); got != want {
		t.Fatalf("already purchased names order %q, want %q", got, want)
	}

	check(t, w.Reserve(ctx, grab(v.ID, 2, 1)))
	// Sold out: a holder still learns its order, anyone else hears sold out.
	if err := w.Reserve(ctx, again); !errors.As(err, &held) || held.OrderID != "o1" {
		t.Fatalf("Reserve by a holder after sell-out = %v, want already purchased o1", err)
	}
	if err := w.Reserve(ctx, grab(v.ID, 3, 1)); !errors.Is(err, domain.ErrSoldOut) {
		t.Fatalf("Reserve = %v, want %v", err, domain.ErrSoldOut)
	}
	if got, want := remaining(t, w.Stock, v.ID), 0; got != want {
		t.Fatalf("remaining = %d, want %d", got, want)
	}

	// A voucher without sale state is not found, and the refusal creates no key.
	cleanup(t, client, w.Stock, 99)
	if err := w.Reserve(ctx, grab(99, 1, 1)); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("Reserve of an unknown voucher = %v, want %v", err, domain.ErrNotFound)
	}
	k := w.Keys()
	n, err := client.Exists(ctx, k.Meta(99), k.Buyers(99), k.Orders(99), k.Stream(99)).Result()
	check(t, err)
	if got, want := n, int64(0); got != want {
		t.Fatalf("a refused grab on an unknown voucher created %d keys", got)
	}
}

// saleKeys returns what Redis holds of voucher id under k, with the stream's entry
// ids left out (they are times), and the expiry of each key.
func saleKeys(t *testing.T, client *redis.Client, k redisstore.Keys, id domain.VoucherID) string {
	t.Helper()
	ctx := context.Background()
	meta, err := client.HGetAll(ctx, k.Meta(id)).Result()
	check(t, err)
	buyers, err := client.HGetAll(ctx, k.Buyers(id)).Result()
	check(t, err)
	orders, err := client.HGetAll(ctx, k.Orders(id)).Result()
	check(t, err)
	entries, err := client.XRange(ctx, k.Stream(id), "-", "+").Result()
	check(t, err)
	var b strings.Builder
	fmt.Fprintf(&b, "meta %v\nbuyers %v\norders %v\n", meta, buyers, orders)
	for _, e := range entries {
		fmt.Fprintf(&b, "entry %v\n", e.Values)
	}
	for _, key := range []string{k.Meta(id), k.Buyers(id), k.Orders(id), k.Stream(id)} {
		at, err := client.PExpireTime(ctx, key).Result()
		check(t, err)
		fmt.Fprintf(&b, "%s expires %d\n", strings.TrimPrefix(key, k.Prefix), at.Milliseconds())
	}
	return b.String()
}

func TestWatchReserveWritesWhatTheScriptWrites(t *testing.T) {
	ctx := context.Background()
	client, lua := newStock(t, time.Hour)
	_, w := newWatchStock(t, redisstore.Options{Grace: time.Hour})
	v := voucher(7, 20, 3)
	warm(t, client, lua, v)
	warm(t, client, w.Stock, v)

	// Users 1..9 take 2, 3, 1, 2, 3, 1, 2, 3, 1 units of 20; then user 1 again (already
	// purchased), one over the limit, one before the sale, and the last three units
	// asked for when two are left (sold out).
	var grabs []domain.Reservation
	for user := domain.UserID(1); user <= 9; user++ {
		r := grab(v.ID, user, int(user)%3+1)
		r.At = now.Add(time.Duration(user) * time.Millisecond)
		grabs = append(grabs, r)
	}
	early := grab(v.ID, 11, 1)
	early.At = v.BeginsAt.Add(-time.Millisecond)
	grabs = append(grabs, grab(v.ID, 1, 1), grab(v.ID, 10, 4), early, grab(v.ID, 12, 3))
	var refused int
	for _, r := range grabs {
		luaErr, watchErr := lua.Reserve(ctx, r), w.Reserve(ctx, r)
		if got, want := fmt.Sprint(watchErr), fmt.Sprint(luaErr); got != want {
			t.Fatalf("user %d: watch answered %q, the script %q", r.UserID, got, want)
		}
		if watchErr != nil {
			refused++
		}
	}
	if got, want := refused, 4; got != want {
		t.Fatalf("%d grabs refused, want %d", got, want)
	}
	if got, want := saleKeys(t, client, w.Keys(), v.ID), saleKeys(t, client, lua.Keys(), v.ID); got != want {
		t.Fatalf("watch wrote\n%s\nthe script wrote\n%s", got, want)
	}
}

func TestWatchReserveLimitsAsTheScript(t *testing.T) {
	ctx := context.Background()
	opts := redisstore.Options{UserRate: 2, UserBurst: 3, MaxBacklog: 3}
	lua := limitedStock(t, opts)
	client, w := newWatchStock(t, opts)
	warm(t, client, lua, voucher(1, 100, 1))
	warm(t, client, w.Stock, voucher(1, 100, 1))

	// A burst of one user (the rate), then more users than the backlog allows.
	type step struct {
		user domain.UserID
		ms   int
	}
	steps := []step{{7, 0}, {7, 0}, {7, 0}, {7, 0}, {7, 499}, {7, 500}, {8, 0}, {9, 0}, {10, 0}, {11, 0}, {12, 0}}
	var answers []string
	for i, s := range steps {
		r := grab(1, s.user, 1)
		r.OrderID = domain.OrderID(fmt.Sprintf("o%d-%d", s.user, i))
		r.At = now.Add(time.Duration(s.ms) * time.Millisecond)
		luaErr, watchErr := lua.Reserve(ctx, r), w.Reserve(ctx, r)
		if got, want := fmt.Sprint(watchErr), fmt.Sprint(luaErr); got != want {
			t.Fatalf("step %d: watch answered %q, the script %q", i, got, want)
		}
		answers = append(answers, fmt.Sprint(watchErr))
	}
	var rateLimited, backlogged int
	for _, a := range answers {
		if strings.Contains(a, domain.ErrRateLimited.Error()) {
			rateLimited++
		}
		if strings.Contains(a, domain.ErrUnavailable.Error()) {
			backlogged++
		}
	}
	if rateLimited == 0 || backlogged == 0 {
		t.Fatalf("the steps met no limit (%d rate limited, %d backlogged): %q", rateLimited, backlogged, answers)
	}
	if got, want := remaining(t, w.Stock, 1), remaining(t, lua, 1); got != want {
		t.Fatalf("remaining = %d, the script's %d", got, want)
	}
}

func TestWatchReserveConcurrentGrabsSellExactlyTheStock(t *testing.T) {
	ctx := context.Background()
	const stock, users, twice = 50, 950, 50
	// A connection for every grab, so all of them contend at once.
	opts, err := redis.ParseURL(testenv.RedisURL(t))
	check(t, err)
	opts.PoolSize = users + twice
	client := redis.NewClient(opts)
	t.Cleanup(func() { _ = client.Close() })
	w := redisstore.NewWatchStock(redisstore.NewStock(client, redisstore.Options{Prefix: "w" + testenv.Unique()}), 0)
	v := voucher(1, stock, 1)
	warm(t, client, w.Stock, v)

	type answer struct {
		r   domain.Reservation
		err error
	}
	answers := make([]answer, users+twice)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range answers {
		// Requests users..users+twice-1 are second grabs by users 1..twice.
		user := domain.UserID(i%users + 1)
		r := grab(v.ID, user, 1)
		r.OrderID = domain.OrderID(fmt.Sprintf("o%d-%d", user, i))
		wg.Go(func() {
			<-start
			answers[i] = answer{r, w.Reserve(ctx, r)}
		})
	}
	close(start)
	wg.Wait()

	holds := map[domain.UserID]domain.OrderID{}
	unavailable := 0
	for _, a := range answers {
		var held *domain.AlreadyPurchasedError
		switch {
		case a.err == nil:
			if _, dup := holds[a.r.UserID]; dup {
				t.Fatalf("user %d reserved twice", a.r.UserID)
			}
			holds[a.r.UserID] = a.r.OrderID
		case errors.Is(a.err, domain.ErrUnavailable):
			unavailable++
		case errors.Is(a.err, domain.ErrSoldOut), errors.As(a.err, &held):
		default:
			t.Fatalf("user %d: unexpected answer %v", a.r.UserID, a.err)
		}
	}
	t.Logf("%d of %d grabs gave up after %d lost transactions", unavailable, len(answers), redisstore.DefaultWatchAttempts)
	if got, want := len(holds), stock; got != want {
		t.Fatalf("%d users reserved, want %d", got, want)
	}
	for _, a := range answers {
		var held *domain.AlreadyPurchasedError
		if errors.As(a.err, &held) {
			if got, want := held.OrderID, holds[a.r.UserID]; got != want {
				t.Fatalf("user %d told it holds %q, want %q", a.r.UserID, got, want)
			}
		}
	}

	if got, want := remaining(t, w.Stock, v.ID), 0; got != want {
		t.Fatalf("remaining = %d, want %d", got, want)
	}
	n, err := client.XLen(ctx, w.Keys().Stream(v.ID)).Result()
	check(t, err)
	if got, want := n, int64(stock); got != want {
		t.Fatalf("XLEN = %d, want %d", got, want)
	}
	// Exactly the users answered "reserved" hold a reservation: a grab that gave up
	// took nothing.
	buyers, err := client.HGetAll(ctx, w.Keys().Buyers(v.ID)).Result()
	check(t, err)
	want := map[string]string{}
	for user, order := range holds {
		want[user.String()] = string(order)
	}
	if !maps.Equal(buyers, want) {
		t.Fatalf("buyers = %v, want %v", buyers, want)
	}
}

// meddler is a go-redis hook that changes a voucher's sale state, through another
// client, just before every MULTI … EXEC its client sends: each optimistic transaction
// then finds a watched key changed.
type meddler struct {
	other *redis.Client
	key   string
	execs atomic.Int64
}

func (m *meddler) DialHook(next redis.DialHook) redis.DialHook { return next }

func (m *meddler) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }

func (m *meddler) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if len(cmds) > 0 && cmds[0].Name() == "multi" {
			m.execs.Add(1)
			// HINCRBY by 0 changes no value but still counts as a write for WATCH.
			if err := m.other.HIncrBy(ctx, m.key, "remaining", 0).Err(); err != nil {
				return err
			}
		}
		return next(ctx, cmds)
	}
}

var _ redis.Hook = (*meddler)(nil)

func TestWatchReserveGivesUpAfterItsAttempts(t *testing.T) {
	ctx := context.Background()
	other, base := newStock(t, 0)
	v := voucher(1, 10, 1)
	warm(t, other, base, v)

	client := testenv.Redis(t)
	m := &meddler{other: other, key: base.Keys().Meta(v.ID)}
	client.AddHook(m)
	const attempts = 4
	w := redisstore.NewWatchStock(redisstore.NewStock(client, redisstore.Options{Prefix: base.Keys().Prefix}), attempts)

	err := w.Reserve(ctx, grab(v.ID, 1, 1))
	if !errors.Is(err, domain.ErrUnavailable) {
		t.Fatalf("Reserve = %v, want %v", err, domain.ErrUnavailable)
	}
	if got, want := m.execs.Load(), int64(attempts); got != want {
		t.Fatalf("%d transactions tried, want %d", got, want)
	}
	if got, want := remaining(t, base, v.ID), 10; got != want {
		t.Fatalf("remaining = %d, want %d", got, want)
	}
	n, err := other.Exists(ctx, base.Keys().Buyers(v.ID), base.Keys().Stream(v.ID)).Result()
	check(t, err)
	// Warm made the stream; nobody became a buyer.
	if got, want := n, int64(1); got != want {
		t.Fatalf("%d of buyers and stream exist, want only the stream", got)
	}
	if l, err := other.XLen(ctx, base.Keys().Stream(v.ID)).Result(); err != nil || l != 0 {
		t.Fatalf("XLEN = %d, %v; want 0", l, err)
	}

	// Left alone, the next grab goes through at its first transaction.
	client2 := testenv.Redis(t)
	w2 := redisstore.NewWatchStock(redisstore.NewStock(client2, redisstore.Options{Prefix: base.Keys().Prefix}), attempts)
	check(t, w2.Reserve(ctx, grab(v.ID, 1, 1)))
}

func TestWatchStockDelegatesTheRestToTheScripts(t *testing.T) {
	ctx := context.Background()
	client, w := newWatchStock(t, redisstore.Options{})
	v := voucher(1, 3, 1)
	warm(t, client, w.Stock, v)
	if loaded, err := w.Warm(ctx, v); err != nil || loaded {
		t.Fatalf("second Warm = %v, %v; want false (a live counter is never reset)", loaded, err)
	}
	r := grab(v.ID, 1, 1)
	check(t, w.Reserve(ctx, r))

	left, err := w.Remaining(ctx, v.ID, 2)
	check(t, err)
	if want := map[domain.VoucherID]int{v.ID: 2}; !maps.Equal(left, want) {
		t.Fatalf("Remaining = %v, want %v", left, want)
	}

	o := domain.Order{ID: r.OrderID, VoucherID: v.ID, UserID: r.UserID, Quantity: 1, Status: domain.StatusCancelled}
	for i, want := range []bool{true, false} {
		released, err := w.Release(ctx, o)
		check(t, err)
		if got := released; got != want {
			t.Fatalf("Release #%d = %v, want %v", i+1, got, want)
		}
	}
	if got, want := remaining(t, w.Stock, v.ID), 3; got != want {
		t.Fatalf("remaining after the release = %d, want %d", got, want)
	}
	// The user may grab again once the order is released.
	again := grab(v.ID, 1, 1)
	again.OrderID = "o1-again"
	check(t, w.Reserve(ctx, again))

	if ok, err := w.SetPaused(ctx, v.ID, true); !ok || err != nil {
		t.Fatalf("SetPaused = %v, %v", ok, err)
	}
	if err := w.Reserve(ctx, grab(v.ID, 2, 1)); !errors.Is(err, domain.ErrPaused) {
		t.Fatalf("Reserve while paused = %v, want %v", err, domain.ErrPaused)
	}
}
