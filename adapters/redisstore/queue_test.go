package redisstore_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/adapters/redisstore"
	"github.com/seckill/seckill/adapters/testenv"
	"github.com/seckill/seckill/domain"
	"github.com/seckill/seckill/ports"
)

// newQueue returns a Queue over s's keys, reading as consumer, that re-reads the
// registry on every call. The test's own prefix keeps consumer names apart.
func newQueue(client redis.UniversalClient, s *redisstore.Stock, consumer string) *redisstore.Queue {
	return redisstore.NewQueue(client, redisstore.QueueOptions{
		Prefix:        s.Keys().Prefix,
		Consumer:      consumer,
		DiscoverEvery: time.Nanosecond,
	})
}

// read reads up to count entries, waiting at most 50ms.
func read(t testing.TB, q *redisstore.Queue, count int) []ports.Delivery {
	t.Helper()
	ds, err := q.Read(context.Background(), count, 50*time.Millisecond)
	check(t, err)
	return ds
}

// reserve makes a reservation of one unit for each of users.
func reserve(t testing.TB, s *redisstore.Stock, id domain.VoucherID, users ...domain.UserID) []domain.Reservation {
	t.Helper()
	rs := make([]domain.Reservation, len(users))
	for i, u := range users {
		rs[i] = grab(id, u, 1)
		check(t, s.Reserve(context.Background(), rs[i]))
	}
	return rs
}

// pending returns the pending entries of voucher id's stream in the default group.
func pending(t testing.TB, client redis.UniversalClient, s *redisstore.Stock, id domain.VoucherID) map[string]redis.XPendingExt {
	t.Helper()
	rows, err := client.XPendingExt(context.Background(), &redis.XPendingExtArgs{
		Stream: s.Keys().Stream(id), Group: redisstore.DefaultGroup, Start: "-", End: "+", Count: 1000,
	}).Result()
	check(t, err)
	byID := make(map[string]redis.XPendingExt, len(rows))
	for _, r := range rows {
		byID[r.ID] = r
	}
	return byID
}

// group returns the default group's state on voucher id's stream.
func group(t testing.TB, client redis.UniversalClient, s *redisstore.Stock, id domain.VoucherID) redis.XInfoGroup {
	t.Helper()
	groups, err := client.XInfoGroups(context.Background(), s.Keys().Stream(id)).Result()
	check(t, err)
	if got, want := len(groups), 1; got != want {
		t.Fatalf("%d groups on voucher %d's stream, want %d", got, id, want)
	}
	return groups[0]
}

// entryIDs returns the ids of voucher id's stream entries.
func entryIDs(t testing.TB, client redis.UniversalClient, s *redisstore.Stock, id domain.VoucherID) []string {
	t.Helper()
	msgs, err := client.XRange(context.Background(), s.Keys().Stream(id), "-", "+").Result()
	check(t, err)
	ids := make([]string, len(msgs))
	for i, m := range msgs {
		ids[i] = m.ID
	}
	return ids
}

func ids(ds []ports.Delivery) []string {
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = d.ID
	}
	return out
}

func sameReservation(a, b domain.Reservation) bool {
	return a.OrderID == b.OrderID && a.VoucherID == b.VoucherID && a.UserID == b.UserID &&
		a.Quantity == b.Quantity && a.At.Equal(b.At)
}

func TestWarmCreatesGroupAndRegistersVoucher(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	client, s := newStock(t, 0)
	v := voucher(3, 10, 1)
	warm(t, client, s, v)
	k := s.Keys()

	g := group(t, client, s, v.ID)
	if g.Name != redisstore.DefaultGroup || g.LastDeliveredID != "0-0" || g.Pending != 0 {
		t.Fatalf("group after warm-up = %+v, want %q at 0-0 with nothing pending", g, redisstore.DefaultGroup)
	}
	registered, err := client.SMembers(ctx, k.Registry()).Result()
	check(t, err)
	if want := []string{"3"}; !slices.Equal(registered, want) {
		t.Fatalf("registry = %v, want %v", registered, want)
	}
	at, err := client.PExpireTime(ctx, k.Stream(v.ID)).Result()
	check(t, err)
	if got, want := at.Milliseconds(), v.EndsAt.Add(redisstore.DefaultGrace).UnixMilli(); got != want {
		t.Fatalf("stream expires at %d, want %d (with the sale state)", got, want)
	}

	reserve(t, s, v.ID, 1, 2, 3)
	if got, want := len(read(t, newQueue(client, s, "a"), 2)), 2; got != want {
		t.Fatalf("read %d entries, want %d", got, want)
	}
	before := group(t, client, s, v.ID)

	// Warm again, even with other settings: nothing moves, the group keeps its place.
	v.EndsAt = v.EndsAt.Add(time.Hour)
	for range 2 {
		loaded, err := s.Warm(ctx, v)
		check(t, err)
		if loaded != ports.WarmPresent {
			t.Fatal("a repeated warm-up loaded the sale state again")
		}
	}
	after := group(t, client, s, v.ID)
	if after.LastDeliveredID != before.LastDeliveredID || after.EntriesRead != before.EntriesRead ||
		after.Pending != before.Pending || after.Lag != before.Lag {
		t.Fatalf("group after a repeated warm-up = %+v, want it untouched (%+v)", after, before)
	}
	if got, want := after.EntriesRead, int64(2); got != want {
		t.Fatalf("entries read = %d, want %d", got, want)
	}
	at2, err := client.PExpireTime(ctx, k.Stream(v.ID)).Result()
	check(t, err)
	if at2 != at {
		t.Fatalf("stream expiry moved from %v to %v on a repeated warm-up", at, at2)
	}
	n, err := client.SCard(ctx, k.Registry()).Result()
	check(t, err)
	if got, want := n, int64(1); got != want {
		t.Fatalf("registry holds %d ids, want %d", got, want)
	}

	// A lost group comes back with the next warm-up.
	check(t, client.XGroupDestroy(ctx, k.Stream(v.ID), redisstore.DefaultGroup).Err())
	_, err = s.Warm(ctx, v)
	check(t, err)
	if got, want := group(t, client, s, v.ID).LastDeliveredID, "0-0"; got != want {
		t.Fatalf("recreated group at %s, want %s", got, want)
	}
}

func TestWarmUsesTheConfiguredGroup(t *testing.T) {
	t.Parallel()
	client := testenv.Redis(t)
	s := redisstore.NewStock(client, redisstore.Options{Prefix: "t" + testenv.Unique(), Group: "other"})
	warm(t, client, s, voucher(1, 1, 1))
	groups, err := client.XInfoGroups(context.Background(), s.Keys().Stream(1)).Result()
	check(t, err)
	if len(groups) != 1 || groups[0].Name != "other" {
		t.Fatalf("groups = %+v, want one named %q", groups, "other")
	}
}

// Without any stream a read waits its block all the same (the contract suite's
// ReadHonoursItsContext cancels one).
func TestReadWithoutStreamsWaits(t *testing.T) {
	t.Parallel()
	client, s := newStock(t, 0)
	q := newQueue(client, s, "a")

	start := time.Now()
	ds, err := q.Read(context.Background(), 10, 100*time.Millisecond)
	check(t, err)
	if len(ds) != 0 {
		t.Fatalf("read %d entries with no stream, want none", len(ds))
	}
	if waited := time.Since(start); waited < 100*time.Millisecond {
		t.Fatalf("returned after %v, want it to wait the block (100ms)", waited)
	}

}

func TestReadRecreatesALostGroup(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	client, s := newStock(t, 0)
	v := voucher(1, 10, 1)
	warm(t, client, s, v)
	rs := reserve(t, s, v.ID, 1, 2)
	check(t, client.XGroupDestroy(ctx, s.Keys().Stream(v.ID), redisstore.DefaultGroup).Err())

	ds := read(t, newQueue(client, s, "a"), 10)
	if got, want := len(ds), len(rs); got != want {
		t.Fatalf("read %d entries after the group was lost, want %d", got, want)
	}
	if got, want := group(t, client, s, v.ID).Pending, int64(2); got != want {
		t.Fatalf("%d pending in the recreated group, want %d", got, want)
	}
}

func TestReadRecreatesADeletedStreamOfALiveSale(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	client, s := newStock(t, 0)
	v := voucher(1, 10, 1)
	warm(t, client, s, v)
	k := s.Keys()
	check(t, client.Unlink(ctx, k.Stream(v.ID)).Err())
	q := newQueue(client, s, "a")

	if ds := read(t, q, 10); len(ds) != 0 {
		t.Fatalf("read %d entries from a deleted stream, want none", len(ds))
	}
	at, err := client.PExpireTime(ctx, k.Stream(v.ID)).Result()
	check(t, err)
	if got, want := at.Milliseconds(), v.EndsAt.Add(redisstore.DefaultGrace).UnixMilli(); got != want {
		t.Fatalf("recreated stream expires at %d, want %d", got, want)
	}
	r := reserve(t, s, v.ID, 1)[0]
	if ds := read(t, q, 10); len(ds) != 1 || ds[0].Reservation.OrderID != r.OrderID {
		t.Fatalf("read %+v, want order %s", ds, r.OrderID)
	}
	member, err := client.SIsMember(ctx, k.Registry(), "1").Result()
	check(t, err)
	if !member {
		t.Fatal("a live sale was dropped from the registry")
	}
}

func TestQueueForgetsExpiredSales(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	client, s := newStock(t, 0)
	v := voucher(1, 10, 1)
	warm(t, client, s, v)
	r := reserve(t, s, v.ID, 1)[0]
	k := s.Keys()
	cleanup(t, client, s, 99)
	check(t, client.SAdd(ctx, k.Registry(), "99", "not-a-voucher").Err())

	q := newQueue(client, s, "a")
	ds := read(t, q, 10)
	if len(ds) != 1 || ds[0].Reservation.OrderID != r.OrderID {
		t.Fatalf("read %+v, want order %s", ds, r.OrderID)
	}
	// Trim prunes the registry, a bounded batch at a time: three members fit in one.
	_, err := q.Trim(ctx)
	check(t, err)
	registered, err := client.SMembers(ctx, k.Registry()).Result()
	check(t, err)
	slices.Sort(registered)
	if want := []string{"1", "not-a-voucher"}; !slices.Equal(registered, want) {
		t.Fatalf("registry = %v, want %v (99 forgotten, a stray member left alone)", registered, want)
	}
	n, err := client.Exists(ctx, k.Stream(99), k.Meta(99)).Result()
	check(t, err)
	if n != 0 {
		t.Fatalf("the queue recreated %d keys of an expired sale", n)
	}
}

func TestClaimAcknowledgesDeletedEntries(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	client, s := newStock(t, 0)
	v := voucher(1, 10, 1)
	warm(t, client, s, v)
	reserve(t, s, v.ID, 1, 2, 3)
	a, b := newQueue(client, s, "a"), newQueue(client, s, "b")
	ds := read(t, a, 10)
	if got, want := len(ds), 3; got != want {
		t.Fatalf("read %d entries, want %d", got, want)
	}
	check(t, client.XDel(ctx, s.Keys().Stream(v.ID), ds[1].ID).Err())

	claimed := ids(claimUntil(t, b, 2))
	slices.Sort(claimed)
	if want := []string{ds[0].ID, ds[2].ID}; !slices.Equal(claimed, want) {
		t.Fatalf("claimed %v, want %v (not the deleted %s)", claimed, want, ds[1].ID)
	}
	p := pending(t, client, s, v.ID)
	if _, still := p[ds[1].ID]; still || len(p) != 2 {
		t.Fatalf("pending = %v, want the two live entries only", p)
	}
}

// claimUntil claims as q, with a minIdle of 50ms, until it holds n entries.
func claimUntil(t testing.TB, q *redisstore.Queue, n int) []ports.Delivery {
	t.Helper()
	var got []ports.Delivery
	testenv.Eventually(t, testenv.Patience, fmt.Sprintf("%d entries claimed", n), func() (bool, string) {
		ds, err := q.Claim(context.Background(), 50*time.Millisecond, n-len(got))
		check(t, err)
		got = append(got, ds...)
		return len(got) == n, fmt.Sprintf("%d claimed", len(got))
	})
	return got
}

func TestMalformedEntriesComeBackWithAReason(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	client, s := newStock(t, 0)
	v := voucher(1, 10, 1)
	warm(t, client, s, v)
	stream := s.Keys().Stream(v.ID)
	good := map[string]any{"order": "x", "voucher": "1", "user": "5", "qty": "1", "at": "1"}
	with := func(field string, value any) map[string]any {
		m := map[string]any{}
		for k, v := range good {
			if k != field {
				m[k] = v
			}
		}
		if value != nil {
			m[field] = value
		}
		return m
	}
	cases := []struct {
		values map[string]any
		reason string
	}{
		{with("qty", "lots"), `field "qty": not a positive integer`},
		{with("qty", "0"), `field "qty": not a positive integer`},
		{with("qty", "+1"), `field "qty": not a positive integer`},
		{with("qty", "1001"), `field "qty": above 1000`},
		{with("order", nil), `field "order": missing`},
		{with("order", ""), `field "order": empty`},
		{with("order", "a\x00b"), `field "order": not an order id`},
		{with("order", strings.Repeat("x", 65)), `field "order": not an order id`},
		{with("voucher", "2"), `field "voucher": names voucher 2 in the stream of voucher 1`},
		{with("user", "-5"), `field "user": not a positive integer`},
		{with("at", "soon"), `field "at": not a Unix time in milliseconds`},
		{map[string]any{"garbage": "yes"}, `field "order": missing`},
	}
	for _, c := range cases {
		check(t, client.XAdd(ctx, &redis.XAddArgs{Stream: stream, Values: c.values}).Err())
	}
	r := reserve(t, s, v.ID, 1)[0]

	ds := read(t, newQueue(client, s, "a"), 100)
	if got, want := len(ds), len(cases)+1; got != want {
		t.Fatalf("read %d entries, want %d", got, want)
	}
	for i, c := range cases {
		if got := ds[i].Malformed; got != c.reason {
			t.Errorf("entry %v: Malformed = %q, want %q", c.values, got, c.reason)
		}
	}
	last := ds[len(cases)]
	if last.Malformed != "" || !sameReservation(last.Reservation, r) {
		t.Fatalf("entry after the malformed ones = %+v, want reservation %+v", last, r)
	}
}

func TestDeadLetterMovesAnEntry(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	client, s := newStock(t, 0)
	v := voucher(1, 10, 1)
	warm(t, client, s, v)
	k := s.Keys()
	check(t, client.XAdd(ctx, &redis.XAddArgs{Stream: k.Stream(v.ID),
		Values: []any{"order", "x", "voucher", "1", "user", "5", "qty", "lots", "at", "1"}}).Err())
	r := reserve(t, s, v.ID, 2)[0]
	q := newQueue(client, s, "a")
	ds := read(t, q, 10)
	if len(ds) != 2 || ds[0].Malformed == "" {
		t.Fatalf("read %+v, want a malformed entry then a good one", ds)
	}
	poison, kept := ds[0], ds[1]

	check(t, q.DeadLetter(ctx, poison, "malformed: "+poison.Malformed))
	dead, err := client.XRange(ctx, k.Dead(v.ID), "-", "+").Result()
	check(t, err)
	if got, want := len(dead), 1; got != want {
		t.Fatalf("%d dead letters, want %d", got, want)
	}
	want := map[string]any{
		"order": "x", "voucher": "1", "user": "5", "qty": "lots", "at": "1",
		"reason":     `malformed: field "qty": not a positive integer`,
		"stream":     k.Stream(v.ID),
		"entry_id":   poison.ID,
		"deliveries": "1",
	}
	if got := dead[0].Values; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("dead letter = %v, want %v", got, want)
	}
	p := pending(t, client, s, v.ID)
	if _, still := p[poison.ID]; still {
		t.Fatal("the dead-lettered entry is still pending")
	}
	if _, ok := p[kept.ID]; !ok || len(p) != 1 {
		t.Fatalf("pending = %v, want only %s", p, kept.ID)
	}
	streamAt, err := client.PExpireTime(ctx, k.Stream(v.ID)).Result()
	check(t, err)
	deadAt, err := client.PExpireTime(ctx, k.Dead(v.ID)).Result()
	check(t, err)
	if deadAt != streamAt || deadAt <= 0 {
		t.Fatalf("dead letters expire at %v, want %v (with the stream)", deadAt, streamAt)
	}

	// An entry deleted from the stream meanwhile is recorded from its decoded fields.
	check(t, client.XDel(ctx, k.Stream(v.ID), kept.ID).Err())
	check(t, q.DeadLetter(ctx, kept, "gave up"))
	dead, err = client.XRange(ctx, k.Dead(v.ID), "-", "+").Result()
	check(t, err)
	if got, want := len(dead), 2; got != want {
		t.Fatalf("%d dead letters, want %d", got, want)
	}
	at := strconv.FormatInt(r.At.UnixMilli(), 10)
	want = map[string]any{
		"r":      "2:1:" + at + ":" + string(r.OrderID),
		"reason": "gave up", "stream": k.Stream(v.ID), "entry_id": kept.ID, "deliveries": "1",
	}
	if got := dead[1].Values; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("dead letter = %v, want %v", got, want)
	}
	if p := pending(t, client, s, v.ID); len(p) != 0 {
		t.Fatalf("pending = %v after dead-lettering everything, want none", p)
	}
}

func TestTrimDropsOnlyAcknowledgedEntries(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	client, s := newStock(t, 0)
	warm(t, client, s, voucher(1, 10, 1))
	warm(t, client, s, voucher(2, 10, 1))
	// Another group on voucher 2 has read nothing: its entries must stay.
	check(t, client.XGroupCreate(ctx, s.Keys().Stream(2), "audit", "0").Err())
	reserve(t, s, 1, 1, 2, 3, 4, 5)
	reserve(t, s, 2, 6, 7)
	all := entryIDs(t, client, s, 1)
	q := newQueue(client, s, "a")

	ds := read(t, q, 3)
	var first []ports.Delivery
	for _, d := range ds {
		if d.VoucherID == 2 || d.ID == all[0] || d.ID == all[1] {
			first = append(first, d)
		}
	}
	if got, want := len(first), 4; got != want {
		t.Fatalf("%d of the first deliveries to acknowledge, want %d", got, want)
	}
	check(t, q.Ack(ctx, first...))

	trimmed, err := q.Trim(ctx)
	check(t, err)
	if got, want := trimmed, int64(2); got != want {
		t.Fatalf("trimmed %d entries, want %d", got, want)
	}
	if got, want := entryIDs(t, client, s, 1), all[2:]; !slices.Equal(got, want) {
		t.Fatalf("voucher 1 keeps %v, want %v (pending and undelivered)", got, want)
	}
	if got, want := len(entryIDs(t, client, s, 2)), 2; got != want {
		t.Fatalf("voucher 2 keeps %d entries, want %d", got, want)
	}

	for _, d := range ds {
		if d.ID == all[2] {
			check(t, q.Ack(ctx, d))
		}
	}
	trimmed, err = q.Trim(ctx)
	check(t, err)
	if got, want := trimmed, int64(1); got != want {
		t.Fatalf("trimmed %d entries, want %d", got, want)
	}
	if got, want := entryIDs(t, client, s, 1), all[3:]; !slices.Equal(got, want) {
		t.Fatalf("voucher 1 keeps %v, want %v (never delivered)", got, want)
	}

	// Delivered but not acknowledged: kept.
	if got, want := len(read(t, q, 10)), 2; got != want {
		t.Fatalf("read %d entries, want %d", got, want)
	}
	trimmed, err = q.Trim(ctx)
	check(t, err)
	if trimmed != 0 || len(entryIDs(t, client, s, 1)) != 2 {
		t.Fatalf("trimmed %d pending entries, want none", trimmed)
	}
	if got, want := group(t, client, s, 1).Pending, int64(2); got != want {
		t.Fatalf("%d pending after trimming, want %d", got, want)
	}
}

// closedClient returns a client that is closed: every command fails at once.
func closedClient(t *testing.T) redis.UniversalClient {
	client := redis.NewClient(&redis.Options{Addr: "127.0.0.1:0"})
	check(t, client.Close())
	return client
}

func TestQueueAndReservationsErrorsAreWrapped(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	client := closedClient(t)
	q := redisstore.NewQueue(client, redisstore.QueueOptions{Consumer: "c"})
	res := redisstore.NewReservations(client, redisstore.Options{})
	d := ports.Delivery{ID: "1-0", VoucherID: 1}
	_, readErr := q.Read(ctx, 1, 0)
	_, claimErr := q.Claim(ctx, time.Second, 1)
	_, trimErr := q.Trim(ctx)
	_, findErr := res.Find(ctx, 1, "o1")
	for _, tc := range []struct {
		err    error
		prefix string
	}{
		{readErr, "read queue: "},
		{claimErr, "claim queue entries: "},
		{q.Ack(ctx, d), "ack queue entries: "},
		{q.DeadLetter(ctx, d, "why"), "dead-letter queue entry: "},
		{trimErr, "trim queue: "},
		{findErr, "find reservation: "},
	} {
		if !errors.Is(tc.err, redis.ErrClosed) {
			t.Errorf("error %v does not wrap %v", tc.err, redis.ErrClosed)
		}
		if tc.err == nil || !strings.HasPrefix(tc.err.Error(), tc.prefix) {
			t.Errorf("error %v does not start with %q", tc.err, tc.prefix)
		}
	}
}

func TestNewQueueRequiresAConsumerName(t *testing.T) {
	t.Parallel()
	defer func() {
		if recover() == nil {
			t.Fatal("NewQueue without a consumer name did not panic")
		}
	}()
	redisstore.NewQueue(nil, redisstore.QueueOptions{})
}

// TestRefreshSeesANewVoucherAtOnce: the queue re-reads its registry only now and then;
// Refresh makes a voucher warmed a moment ago readable at once (the drain at shutdown
// depends on it).
func TestRefreshSeesANewVoucherAtOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	client, s := newStock(t, 0)
	q := redisstore.NewQueue(client, redisstore.QueueOptions{Prefix: s.Keys().Prefix, Consumer: "c", DiscoverEvery: time.Hour})
	if ds, err := q.Read(ctx, 10, time.Millisecond); err != nil || len(ds) != 0 {
		t.Fatalf("read before any voucher: %v, %v", ds, err)
	}
	warm(t, client, s, voucher(1, 10, 1))
	check(t, s.Reserve(ctx, grab(1, 7, 1)))
	if ds, err := q.Read(ctx, 10, time.Millisecond); err != nil || len(ds) != 0 {
		t.Fatalf("read with the registry cached: %v, %v (the test assumes a stale list)", ds, err)
	}
	check(t, q.Refresh(ctx))
	ds, err := q.Read(ctx, 10, time.Millisecond)
	check(t, err)
	if len(ds) != 1 || ds[0].Reservation.UserID != 7 {
		t.Fatalf("read after Refresh = %+v", ds)
	}
}

// The set of vouchers on sale is read a page at a time; every page's vouchers are read.
// (Not parallel: it sets the package's page size.)
func TestQueueReadsTheActiveSetAPageAtATime(t *testing.T) {
	redisstore.SetActivePage(t, 2)
	_, _, q := queueOfFive(t)
	wantOneEntryEach(t, q, 5)
}

// With more vouchers on sale than one XREADGROUP reads, a read is a pipeline of
// commands; every stream is read, and a stream of one command that lost its group is
// repaired (with the others of that command) and read next time. On a cluster each
// stream has its command anyway. (Not parallel: it sets the package's read size.)
func TestQueueReadsManyStreamsInSeveralCommands(t *testing.T) {
	redisstore.SetStreamsPerRead(t, 2)
	ctx := context.Background()
	client, s, q := queueOfFive(t)
	check(t, q.Refresh(ctx))
	check(t, client.XGroupDestroy(ctx, s.Keys().Stream(3), redisstore.DefaultGroup).Err())
	wantOneEntryEach(t, q, 5)
}

// queueOfFive warms vouchers 1 to 5, reserves one unit of each, and returns a queue
// reading them.
func queueOfFive(t *testing.T) (redis.UniversalClient, *redisstore.Stock, *redisstore.Queue) {
	t.Helper()
	client, s := newStock(t, 0)
	q := redisstore.NewQueue(client, redisstore.QueueOptions{Prefix: s.Keys().Prefix, Consumer: "c", DiscoverEvery: time.Hour})
	for id := domain.VoucherID(1); id <= 5; id++ {
		warm(t, client, s, voucher(id, 10, 1))
		check(t, s.Reserve(context.Background(), grab(id, 7, 1)))
	}
	return client, s, q
}

// wantOneEntryEach reads q until it has read n entries, and wants them to be one of
// each of vouchers 1 to n.
func wantOneEntryEach(t *testing.T, q *redisstore.Queue, n int) {
	t.Helper()
	var got []domain.VoucherID
	testenv.Eventually(t, testenv.Patience, fmt.Sprintf("an entry of each of the %d vouchers read", n), func() (bool, string) {
		ds, err := q.Read(context.Background(), 10, time.Millisecond)
		check(t, err)
		for _, d := range ds {
			got = append(got, d.VoucherID)
		}
		return len(got) >= n, fmt.Sprint(got)
	})
	slices.Sort(got)
	var want []domain.VoucherID
	for id := domain.VoucherID(1); id <= domain.VoucherID(n); id++ {
		want = append(want, id)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("read vouchers %v, want %v", got, want)
	}
}

// commandCounter counts the commands a client sends, pipelined ones included.
type commandCounter struct {
	n     atomic.Int64
	mu    sync.Mutex
	names []string
}

func (c *commandCounter) DialHook(next redis.DialHook) redis.DialHook { return next }
func (c *commandCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		c.n.Add(1)
		c.mu.Lock()
		c.names = append(c.names, cmd.Name())
		c.mu.Unlock()
		return next(ctx, cmd)
	}
}
func (c *commandCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		c.n.Add(int64(len(cmds)))
		return next(ctx, cmds)
	}
}

// endedVoucher warms a voucher whose sale ends a moment after now, reserves one unit
// for each of users within its window, and waits until the sale has ended.
func endedVoucher(t *testing.T, client redis.UniversalClient, s *redisstore.Stock, id domain.VoucherID, users ...domain.UserID) []domain.Reservation {
	t.Helper()
	at := time.Now()
	v := voucher(id, 10, 1)
	v.BeginsAt, v.EndsAt = at.Add(-time.Hour), at.Add(20*time.Millisecond)
	warm(t, client, s, v)
	rs := make([]domain.Reservation, len(users))
	for i, u := range users {
		rs[i] = grab(id, u, 1)
		rs[i].At = at
		check(t, s.Reserve(context.Background(), rs[i]))
	}
	// Ended by the sale's clock: Redis's, which the embedded server moves in steps.
	testenv.Eventually(t, testenv.Patience, "the sale ended", func() (bool, string) {
		now, err := client.Time(context.Background()).Result()
		return err == nil && !now.Before(v.EndsAt), fmt.Sprint(now, err)
	})
	return rs
}

// The queue reads the streams of live sales, and of ended ones until every reservation
// in them is persisted; then an ended sale leaves the active set, and costs nothing on
// an idle poll. A reservation requeued later brings it back.
func TestQueueReadsEndedSalesUntilDrained(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	client, s := newStock(t, 0)
	k := s.Keys()
	t.Cleanup(func() { _ = client.Unlink(context.Background(), k.Active()).Err() })
	warm(t, client, s, voucher(1, 10, 1))
	ended := endedVoucher(t, client, s, 2, 7, 8)
	q := newQueue(client, s, "a")

	ds := read(t, q, 10)
	if got, want := len(ds), 2; got != want {
		t.Fatalf("read %d entries of the ended sale, want %d", got, want)
	}
	// Delivered but not acknowledged: the sale stays active.
	check(t, q.Refresh(ctx))
	if _, err := client.ZScore(ctx, k.Active(), "2").Result(); err != nil {
		t.Fatalf("an ended sale with reservations pending left the active set: %v", err)
	}
	check(t, q.Ack(ctx, ds...))
	check(t, q.Refresh(ctx))
	if err := client.ZScore(ctx, k.Active(), "2").Err(); !errors.Is(err, redis.Nil) {
		t.Fatalf("ZSCORE of a drained ended sale = %v, want it gone from the active set", err)
	}
	// Trimmed as it left: Trim no longer looks at its stream.
	if n, err := client.XLen(ctx, k.Stream(2)).Result(); err != nil || n != 0 {
		t.Fatalf("XLEN of the drained ended sale's stream = %d, %v; want 0", n, err)
	}
	if err := client.ZScore(ctx, k.Active(), "1").Err(); err != nil {
		t.Fatalf("the live sale left the active set: %v", err)
	}
	// A grab judged inside the window — by an instance whose clock is slow, or one
	// that waited for its turn — that reaches Redis after the sale left the set is
	// refused as ended: no entry is appended that no worker would read.
	late := grab(2, 9, 1)
	late.At = ended[0].At
	if err := s.Reserve(ctx, late); !errors.Is(err, domain.ErrEnded) {
		t.Fatalf("a grab judged in the window after the sale settled = %v, want %v", err, domain.ErrEnded)
	}
	if n, err := client.XLen(ctx, k.Stream(2)).Result(); err != nil || n != 0 {
		t.Fatalf("XLEN after a grab of a settled sale = %d, %v; want 0 (nothing appended)", n, err)
	}

	// Idle (the queue discovers on every call here): one command to discover, one to
	// read the live stream.
	counter := &commandCounter{}
	client.AddHook(counter)
	if ds := read(t, q, 10); len(ds) != 0 {
		t.Fatalf("read %d entries while idle", len(ds))
	}
	if got, want := counter.n.Load(), int64(2); got != want {
		t.Fatalf("an idle poll sent %d commands, want %d: %q", got, want, counter.names)
	}

	// Reconciliation requeues a reservation of the ended sale: it is read again.
	check(t, newAudit(client, s).Requeue(ctx, ended[0]))
	check(t, q.Refresh(ctx))
	ds = read(t, q, 10)
	if len(ds) != 1 || ds[0].Reservation.OrderID != ended[0].OrderID {
		t.Fatalf("read %+v after a requeue, want order %s", ds, ended[0].OrderID)
	}
}

// Many sales that ended long ago cost an idle poll nothing once they left the active set.
func TestIdlePollCostDoesNotGrowWithEndedSales(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	client, s := newStock(t, 0)
	k := s.Keys()
	t.Cleanup(func() { _ = client.Unlink(context.Background(), k.Active()).Err() })
	for id := domain.VoucherID(1); id <= 50; id++ {
		v := voucher(id, 10, 1)
		v.BeginsAt, v.EndsAt = time.Now().Add(-2*time.Hour), time.Now().Add(-time.Hour)
		warm(t, client, s, v)
	}
	q := newQueue(client, s, "a")
	check(t, q.Refresh(ctx)) // drained: they leave the active set
	n, err := client.ZCard(ctx, k.Active()).Result()
	check(t, err)
	if n != 0 {
		t.Fatalf("%d ended, drained sales still in the active set", n)
	}
	counter := &commandCounter{}
	client.AddHook(counter)
	if ds := read(t, q, 10); len(ds) != 0 {
		t.Fatalf("read %d entries while idle", len(ds))
	}
	if got, want := counter.n.Load(), int64(1); got != want {
		t.Fatalf("an idle poll sent %d commands, want %d (the discovery): %q", got, want, counter.names)
	}
}

// OldestQueued is the age of the oldest entry not yet acknowledged, delivered or not,
// and 0 once every entry is.
func TestOldestQueued(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	client, s := newStock(t, 0)
	t.Cleanup(func() { _ = client.Unlink(context.Background(), s.Keys().Active()).Err() })
	q := newQueue(client, s, "a")
	age, err := q.OldestQueued(ctx)
	check(t, err)
	if age != 0 {
		t.Fatalf("OldestQueued with no voucher = %v, want 0", age)
	}
	warm(t, client, s, voucher(1, 10, 1))
	warm(t, client, s, voucher(2, 10, 1))
	reserve(t, s, 1, 1)
	time.Sleep(50 * time.Millisecond)
	reserve(t, s, 2, 2)
	for _, step := range []string{"never delivered", "delivered, not acknowledged"} {
		age, err = q.OldestQueued(ctx)
		check(t, err)
		if age < 50*time.Millisecond || age > time.Minute {
			t.Fatalf("OldestQueued with the first entry %s = %v, want its age (50ms or more)", step, age)
		}
		if step == "never delivered" {
			if got, want := len(read(t, q, 1)), 2; got != want {
				t.Fatalf("read %d entries, want %d", got, want)
			}
		}
	}
	ds := read(t, q, 10) // nothing new
	ds = append(ds, claimAll(t, q)...)
	check(t, q.Ack(ctx, ds...))
	age, err = q.OldestQueued(ctx)
	check(t, err)
	if age != 0 {
		t.Fatalf("OldestQueued with every entry acknowledged = %v, want 0", age)
	}
}

// claimAll claims every pending entry of any consumer.
func claimAll(t *testing.T, q *redisstore.Queue) []ports.Delivery {
	t.Helper()
	ds, err := q.Claim(context.Background(), 0, 100)
	check(t, err)
	return ds
}

// A voucher in the registry but not in the active set (warmed by an earlier version)
// is adopted at the queue's first discovery: its reservations are read.
func TestQueueAdoptsRegisteredVouchers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	client, s := newStock(t, 0)
	k := s.Keys()
	t.Cleanup(func() { _ = client.Unlink(context.Background(), k.Active()).Err() })
	warm(t, client, s, voucher(1, 10, 1))
	r := reserve(t, s, 1, 1)[0]
	check(t, client.Unlink(ctx, k.Active()).Err())
	check(t, client.SAdd(ctx, k.Registry(), "99").Err()) // keys long gone: not adopted

	ds := read(t, newQueue(client, s, "a"), 10)
	if len(ds) != 1 || ds[0].Reservation.OrderID != r.OrderID {
		t.Fatalf("read %+v, want order %s", ds, r.OrderID)
	}
	active, err := client.ZRange(ctx, k.Active(), 0, -1).Result()
	check(t, err)
	if want := []string{"1"}; !slices.Equal(active, want) {
		t.Fatalf("active set = %v, want %v", active, want)
	}
}

// With several vouchers on sale, a read waiting for entries wakes for a new entry of
// the voucher last read (on a cluster it waits on that stream alone).
func TestReadWakesUpForTheHotVoucherAmongSeveral(t *testing.T) {
	t.Parallel()
	client, s := newStock(t, 0)
	warm(t, client, s, voucher(1, 10, 1))
	warm(t, client, s, voucher(2, 10, 1))
	q := newQueue(client, s, "a")
	reserve(t, s, 2, 1)
	if got, want := len(read(t, q, 10)), 1; got != want {
		t.Fatalf("read %d entries, want %d", got, want)
	}

	done := make(chan []ports.Delivery, 1)
	go func() {
		ds, err := q.Read(context.Background(), 10, 10*time.Second)
		if err != nil {
			t.Error(err)
		}
		done <- ds
	}()
	waitBlocked(t, client, s.Keys().Stream(2))
	r := reserve(t, s, 2, 2)[0]
	select {
	case ds := <-done:
		if len(ds) != 1 || ds[0].Reservation.OrderID != r.OrderID {
			t.Fatalf("waiting read returned %+v, want order %s", ds, r.OrderID)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("a waiting read did not return")
	}
}

// waitBlocked waits until a client is blocked in XREADGROUP on the server owning key
// (CLIENT LIST, flags b). The embedded server has no CLIENT LIST: there it returns at
// once, and the test may pass without waiting for the read to block.
func waitBlocked(t *testing.T, client redis.UniversalClient, key string) {
	t.Helper()
	ctx := context.Background()
	node := client
	if cc, ok := client.(*redis.ClusterClient); ok {
		n, err := cc.MasterForKey(ctx, key)
		check(t, err)
		node = n
	}
	testenv.Eventually(t, testenv.Patience, "a client blocked in XREADGROUP", func() (bool, string) {
		list, err := node.ClientList(ctx).Result()
		if err != nil {
			return true, ""
		}
		for _, line := range strings.Split(list, "\n") {
			if strings.Contains(line, "cmd=xreadgroup") && strings.Contains(line, " flags=b ") {
				return true, ""
			}
		}
		return false, list
	})
}
