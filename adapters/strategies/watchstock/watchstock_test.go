package watchstock_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/adapters/redisstore"
	"github.com/seckill/seckill/adapters/strategies/watchstock"
	"github.com/seckill/seckill/adapters/testenv"
	"github.com/seckill/seckill/domain"
)

// saleKeys returns what Redis holds of voucher id under k, with the stream's entry
// ids left out (they are times), and the expiry of each key.
func saleKeys(t *testing.T, client redis.UniversalClient, k redisstore.Keys, id domain.VoucherID) string {
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
	t.Parallel()
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
	t.Parallel()
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

// meddler is a go-redis hook that changes a voucher's sale state, through another
// client, just before every MULTI … EXEC its client sends: each optimistic transaction
// then finds a watched key changed.
type meddler struct {
	other redis.UniversalClient
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
	t.Parallel()
	ctx := context.Background()
	other, base := newStock(t, 0)
	v := voucher(1, 10, 1)
	warm(t, other, base, v)

	client := testenv.Redis(t)
	m := &meddler{other: other, key: base.Keys().Meta(v.ID)}
	if cc, ok := client.(*redis.ClusterClient); ok {
		// A cluster client runs WATCH … EXEC on the node's own client, with its hooks.
		check(t, cc.ForEachMaster(ctx, func(_ context.Context, node *redis.Client) error { node.AddHook(m); return nil }))
	} else {
		client.AddHook(m)
	}
	const attempts = 4
	w := watchstock.New(redisstore.NewStock(client, redisstore.Options{Prefix: base.Keys().Prefix}), attempts)

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
	w2 := watchstock.New(redisstore.NewStock(client2, redisstore.Options{Prefix: base.Keys().Prefix}), attempts)
	check(t, w2.Reserve(ctx, grab(v.ID, 1, 1)))
}
