package redisstore_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/adapters/redisstore"
	"github.com/seckill/seckill/adapters/strategies/watchstock"
	"github.com/seckill/seckill/adapters/testenv"
	"github.com/seckill/seckill/domain"
	"github.com/seckill/seckill/ports"
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
func newStock(t testing.TB, grace time.Duration) (redis.UniversalClient, *redisstore.Stock) {
	t.Helper()
	client := testenv.Redis(t)
	return client, redisstore.NewStock(client, redisstore.Options{Prefix: "t" + testenv.Unique(), Grace: grace})
}

// cleanup deletes the keys of voucher id, and the registry of the prefix, when the
// test ends.
func cleanup(t testing.TB, client redis.UniversalClient, s *redisstore.Stock, id domain.VoucherID) {
	t.Helper()
	k := s.Keys()
	t.Cleanup(func() {
		// The registry and the active set are in slots of their own.
		err := errors.Join(
			client.Unlink(context.Background(), k.Meta(id), k.Buyers(id), k.Orders(id), k.Stream(id), k.Dead(id),
				k.Waitlist(id), k.Waiting(id), k.Passes(id)).Err(),
			client.Unlink(context.Background(), k.Registry()).Err(),
			client.Unlink(context.Background(), k.Active()).Err())
		if err != nil {
			t.Errorf("delete keys of voucher %d: %v", id, err)
		}
	})
}

// warm loads v and deletes its keys when the test ends.
func warm(t testing.TB, client redis.UniversalClient, s *redisstore.Stock, v domain.Voucher) {
	t.Helper()
	cleanup(t, client, s, v.ID)
	loaded, err := s.Warm(context.Background(), v)
	check(t, err)
	if loaded == ports.WarmPresent {
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
	t.Parallel()
	k := redisstore.Keys{Prefix: "p"}
	for _, tc := range []struct{ got, want string }{
		{k.Meta(42), "p:{v42}:meta"},
		{k.Buyers(42), "p:{v42}:buyers"},
		{k.Orders(42), "p:{v42}:orders"},
		{k.Stream(42), "p:{v42}:stream"},
		{k.Dead(42), "p:{v42}:dead"},
		{k.Waitlist(42), "p:{v42}:waitlist"},
		{k.Waiting(42), "p:{v42}:waiting"},
		{k.UserWaits(9), "p:{u9}:waits"},
		{k.Passes(42), "p:{v42}:passes"},
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

// TestWarmWritesTheMetaHash checks the sale state Warm writes and when it expires;
// the contract suite (TestStockContract) checks what it means to a grab.
func TestWarmWritesTheMetaHash(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	client, s := newStock(t, 0)
	v := voucher(1, 10, 2)
	v.Sold = 3
	v.Version = 4
	v.Admission, v.Challenge = domain.AdmissionWaitingRoom, domain.ChallengePow
	warm(t, client, s, v)

	meta, err := client.HGetAll(ctx, s.Keys().Meta(v.ID)).Result()
	check(t, err)
	expire := v.EndsAt.Add(redisstore.DefaultGrace).UnixMilli()
	want := map[string]string{
		"stock":     "10",
		"remaining": "7",
		"begins":    strconv.FormatInt(v.BeginsAt.UnixMilli(), 10),
		"ends":      strconv.FormatInt(v.EndsAt.UnixMilli(), 10),
		"limit":     "2",
		"expire":    strconv.FormatInt(expire, 10),
		"paused":    "0",
		"restoring": "1", // live orders hold 3 units: their reservations come next
		"version":   "4",
		"admission": "waiting_room",
		"challenge": "pow",
	}
	if !maps.Equal(meta, want) {
		t.Fatalf("meta = %v, want %v", meta, want)
	}
	at, err := client.PExpireTime(ctx, s.Keys().Meta(v.ID)).Result()
	check(t, err)
	if got, want := at.Milliseconds(), expire; got != want {
		t.Fatalf("meta expires at %d, want %d (EndsAt + default grace)", got, want)
	}
}

// TestWarmGivesAStateItsAdmission: a sale state loaded without an admission and a
// challenge (by a version before them) reads as first come, and the next warm-up
// writes the voucher's, changing nothing else: its grabs pass the gates from then on.
func TestWarmGivesAStateItsAdmission(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	client, s := newStock(t, 0)
	v := voucher(1, 10, 2)
	v.Admission, v.Challenge = domain.AdmissionWaitingRoom, domain.ChallengePow
	warm(t, client, s, v)
	check(t, client.HDel(ctx, s.Keys().Meta(v.ID), "admission", "challenge").Err())
	check(t, s.Reserve(ctx, grab(v.ID, 1, 1)))

	loaded, err := s.Warm(ctx, v)
	check(t, err)
	if loaded != ports.WarmPresent {
		t.Fatalf("Warm = %v, want %v", loaded, ports.WarmPresent)
	}
	meta, err := client.HMGet(ctx, s.Keys().Meta(v.ID), "admission", "challenge", "remaining").Result()
	check(t, err)
	if want := []any{"waiting_room", "pow", "9"}; !slices.Equal(meta, want) {
		t.Fatalf("admission, challenge, remaining = %v, want %v", meta, want)
	}
	if err := s.Reserve(ctx, grab(v.ID, 2, 1)); !errors.Is(err, domain.ErrChallengeRequired) {
		t.Fatalf("grab without a proof once warmed again = %v, want %v", err, domain.ErrChallengeRequired)
	}
}

// TestWithoutSaleStateNothingIsWritten: a grab or a pause of a voucher without sale
// state is refused (the contract suite checks the answers) and leaves no key behind,
// which would read as a partial sale state; under the script and WATCH alike.
func TestWithoutSaleStateNothingIsWritten(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	client, s := newStock(t, 0)
	cleanup(t, client, s, 99)
	for _, stock := range []ports.Stock{s, watchstock.New(s, 0)} {
		if err := stock.Reserve(ctx, grab(99, 1, 1)); !errors.Is(err, domain.ErrNotFound) {
			t.Fatalf("%T.Reserve = %v, want %v", stock, err, domain.ErrNotFound)
		}
		if ok, err := stock.SetPaused(ctx, 99, true); ok || err != nil {
			t.Fatalf("%T.SetPaused = %v, %v; want false", stock, ok, err)
		}
	}
	k := s.Keys()
	n, err := client.Exists(ctx, k.Meta(99), k.Buyers(99), k.Orders(99), k.Stream(99)).Result()
	check(t, err)
	if got, want := n, int64(0); got != want {
		t.Fatalf("refusals on a voucher without sale state created %d keys", got)
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
	t.Parallel()
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
		want := map[string]any{"r": fmt.Sprintf("%d:%d:%s:%s", r.UserID, r.Quantity, at, r.OrderID)}
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

// closedStock returns a Stock whose client is closed: every command fails at once.
func closedStock(t *testing.T) *redisstore.Stock {
	client := redis.NewClient(&redis.Options{Addr: "127.0.0.1:0"})
	check(t, client.Close())
	return redisstore.NewStock(client, redisstore.Options{})
}

func TestRemainingWithoutIDsMakesNoRoundTrip(t *testing.T) {
	t.Parallel()
	left, err := closedStock(t).Remaining(context.Background())
	check(t, err)
	if left == nil || len(left) != 0 {
		t.Fatalf("Remaining() = %#v, want an empty map", left)
	}
}

func TestRedisErrorsAreWrapped(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := closedStock(t)
	_, warmErr := s.Warm(ctx, voucher(1, 1, 1))
	_, remainingErr := s.Remaining(ctx, 1)
	_, pauseErr := s.SetPaused(ctx, 1, true)
	_, releaseErr := s.Release(ctx, order(grab(1, 1, 1)))
	for _, tc := range []struct {
		err    error
		prefix string
	}{
		{warmErr, "warm stock: "},
		{s.Reserve(ctx, grab(1, 1, 1)), "reserve stock: "},
		{remainingErr, "read remaining stock: "},
		{pauseErr, "pause sale: "},
		{releaseErr, "release stock: "},
	} {
		if !errors.Is(tc.err, redis.ErrClosed) {
			t.Errorf("error %v does not wrap %v", tc.err, redis.ErrClosed)
		}
		if !strings.HasPrefix(tc.err.Error(), tc.prefix) {
			t.Errorf("error %q does not start with %q", tc.err, tc.prefix)
		}
	}
}

// TestWarmWithLiveOrdersRestoresBeforeGrabs: a sale state loaded for a voucher whose
// live orders hold units answers grabs unavailable — and Warm reports it as still to
// load — until their reservations are restored and it is marked whole; then the holders are
// answered with their orders and the rest is on sale.
func TestWarmWithLiveOrdersRestoresBeforeGrabs(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	client, s := newStock(t, 0)
	audit := redisstore.NewAudit(client, redisstore.Options{Prefix: s.Keys().Prefix})
	v := voucher(1, 3, 1)
	v.Sold = 1
	cleanup(t, client, s, v.ID)
	loaded, err := s.Warm(ctx, v)
	check(t, err)
	if loaded != ports.WarmRestoring {
		t.Fatalf("Warm of a missing sale state with live orders = %v, want WarmRestoring", loaded)
	}
	if err := s.Reserve(ctx, grab(v.ID, 7, 1)); !errors.Is(err, domain.ErrUnavailable) {
		t.Fatalf("grab while restoring: %v, want ErrUnavailable", err)
	}
	if again, err := s.Warm(ctx, v); err != nil || again != ports.WarmRestoring {
		t.Fatalf("Warm while still restoring = %v, %v; want WarmRestoring (finish the restore)", again, err)
	}
	held := grab(v.ID, 7, 1)
	held.OrderID = "held"
	if ok, err := first(audit.Restore(ctx, live(held)...)); err != nil || !ok {
		t.Fatalf("restore = %v, %v", ok, err)
	}
	check(t, audit.Restored(ctx, v.ID))
	var ap *domain.AlreadyPurchasedError
	if err := s.Reserve(ctx, grab(v.ID, 7, 1)); !errors.As(err, &ap) || ap.OrderID != "held" {
		t.Fatalf("the holder's grab after the restore: %v, want already_purchased naming its order", err)
	}
	check(t, s.Reserve(ctx, grab(v.ID, 8, 1)))
	if again, err := s.Warm(ctx, v); err != nil || again != ports.WarmPresent {
		t.Fatalf("Warm of a whole sale state = %v, %v; want WarmPresent", again, err)
	}
}

// newWatchStock returns the WATCH/MULTI strategy on the test server under a prefix of
// its own, with opts (its Prefix is set here), for the tests that hold it to the
// script's limits and tally.
func newWatchStock(t testing.TB, opts redisstore.Options) (redis.UniversalClient, *watchstock.Stock) {
	t.Helper()
	client := testenv.Redis(t)
	opts.Prefix = "w" + testenv.Unique()
	return client, watchstock.New(redisstore.NewStock(client, opts), 0)
}
