package redisstore_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/adapters/redisstore"
	"github.com/seckill/seckill/domain"
	"github.com/seckill/seckill/ports"
)

// newAudit returns an Audit over s's keys.
func newAudit(client redis.UniversalClient, s *redisstore.Stock) *redisstore.Audit {
	return redisstore.NewAudit(client, redisstore.Options{Prefix: s.Keys().Prefix})
}

func snapshot(t testing.TB, a *redisstore.Audit, id domain.VoucherID) ports.StockSnapshot {
	t.Helper()
	snap, err := a.Snapshot(context.Background(), id)
	check(t, err)
	return snap
}

// sameReservations reports whether got and want hold the same reservations in the
// same order.
func sameReservations(got, want []domain.Reservation) bool {
	return slices.EqualFunc(got, want, sameReservation)
}

// first returns the flag of a Restore of one reservation.
func first(restored []bool, err error) (bool, error) {
	if err != nil || len(restored) != 1 {
		return false, err
	}
	return restored[0], nil
}

func orderIDs(rs []domain.Reservation) []domain.OrderID {
	out := make([]domain.OrderID, len(rs))
	for i, r := range rs {
		out[i] = r.OrderID
	}
	return out
}

func held(rs []domain.Reservation) int {
	n := 0
	for _, r := range rs {
		n += r.Quantity
	}
	return n
}

func TestSnapshotReadsReservationsAndUnackedEntries(t *testing.T) {
	ctx := context.Background()
	client, s := newStock(t, 0)
	v := voucher(1, 20, 3)
	warm(t, client, s, v)
	a := newAudit(client, s)
	k := s.Keys()

	var rs []domain.Reservation
	for user := domain.UserID(1); user <= 6; user++ {
		r := grab(v.ID, user, int(user)%3+1)
		r.At = now.Add(time.Duration(user) * time.Millisecond)
		check(t, s.Reserve(ctx, r))
		rs = append(rs, r)
		if user == 3 {
			// Garbage in the queue, delivered below and left pending: never counted.
			check(t, client.XAdd(ctx, &redis.XAddArgs{Stream: k.Stream(v.ID), Values: []any{"order", "junk"}}).Err())
		}
	}
	// Garbage among the reservations: left out too.
	check(t, client.HSet(ctx, k.Orders(v.ID), "junk", "1:x:2").Err())

	// Delivered: entries 1, 2, 3 and the garbage. Acknowledged, not trimmed: 1 and 3.
	// Pending: 2 and the garbage. Never delivered: 4, 5, 6.
	q := newQueue(client, s, "a")
	ds := read(t, q, 4)
	if got, want := len(ds), 4; got != want {
		t.Fatalf("read %d entries, want %d", got, want)
	}
	check(t, q.Ack(ctx, ds[0], ds[2]))
	// User 2's order was closed: its reservation is gone, its entry still pending.
	released, err := s.Release(ctx, order(rs[1]))
	check(t, err)
	if !released {
		t.Fatal("release released nothing")
	}

	wantHeld := []domain.Reservation{rs[0], rs[2], rs[3], rs[4], rs[5]}
	wantUnacked := []domain.Reservation{rs[1], rs[3], rs[4], rs[5]}
	for _, page := range []int64{1000, 2, 1} {
		t.Run(fmt.Sprintf("page %d", page), func(t *testing.T) {
			redisstore.SetAuditPage(t, page)
			snap := snapshot(t, a, v.ID)
			if !snap.Present || snap.Stock != 20 || snap.Remaining != 20-held(wantHeld) {
				t.Fatalf("snapshot present %v, stock %d, remaining %d; want true, 20, %d",
					snap.Present, snap.Stock, snap.Remaining, 20-held(wantHeld))
			}
			if !sameReservations(snap.Reservations, wantHeld) {
				t.Fatalf("reservations %v, want %v", orderIDs(snap.Reservations), orderIDs(wantHeld))
			}
			if !sameReservations(snap.Unacked, wantUnacked) {
				t.Fatalf("unacked %v, want %v", orderIDs(snap.Unacked), orderIDs(wantUnacked))
			}
		})
	}

	// Delivered again by a claim, and a new reservation after the group's position:
	// both unacknowledged.
	claimed, err := q.Claim(ctx, 0, 10)
	check(t, err)
	if got, want := len(claimed), 2; got != want {
		t.Fatalf("claimed %d entries, want %d", got, want)
	}
	r7 := grab(v.ID, 7, 1)
	check(t, s.Reserve(ctx, r7))
	snap := snapshot(t, a, v.ID)
	if want := append(slices.Clone(wantUnacked), r7); !sameReservations(snap.Unacked, want) {
		t.Fatalf("unacked %v, want %v", orderIDs(snap.Unacked), orderIDs(want))
	}

	// Everything delivered and acknowledged, nothing trimmed: nothing unacknowledged.
	rest := read(t, q, 10)
	check(t, q.Ack(ctx, append(claimed, rest...)...))
	snap = snapshot(t, a, v.ID)
	if len(snap.Unacked) != 0 {
		t.Fatalf("unacked %v after acknowledging everything, want none", orderIDs(snap.Unacked))
	}
	if got, want := len(entryIDs(t, client, s, v.ID)), 8; got != want {
		t.Fatalf("stream holds %d entries, want %d (none trimmed)", got, want)
	}

	// A lost group: the queue recreates it at the start and delivers every entry again.
	check(t, client.XGroupDestroy(ctx, k.Stream(v.ID), redisstore.DefaultGroup).Err())
	snap = snapshot(t, a, v.ID)
	if want := append(slices.Clone(rs), r7); !sameReservations(snap.Unacked, want) {
		t.Fatalf("unacked without the group %v, want every entry %v", orderIDs(snap.Unacked), orderIDs(want))
	}
	// No stream at all: nothing queued, the reservations still there.
	check(t, client.Del(ctx, k.Stream(v.ID)).Err())
	snap = snapshot(t, a, v.ID)
	if len(snap.Unacked) != 0 || len(snap.Reservations) != 6 {
		t.Fatalf("without a stream: %d unacked, %d reservations; want 0 and 6", len(snap.Unacked), len(snap.Reservations))
	}
}

func TestSnapshotOfAMissingVoucher(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	client, s := newStock(t, 0)
	a := newAudit(client, s)
	k := s.Keys()
	cleanup(t, client, s, 98)
	cleanup(t, client, s, 99)

	if snap := snapshot(t, a, 99); snap.Present || snap.Stock != 0 || snap.Remaining != 0 ||
		snap.Reservations != nil || snap.Unacked != nil {
		t.Fatalf("snapshot of a voucher never warmed = %+v, want the zero value", snap)
	}
	// A partial hash (a stray write after the sale's keys expired) is no sale state,
	// whatever lies beside it.
	check(t, client.HSet(ctx, k.Meta(99), "remaining", "5").Err())
	check(t, client.HSet(ctx, k.Orders(99), "o1", "1:1:1").Err())
	if snap := snapshot(t, a, 99); snap.Present || snap.Reservations != nil {
		t.Fatalf("snapshot of a partial sale state = %+v, want the zero value", snap)
	}

	warm(t, client, s, voucher(98, 5, 1))
	check(t, client.HSet(ctx, k.Meta(98), "stock", "many").Err())
	if _, err := a.Snapshot(ctx, 98); err == nil || !strings.Contains(err.Error(), "malformed sale state") {
		t.Fatalf("Snapshot of a malformed sale state = %v, want an error naming it", err)
	}
}

// TestRestoreMakesRedisNameTheDatabasesOrders: what the contract suite checks, and
// what only Redis shows: the records a grab would write, their expiry with the sale
// state, nothing queued, and the released set that keeps a closed order out.
func TestRestoreMakesRedisNameTheDatabasesOrders(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	client, s := newStock(t, 0)
	v := voucher(1, 10, 3)
	warm(t, client, s, v)
	a := newAudit(client, s)
	k := s.Keys()
	stale := grab(v.ID, 1, 1)
	check(t, s.Reserve(ctx, stale))

	// The database's live order of user 1 replaces the order Redis named.
	other := grab(v.ID, 1, 2)
	other.OrderID = "o1-db"
	restored, err := first(a.Restore(ctx, live(other)...))
	check(t, err)
	if !restored {
		t.Fatal("Restore did not replace the order the user's entry named")
	}
	holds, err := client.HGet(ctx, k.Buyers(v.ID), "1").Result()
	check(t, err)
	if got, want := holds, "o1-db"; got != want {
		t.Fatalf("user 1 holds %q, want %q", got, want)
	}
	if n, err := client.HExists(ctx, k.Orders(v.ID), string(stale.OrderID)).Result(); err != nil || n {
		t.Fatalf("the replaced order's record is still there (%v, %v)", n, err)
	}

	lost := grab(v.ID, 7, 2)
	lost.At = now.Add(-time.Minute)
	restored, err = first(a.Restore(ctx, live(lost)...))
	check(t, err)
	if !restored {
		t.Fatal("Restore recorded nothing")
	}
	found, err := redisstore.NewReservations(client, redisstore.Options{Prefix: k.Prefix}).Find(ctx, 0, lost.OrderID)
	check(t, err)
	if !sameReservation(found, lost) {
		t.Fatalf("restored %+v, want %+v", found, lost)
	}
	if got, want := remaining(t, s, v.ID), 9; got != want {
		t.Fatalf("remaining = %d after a restore, want %d (untouched)", got, want)
	}
	if n, err := client.XLen(ctx, k.Stream(v.ID)).Result(); err != nil || n != 1 {
		t.Fatalf("XLEN = %d, %v after a restore, want 1 (nothing queued)", n, err)
	}
	gen, err := client.HGet(ctx, k.Meta(v.ID), "gen").Result()
	check(t, err)
	restored, err = first(a.Restore(ctx, live(lost)...))
	check(t, err)
	if again, err := client.HGet(ctx, k.Meta(v.ID), "gen").Result(); !restored || err != nil || again != gen {
		t.Fatalf("a second restore = %v, gen %s then %s (%v); want true and nothing changed", restored, gen, again, err)
	}

	// A closed order: released for good, its reservation forgotten.
	released, err := s.Release(ctx, order(lost))
	check(t, err)
	if !released {
		t.Fatal("release of the restored order released nothing")
	}
	restored, err = first(a.Restore(ctx, live(lost)...))
	check(t, err)
	if restored {
		t.Fatal("Restore recorded an order released since")
	}
	if member, err := client.SIsMember(ctx, k.Released(v.ID), string(lost.OrderID)).Result(); err != nil || !member {
		t.Fatalf("the released order is not in the released set (%v, %v)", member, err)
	}
	want := v.EndsAt.Add(redisstore.DefaultGrace).UnixMilli()
	for _, key := range []string{k.Buyers(v.ID), k.Orders(v.ID), k.Released(v.ID)} {
		at, err := client.PExpireTime(ctx, key).Result()
		check(t, err)
		if got := at.Milliseconds(); got != want {
			t.Errorf("%s expires at %d, want %d (with the sale state)", key, got, want)
		}
	}

	// No sale state: nothing to restore into, and no key is created.
	cleanup(t, client, s, 99)
	restored, err = first(a.Restore(ctx, live(grab(99, 1, 1))...))
	check(t, err)
	if restored {
		t.Fatal("restored into a voucher without sale state")
	}
	if n, err := client.Exists(ctx, k.Meta(99), k.Buyers(99), k.Orders(99), k.Released(99)).Result(); err != nil || n != 0 {
		t.Fatalf("a refused restore created %d keys (%v)", n, err)
	}

	if _, err := a.Restore(ctx, live(grab(v.ID, 8, 0))...); !errors.Is(err, domain.ErrInvalid) {
		t.Fatalf("Restore of quantity 0 = %v, want %v", err, domain.ErrInvalid)
	}
}

func TestRequeueAppendsAnEntryTheGroupReads(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	client, s := newStock(t, 0)
	v := voucher(1, 10, 3)
	warm(t, client, s, v)
	a := newAudit(client, s)
	k := s.Keys()
	q := newQueue(client, s, "a")
	r := grab(v.ID, 1, 2)
	r.At = now.Add(-time.Second)
	check(t, s.Reserve(ctx, r))
	check(t, q.Ack(ctx, read(t, q, 10)...))
	// The voucher fell out of the registry somehow: Requeue puts it back.
	check(t, client.Del(ctx, k.Registry()).Err())

	check(t, a.Requeue(ctx, r))
	ds := read(t, q, 10)
	if len(ds) != 1 || ds[0].Malformed != "" || !sameReservation(ds[0].Reservation, r) || ds[0].VoucherID != v.ID {
		t.Fatalf("read %+v after Requeue, want one delivery of %+v", ds, r)
	}
	snap := snapshot(t, a, v.ID)
	if !sameReservations(snap.Unacked, []domain.Reservation{r}) {
		t.Fatalf("unacked %v, want %v", orderIDs(snap.Unacked), r.OrderID)
	}
	at, err := client.PExpireTime(ctx, k.Stream(v.ID)).Result()
	check(t, err)
	if got, want := at.Milliseconds(), v.EndsAt.Add(redisstore.DefaultGrace).UnixMilli(); got != want {
		t.Fatalf("stream expires at %d, want %d (with the sale state)", got, want)
	}

	// A lost group comes back at the stream's start, so nothing left in it is skipped.
	check(t, client.XGroupDestroy(ctx, k.Stream(v.ID), redisstore.DefaultGroup).Err())
	r2 := grab(v.ID, 2, 1)
	check(t, a.Requeue(ctx, r2))
	ds = read(t, q, 10)
	if got, want := len(ds), 3; got != want {
		t.Fatalf("read %d entries after the group came back, want %d", got, want)
	}
	if last := ds[len(ds)-1]; !sameReservation(last.Reservation, r2) {
		t.Fatalf("last entry %+v, want %+v", last.Reservation, r2)
	}

	// No sale state: refused, and no stream is created that would never expire.
	cleanup(t, client, s, 99)
	if err := a.Requeue(ctx, grab(99, 1, 1)); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("Requeue without sale state = %v, want %v", err, domain.ErrNotFound)
	}
	if n, err := client.Exists(ctx, k.Stream(99)).Result(); err != nil || n != 0 {
		t.Fatalf("a refused requeue created the stream (%d, %v)", n, err)
	}
	bad := r
	bad.OrderID = ""
	if err := a.Requeue(ctx, bad); !errors.Is(err, domain.ErrInvalid) {
		t.Fatalf("Requeue without an order id = %v, want %v", err, domain.ErrInvalid)
	}
}

func TestRecountFixesRemaining(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	client, s := newStock(t, 0)
	v := voucher(1, 10, 3)
	warm(t, client, s, v)
	a := newAudit(client, s)
	k := s.Keys()
	check(t, s.Reserve(ctx, grab(v.ID, 1, 2)))
	check(t, s.Reserve(ctx, grab(v.ID, 2, 3)))
	recount := func(want int) {
		t.Helper()
		left, err := a.Recount(ctx, v.ID)
		check(t, err)
		if left != want {
			t.Fatalf("Recount = %d, want %d", left, want)
		}
		if got := remaining(t, s, v.ID); got != want {
			t.Fatalf("remaining = %d after Recount, want %d", got, want)
		}
	}
	published := listen(t, client, s.RestockChannel(v.ID))

	check(t, client.HSet(ctx, k.Meta(v.ID), "remaining", 100).Err()) // too many: would oversell
	recount(5)
	check(t, client.HSet(ctx, k.Meta(v.ID), "remaining", 0).Err()) // too few: units stuck
	recount(5)
	recount(5)
	if got, want := published(), []string{"1"}; !slices.Equal(got, want) {
		t.Fatalf("published %q, want %q (only the recount that put units back)", got, want)
	}

	// Reservations holding more than the stock: nothing left, never negative.
	check(t, client.HSet(ctx, k.Orders(v.ID), "x1", "9:9:1").Err())
	recount(0)
	check(t, client.HDel(ctx, k.Orders(v.ID), "x1").Err())

	// A record it cannot read: an error naming it, and nothing changes.
	check(t, client.HSet(ctx, k.Meta(v.ID), "remaining", 4).Err())
	check(t, client.HSet(ctx, k.Orders(v.ID), "x2", "9:lots:1").Err())
	if _, err := a.Recount(ctx, v.ID); err == nil || !strings.Contains(err.Error(), "9:lots:1") {
		t.Fatalf("Recount with a malformed record = %v, want an error naming it", err)
	}
	if got, want := remaining(t, s, v.ID), 4; got != want {
		t.Fatalf("remaining = %d after a failed recount, want %d", got, want)
	}

	cleanup(t, client, s, 99)
	if _, err := a.Recount(ctx, 99); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("Recount without sale state = %v, want %v", err, domain.ErrNotFound)
	}
	if n, err := client.Exists(ctx, k.Meta(99)).Result(); err != nil || n != 0 {
		t.Fatalf("Recount without sale state created the meta hash (%d, %v)", n, err)
	}
}

func TestAuditErrorsAreWrapped(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a := redisstore.NewAudit(closedClient(t), redisstore.Options{})
	_, snapErr := a.Snapshot(ctx, 1)
	_, restoreErr := a.Restore(ctx, live(grab(1, 1, 1))...)
	_, recountErr := a.Recount(ctx, 1)
	for _, tc := range []struct {
		err    error
		prefix string
	}{
		{snapErr, "snapshot stock: "},
		{restoreErr, "restore reservation: "},
		{a.Requeue(ctx, grab(1, 1, 1)), "requeue reservation: "},
		{recountErr, "recount stock: "},
	} {
		if !errors.Is(tc.err, redis.ErrClosed) {
			t.Errorf("error %v does not wrap %v", tc.err, redis.ErrClosed)
		}
		if tc.err == nil || !strings.HasPrefix(tc.err.Error(), tc.prefix) {
			t.Errorf("error %v does not start with %q", tc.err, tc.prefix)
		}
	}
}
