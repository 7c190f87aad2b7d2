package redisstore_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/adapters/redisstore"
	"github.com/seckill/seckill/adapters/testenv"
	"github.com/seckill/seckill/domain"
)

// now is the application's clock in these tests. It lies far in the future because
// the keys expire at EndsAt+Grace by the Redis server's own clock.
var now = time.Date(2099, time.January, 1, 12, 0, 0, 0, time.UTC)

// voucher returns a voucher on sale from an hour before now to an hour after.
func voucher(id domain.VoucherID, stock, limit int) domain.Voucher {
	return domain.Voucher{
		ID:           id,
		Title:        "voucher " + id.String(),
		Stock:        stock,
		BeginsAt:     now.Add(-time.Hour),
		EndsAt:       now.Add(time.Hour),
		PerUserLimit: limit,
	}
}

// grab returns user's reservation of qty units of id at now, under order id o<user>.
func grab(id domain.VoucherID, user domain.UserID, qty int) domain.Reservation {
	return domain.Reservation{
		OrderID:   domain.OrderID("o" + user.String()),
		VoucherID: id,
		UserID:    user,
		Quantity:  qty,
		At:        now,
	}
}

// check stops the test on an unexpected error.
func check(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// newStock returns a Stock on the test server under a prefix of its own.
func newStock(t testing.TB, grace time.Duration) (*redis.Client, *redisstore.Stock) {
	t.Helper()
	client := testenv.Redis(t)
	return client, redisstore.NewStock(client, redisstore.Options{Prefix: "t" + testenv.Unique(), Grace: grace})
}

// cleanup deletes the keys of voucher id, and the registry of the prefix, when the
// test ends.
func cleanup(t testing.TB, client *redis.Client, s *redisstore.Stock, id domain.VoucherID) {
	t.Helper()
	k := s.Keys()
	t.Cleanup(func() {
		err := client.Unlink(context.Background(), k.Meta(id), k.Buyers(id), k.Orders(id), k.Stream(id),
			k.Dead(id), k.Registry()).Err()
		if err != nil {
			t.Errorf("delete keys of voucher %d: %v", id, err)
		}
	})
}

// warm loads v and deletes its keys when the test ends.
func warm(t testing.TB, client *redis.Client, s *redisstore.Stock, v domain.Voucher) {
	t.Helper()
	cleanup(t, client, s, v.ID)
	loaded, err := s.Warm(context.Background(), v)
	check(t, err)
	if !loaded {
		t.Fatalf("warm %d loaded nothing", v.ID)
	}
}

func remaining(t testing.TB, s *redisstore.Stock, id domain.VoucherID) int {
	t.Helper()
	left, err := s.Remaining(context.Background(), id)
	check(t, err)
	n, ok := left[id]
	if !ok {
		t.Fatalf("voucher %d has no sale state", id)
	}
	return n
}

func TestKeys(t *testing.T) {
	k := redisstore.Keys{Prefix: "p"}
	for _, tc := range []struct{ got, want string }{
		{k.Meta(42), "p:{v42}:meta"},
		{k.Buyers(42), "p:{v42}:buyers"},
		{k.Orders(42), "p:{v42}:orders"},
		{k.Stream(42), "p:{v42}:stream"},
		{k.Dead(42), "p:{v42}:dead"},
		{k.Registry(), "p:vouchers"},
		{k.Restock(), "p:restock"},
		{redisstore.Keys{}.Restock(), "seckill:restock"},
		{redisstore.Keys{}.Registry(), "seckill:vouchers"},
		{redisstore.Keys{}.Meta(7), "seckill:{v7}:meta"},
		{redisstore.NewStock(nil, redisstore.Options{}).Keys().Stream(7), "seckill:{v7}:stream"},
		{redisstore.NewStock(nil, redisstore.Options{Prefix: "x"}).Keys().Buyers(7), "x:{v7}:buyers"},
	} {
		if tc.got != tc.want {
			t.Errorf("got key %q, want %q", tc.got, tc.want)
		}
	}
}

func TestWarmLoadsSaleStateOnce(t *testing.T) {
	ctx := context.Background()
	client, s := newStock(t, 0)
	v := voucher(1, 10, 2)
	warm(t, client, s, v)

	meta, err := client.HGetAll(ctx, s.Keys().Meta(v.ID)).Result()
	check(t, err)
	expire := v.EndsAt.Add(redisstore.DefaultGrace).UnixMilli()
	want := map[string]string{
		"stock":     "10",
		"remaining": "10",
		"begins":    strconv.FormatInt(v.BeginsAt.UnixMilli(), 10),
		"ends":      strconv.FormatInt(v.EndsAt.UnixMilli(), 10),
		"limit":     "2",
		"expire":    strconv.FormatInt(expire, 10),
		"paused":    "0",
	}
	if !maps.Equal(meta, want) {
		t.Fatalf("meta = %v, want %v", meta, want)
	}
	at, err := client.PExpireTime(ctx, s.Keys().Meta(v.ID)).Result()
	check(t, err)
	if got, want := at.Milliseconds(), expire; got != want {
		t.Fatalf("meta expires at %d, want %d (EndsAt + default grace)", got, want)
	}

	loaded, err := s.Warm(ctx, v)
	check(t, err)
	if loaded {
		t.Fatal("second warm-up loaded again")
	}
}

func TestWarmLeavesWhatTheDatabaseSold(t *testing.T) {
	ctx := context.Background()
	client, s := newStock(t, 0)
	v := voucher(1, 10, 2)
	v.Sold = 3
	warm(t, client, s, v)

	meta, err := client.HMGet(ctx, s.Keys().Meta(v.ID), "stock", "remaining").Result()
	check(t, err)
	if got, want := fmt.Sprint(meta), "[10 7]"; got != want {
		t.Fatalf("stock and remaining = %s, want %s (remaining = stock - sold)", got, want)
	}
	check(t, s.Reserve(ctx, grab(v.ID, 1, 2)))
	if got, want := remaining(t, s, v.ID), 5; got != want {
		t.Fatalf("remaining = %d after a grab of 2, want %d", got, want)
	}
	// Still load-only-if-absent: a warm-up with another sold count changes nothing.
	v.Sold = 0
	loaded, err := s.Warm(ctx, v)
	check(t, err)
	if loaded {
		t.Fatal("a second warm-up loaded again")
	}
	if got, want := remaining(t, s, v.ID), 5; got != want {
		t.Fatalf("remaining = %d after a second warm-up, want %d", got, want)
	}

	// More sold than stock (a database ahead of a shrunk stock): nothing left, never
	// a negative count.
	over := voucher(2, 4, 1)
	over.Sold = 6
	warm(t, client, s, over)
	if got, want := remaining(t, s, over.ID), 0; got != want {
		t.Fatalf("remaining = %d with more sold than stock, want %d", got, want)
	}
	if err := s.Reserve(ctx, grab(over.ID, 1, 1)); !errors.Is(err, domain.ErrSoldOut) {
		t.Fatalf("Reserve = %v, want %v", err, domain.ErrSoldOut)
	}
}

func TestWarmNeverResetsLiveCounter(t *testing.T) {
	ctx := context.Background()
	client, s := newStock(t, 0)
	v := voucher(1, 10, 3)
	warm(t, client, s, v)
	check(t, s.Reserve(ctx, grab(v.ID, 1, 3)))

	v.Stock = 50
	loaded, err := s.Warm(ctx, v)
	check(t, err)
	if loaded {
		t.Fatal("warm-up reloaded a live sale")
	}
	if got, want := remaining(t, s, v.ID), 7; got != want {
		t.Fatalf("remaining = %d after a second warm-up, want %d", got, want)
	}
}

func TestReserveOutcomes(t *testing.T) {
	ctx := context.Background()
	client, s := newStock(t, 0)
	tests := []struct {
		name string
		at   time.Time
		qty  int
		want error
	}{
		{"reserved", now, 1, nil},
		{"reserved at the opening instant", now.Add(-time.Hour), 1, nil},
		{"reserved at the last millisecond", now.Add(time.Hour - time.Millisecond), 2, nil},
		{"not started", now.Add(-time.Hour - time.Millisecond), 1, domain.ErrNotStarted},
		{"ended at the closing instant", now.Add(time.Hour), 1, domain.ErrEnded},
		{"ended", now.Add(48 * time.Hour), 1, domain.ErrEnded},
		{"over the per-user limit", now, 3, domain.ErrInvalid},
		{"zero quantity", now, 0, domain.ErrInvalid},
		{"negative quantity", now, -1, domain.ErrInvalid},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v := voucher(domain.VoucherID(i+1), 10, 2)
			warm(t, client, s, v)
			r := grab(v.ID, 1, tc.qty)
			r.At = tc.at

			err := s.Reserve(ctx, r)
			if !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
				t.Fatalf("Reserve = %v, want %v", err, tc.want)
			}
			left, stream := 10, int64(0)
			if tc.want == nil {
				left, stream = 10-tc.qty, 1
			}
			if got := remaining(t, s, v.ID); got != left {
				t.Fatalf("remaining = %d, want %d", got, left)
			}
			n, err := client.XLen(ctx, s.Keys().Stream(v.ID)).Result()
			check(t, err)
			if n != stream {
				t.Fatalf("XLEN = %d, want %d", n, stream)
			}
		})
	}
}

func TestReserveOverLimitNamesQuantity(t *testing.T) {
	client, s := newStock(t, 0)
	v := voucher(1, 10, 2)
	warm(t, client, s, v)

	var invalid *domain.ValidationError
	if err := s.Reserve(context.Background(), grab(v.ID, 1, 3)); !errors.As(err, &invalid) {
		t.Fatalf("Reserve = %v, want a *domain.ValidationError", err)
	}
	if got, want := invalid.Field, "quantity"; got != want {
		t.Fatalf("invalid field %q, want %q", got, want)
	}
}

func TestReserveUnknownVoucher(t *testing.T) {
	ctx := context.Background()
	client, s := newStock(t, 0)
	cleanup(t, client, s, 99)

	if err := s.Reserve(ctx, grab(99, 1, 1)); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("Reserve = %v, want %v", err, domain.ErrNotFound)
	}
	n, err := client.Exists(ctx, s.Keys().Meta(99), s.Keys().Buyers(99), s.Keys().Orders(99), s.Keys().Stream(99)).Result()
	check(t, err)
	if n != 0 {
		t.Fatalf("a refused grab on an unknown voucher created %d keys", n)
	}
}

func TestReserveAlreadyPurchasedNamesExistingOrder(t *testing.T) {
	ctx := context.Background()
	client, s := newStock(t, 0)
	v := voucher(1, 2, 1)
	warm(t, client, s, v)
	check(t, s.Reserve(ctx, grab(v.ID, 1, 1)))

	again := grab(v.ID, 1, 1)
	again.OrderID = "another"
	err := s.Reserve(ctx, again)
	var held *domain.AlreadyPurchasedError
	if !errors.As(err, &held) || !errors.Is(err, domain.ErrAlreadyPurchased) {
		t.Fatalf("Reserve = %v, want an *domain.AlreadyPurchasedError", err)
	}
	if got, want := held.OrderID, domain.OrderID("o1"); got != want {
		t.Fatalf("already purchased names order %q, want %q", got, want)
	}

	// Once sold out, a holder still learns its order rather than "sold out".
	check(t, s.Reserve(ctx, grab(v.ID, 2, 1)))
	if err := s.Reserve(ctx, again); !errors.As(err, &held) || held.OrderID != "o1" {
		t.Fatalf("Reserve by a holder after sell-out = %v, want already purchased o1", err)
	}
	if err := s.Reserve(ctx, grab(v.ID, 3, 1)); !errors.Is(err, domain.ErrSoldOut) {
		t.Fatalf("Reserve = %v, want %v", err, domain.ErrSoldOut)
	}
	if got, want := remaining(t, s, v.ID), 0; got != want {
		t.Fatalf("remaining = %d, want %d", got, want)
	}
}

func TestReserveQuantity(t *testing.T) {
	ctx := context.Background()
	client, s := newStock(t, 0)
	v := voucher(1, 5, 3)
	warm(t, client, s, v)

	check(t, s.Reserve(ctx, grab(v.ID, 1, 3)))
	if got, want := remaining(t, s, v.ID), 2; got != want {
		t.Fatalf("remaining = %d after taking 3 of 5, want %d", got, want)
	}
	// Two left: a grab of three is sold out and takes nothing.
	if err := s.Reserve(ctx, grab(v.ID, 2, 3)); !errors.Is(err, domain.ErrSoldOut) {
		t.Fatalf("Reserve = %v, want %v", err, domain.ErrSoldOut)
	}
	if got, want := remaining(t, s, v.ID), 2; got != want {
		t.Fatalf("remaining = %d after a refused grab, want %d", got, want)
	}
	// The refusal recorded nothing, so the same user may take what is left.
	check(t, s.Reserve(ctx, grab(v.ID, 2, 2)))
	if err := s.Reserve(ctx, grab(v.ID, 3, 1)); !errors.Is(err, domain.ErrSoldOut) {
		t.Fatalf("Reserve = %v, want %v", err, domain.ErrSoldOut)
	}
	if got, want := remaining(t, s, v.ID), 0; got != want {
		t.Fatalf("remaining = %d, want %d", got, want)
	}
}

func TestReserveKeysExpireAfterSale(t *testing.T) {
	ctx := context.Background()
	grace := 2 * time.Hour
	client, s := newStock(t, grace)
	v := voucher(1, 10, 1)
	warm(t, client, s, v)
	check(t, s.Reserve(ctx, grab(v.ID, 1, 1)))

	k := s.Keys()
	want := v.EndsAt.Add(grace).UnixMilli()
	for _, key := range []string{k.Meta(v.ID), k.Buyers(v.ID), k.Orders(v.ID), k.Stream(v.ID)} {
		at, err := client.PExpireTime(ctx, key).Result()
		check(t, err)
		if got := at.Milliseconds(); got != want {
			t.Errorf("%s expires at %d, want %d (EndsAt + grace)", key, got, want)
		}
	}
}

func TestReserveRecordsAndQueuesAtomically(t *testing.T) {
	ctx := context.Background()
	client, s := newStock(t, 0)
	v := voucher(7, 20, 3)
	warm(t, client, s, v)

	k := s.Keys()
	var taken []domain.Reservation
	sum := 0
	for user := domain.UserID(1); user <= 6; user++ {
		r := grab(v.ID, user, int(user)%3+1)
		r.At = now.Add(time.Duration(user) * time.Millisecond)
		check(t, s.Reserve(ctx, r))
		taken = append(taken, r)
		sum += r.Quantity
	}

	if got, want := remaining(t, s, v.ID), v.Stock-sum; got != want {
		t.Fatalf("remaining = %d, want %d", got, want)
	}
	entries, err := client.XRange(ctx, k.Stream(v.ID), "-", "+").Result()
	check(t, err)
	if got, want := len(entries), len(taken); got != want {
		t.Fatalf("XLEN = %d, want %d", got, want)
	}
	buyers, err := client.HGetAll(ctx, k.Buyers(v.ID)).Result()
	check(t, err)
	orders, err := client.HGetAll(ctx, k.Orders(v.ID)).Result()
	check(t, err)
	if len(buyers) != len(taken) || len(orders) != len(taken) {
		t.Fatalf("%d buyers and %d orders, want %d of each", len(buyers), len(orders), len(taken))
	}
	for i, r := range taken {
		at := strconv.FormatInt(r.At.UnixMilli(), 10)
		want := map[string]any{
			"order":   string(r.OrderID),
			"voucher": "7",
			"user":    r.UserID.String(),
			"qty":     strconv.Itoa(r.Quantity),
			"at":      at,
		}
		if got := entries[i].Values; !maps.Equal(got, want) {
			t.Errorf("stream entry %d = %v, want %v", i, got, want)
		}
		if got, want := buyers[r.UserID.String()], string(r.OrderID); got != want {
			t.Errorf("buyer %d holds %q, want %q", r.UserID, got, want)
		}
		if got, want := orders[string(r.OrderID)], fmt.Sprintf("%d:%d:%s", r.UserID, r.Quantity, at); got != want {
			t.Errorf("order %s = %q, want %q", r.OrderID, got, want)
		}
	}
}

func TestReserveConcurrentGrabsSellExactlyTheStock(t *testing.T) {
	ctx := context.Background()
	client, s := newStock(t, 0)
	const stock, users, twice = 100, 1900, 100
	v := voucher(1, stock, 1)
	warm(t, client, s, v)

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
			answers[i] = answer{r, s.Reserve(ctx, r)}
		})
	}
	close(start)
	wg.Wait()

	holds := map[domain.UserID]domain.OrderID{}
	for _, a := range answers {
		if a.err == nil {
			if _, dup := holds[a.r.UserID]; dup {
				t.Fatalf("user %d reserved twice", a.r.UserID)
			}
			holds[a.r.UserID] = a.r.OrderID
		}
	}
	if got, want := len(holds), stock; got != want {
		t.Fatalf("%d users reserved, want %d", got, want)
	}
	for _, a := range answers {
		var held *domain.AlreadyPurchasedError
		switch {
		case a.err == nil, errors.Is(a.err, domain.ErrSoldOut):
		case errors.As(a.err, &held):
			if got, want := held.OrderID, holds[a.r.UserID]; got != want {
				t.Fatalf("user %d told it holds %q, want %q", a.r.UserID, got, want)
			}
		default:
			t.Fatalf("user %d: unexpected answer %v", a.r.UserID, a.err)
		}
	}

	if got, want := remaining(t, s, v.ID), 0; got != want {
		t.Fatalf("remaining = %d, want %d", got, want)
	}
	n, err := client.XLen(ctx, s.Keys().Stream(v.ID)).Result()
	check(t, err)
	if got, want := n, int64(stock); got != want {
		t.Fatalf("XLEN = %d, want %d", got, want)
	}
	buyers, err := client.HGetAll(ctx, s.Keys().Buyers(v.ID)).Result()
	check(t, err)
	if got, want := len(buyers), stock; got != want {
		t.Fatalf("%d buyers, want %d", got, want)
	}
	for user, order := range holds {
		if got, want := buyers[user.String()], string(order); got != want {
			t.Fatalf("buyer %d holds %q, want %q", user, got, want)
		}
	}
}

func TestRemaining(t *testing.T) {
	ctx := context.Background()
	client, s := newStock(t, 0)
	warm(t, client, s, voucher(1, 10, 2))
	warm(t, client, s, voucher(2, 5, 1))
	check(t, s.Reserve(ctx, grab(1, 1, 2)))

	left, err := s.Remaining(ctx, 1, 2, 3)
	check(t, err)
	if want := map[domain.VoucherID]int{1: 8, 2: 5}; !maps.Equal(left, want) {
		t.Fatalf("Remaining = %v, want %v", left, want)
	}

	left, err = s.Remaining(ctx, 3)
	check(t, err)
	if len(left) != 0 {
		t.Fatalf("Remaining of an unknown voucher = %v, want none", left)
	}
}

// closedStock returns a Stock whose client is closed: every command fails at once.
func closedStock(t *testing.T) *redisstore.Stock {
	client := redis.NewClient(&redis.Options{Addr: "127.0.0.1:0"})
	check(t, client.Close())
	return redisstore.NewStock(client, redisstore.Options{})
}

func TestRemainingWithoutIDsMakesNoRoundTrip(t *testing.T) {
	left, err := closedStock(t).Remaining(context.Background())
	check(t, err)
	if left == nil || len(left) != 0 {
		t.Fatalf("Remaining() = %#v, want an empty map", left)
	}
}

func TestRedisErrorsAreWrapped(t *testing.T) {
	ctx := context.Background()
	s := closedStock(t)
	_, warmErr := s.Warm(ctx, voucher(1, 1, 1))
	_, remainingErr := s.Remaining(ctx, 1)
	for _, tc := range []struct {
		err    error
		prefix string
	}{
		{warmErr, "warm stock: "},
		{s.Reserve(ctx, grab(1, 1, 1)), "reserve stock: "},
		{remainingErr, "read remaining stock: "},
	} {
		if !errors.Is(tc.err, redis.ErrClosed) {
			t.Errorf("error %v does not wrap %v", tc.err, redis.ErrClosed)
		}
		if !strings.HasPrefix(tc.err.Error(), tc.prefix) {
			t.Errorf("error %q does not start with %q", tc.err, tc.prefix)
		}
	}
}
