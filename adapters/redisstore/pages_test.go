package redisstore_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/adapters/redisstore"
	"github.com/seckill/seckill/domain"
)

// cleanupUsers deletes the order indexes of users when the test ends (they are in
// slots of their own).
func cleanupUsers(t testing.TB, client redis.UniversalClient, s *redisstore.Stock, users ...domain.UserID) {
	t.Helper()
	t.Cleanup(func() {
		for _, u := range users {
			if err := client.Unlink(context.Background(), s.Keys().UserOrders(u)).Err(); err != nil {
				t.Errorf("delete the index of user %d: %v", u, err)
			}
		}
	})
}

func usersUpTo(n int) []domain.UserID {
	out := make([]domain.UserID, n)
	for i := range out {
		out[i] = domain.UserID(i + 1)
	}
	return out
}

func TestSnapshotReadsTheReservationsAPageAtATime(t *testing.T) {
	ctx := context.Background()
	redisstore.SetAuditPage(t, 3)
	client, s := newStock(t, 0)
	v := voucher(1, 100, 3)
	warm(t, client, s, v)
	cleanupUsers(t, client, s, usersUpTo(20)...)
	var want []domain.Reservation
	for u := domain.UserID(1); u <= 20; u++ {
		g := grab(v.ID, u, 1+int(u)%3)
		check(t, s.Reserve(ctx, g))
		want = append(want, g)
	}
	slices.SortFunc(want, func(a, b domain.Reservation) int { return strings.Compare(string(a.OrderID), string(b.OrderID)) })

	snap := snapshot(t, newAudit(client, s), v.ID)
	if !sameReservations(snap.Reservations, want) {
		t.Fatalf("reservations = %v, want %v", orderIDs(snap.Reservations), orderIDs(want))
	}
	held := 0
	for _, r := range want {
		held += r.Quantity
	}
	if got, want := snap.Remaining, v.Stock-held; got != want || !snap.Consistent {
		t.Fatalf("remaining %d (consistent %v), want %d and consistent at rest", got, snap.Consistent, want)
	}
	if got, want := len(snap.Unacked), 20; got != want {
		t.Fatalf("unacked = %d, want %d", got, want)
	}
}

// TestRecountStaysExactWhileGrabsGoOn recounts, a few fields per page, while another
// goroutine grabs: each count that grabs overtook must be thrown away, or the remaining
// units would be set from a stale count (units sold twice, or never). The hash holds
// more than fits a listpack (512 fields here), which Redis returns in one HSCAN call whatever the
// page size.
func TestRecountStaysExactWhileGrabsGoOn(t *testing.T) {
	ctx := context.Background()
	redisstore.SetAuditPage(t, 5)
	client, s := newStock(t, 0)
	const before, grabs = 1000, 200
	v := voucher(1, 2000, 1)
	warm(t, client, s, v)
	cleanupUsers(t, client, s, usersUpTo(before+grabs)...)
	a := newAudit(client, s)
	var earlier []domain.Reservation
	for u := domain.UserID(1); u <= before; u++ {
		earlier = append(earlier, grab(v.ID, u, 1))
	}
	_, err := a.Restore(ctx, live(earlier...)...)
	check(t, err)
	_, err = a.Recount(ctx, v.ID)
	check(t, err)

	var wg sync.WaitGroup
	done := make(chan struct{})
	var grabErr error
	wg.Go(func() {
		defer close(done)
		for u := domain.UserID(before + 1); u <= before+grabs; u++ {
			for {
				err := s.Reserve(ctx, grab(v.ID, u, 1))
				if errors.Is(err, domain.ErrUnavailable) {
					continue // marked restoring by a recount: try again
				}
				if err != nil {
					grabErr = err
					return
				}
				break
			}
		}
	})
	recounts := 0
	for running := true; running; {
		select {
		case <-done:
			running = false
			continue
		default:
		}
		if _, err := a.Recount(ctx, v.ID); err != nil {
			t.Fatalf("recount %d: %v", recounts, err)
		}
		recounts++
		// Grabs keep remaining plus held units at the stock; a recount from a stale
		// count would not.
		var left *redis.StringCmd
		var held *redis.IntCmd
		_, err := client.TxPipelined(ctx, func(p redis.Pipeliner) error {
			left = p.HGet(ctx, s.Keys().Meta(v.ID), "remaining")
			held = p.HLen(ctx, s.Keys().Orders(v.ID))
			return nil
		})
		check(t, err)
		if n, _ := left.Int(); n+int(held.Val()) != v.Stock {
			t.Fatalf("after recount %d: remaining %d + held %d != stock %d", recounts, n, held.Val(), v.Stock)
		}
	}
	wg.Wait()
	check(t, grabErr)
	if got, want := remaining(t, s, v.ID), v.Stock-before-grabs; got != want {
		t.Fatalf("remaining = %d after %d recounts during %d grabs, want %d", got, recounts, grabs, want)
	}
	if restoring, err := client.HGet(ctx, s.Keys().Meta(v.ID), "restoring").Result(); !errors.Is(err, redis.Nil) {
		t.Fatalf("recount left the voucher restoring (%q, %v)", restoring, err)
	}
}

func TestRestoreRecordsABatch(t *testing.T) {
	ctx := context.Background()
	client, s := newStock(t, 0)
	a := newAudit(client, s)
	for id := domain.VoucherID(1); id <= 2; id++ {
		warm(t, client, s, voucher(id, 10000, 3))
	}
	cleanup(t, client, s, 3) // never warmed: nothing is restored into it
	check(t, s.Reserve(ctx, grab(1, 5, 1)))
	cleanupUsers(t, client, s, 5)

	// 2,500 orders of each voucher, interleaved, so each voucher's run of script calls
	// is cut in chunks and several go in one round trip.
	var rs []domain.Reservation
	for u := domain.UserID(1); u <= 2500; u++ {
		for id := domain.VoucherID(1); id <= 2; id++ {
			r := grab(id, u, 2)
			r.OrderID = domain.OrderID(fmt.Sprintf("db-%d-%d", id, u))
			rs = append(rs, r)
		}
	}
	// User 7 is named twice for voucher 2: the later order, of one unit, is the one
	// Redis names (restored in the order given); user 5's reservation of voucher 1
	// gives way to the database's order.
	again := grab(2, 7, 1)
	again.OrderID = "db-again"
	rs = append(rs, again, grab(3, 1, 1))
	flags, err := a.Restore(ctx, live(rs...)...)
	check(t, err)
	if got, want := len(flags), len(rs); got != want {
		t.Fatalf("%d flags for %d reservations", got, want)
	}
	for i, r := range rs {
		want := r.VoucherID != 3
		if flags[i] != want {
			t.Fatalf("restore of %s (user %d, voucher %d) = %v, want %v", r.OrderID, r.UserID, r.VoucherID, flags[i], want)
		}
	}
	for id, want := range map[domain.VoucherID]int64{1: 2500, 2: 2500} {
		if n, err := client.HLen(ctx, s.Keys().Orders(id)).Result(); err != nil || n != want {
			t.Fatalf("voucher %d holds %d reservations (%v), want %d", id, n, err, want)
		}
	}
	if n, err := client.Exists(ctx, s.Keys().Meta(3), s.Keys().Orders(3)).Result(); err != nil || n != 0 {
		t.Fatalf("restore created %d keys of a voucher without sale state (%v)", n, err)
	}
	left, err := a.Recount(ctx, 2)
	check(t, err)
	if got, want := left, 10000-2*2499-1; got != want {
		t.Fatalf("recount after the restore = %d, want %d", got, want)
	}
}

func TestHoldsLooksAtTheNamedOrdersOnly(t *testing.T) {
	ctx := context.Background()
	client, s := newStock(t, 0)
	v := voucher(1, 10, 3)
	warm(t, client, s, v)
	cleanupUsers(t, client, s, 1, 2)
	a, b := grab(v.ID, 1, 1), grab(v.ID, 2, 1)
	check(t, s.Reserve(ctx, a))
	check(t, s.Reserve(ctx, b))
	_, err := s.Release(ctx, order(b))
	check(t, err)
	holds, err := newAudit(client, s).Holds(ctx, v.ID, []domain.OrderID{a.OrderID, b.OrderID, "unknown"})
	check(t, err)
	if !holds[a.OrderID] || holds[b.OrderID] || holds["unknown"] || len(holds) != 3 {
		t.Fatalf("holds = %v, want only %s", holds, a.OrderID)
	}
}

// TestReservationsReadTheUserIndex: a user's reservations are found through the user's
// own index, released ones leave it, and the orders hash decides what is held.
func TestReservationsReadTheUserIndex(t *testing.T) {
	ctx := context.Background()
	client, s := newStock(t, 0)
	for id := domain.VoucherID(1); id <= 2; id++ {
		warm(t, client, s, voucher(id, 10, 3))
	}
	cleanupUsers(t, client, s, 7)
	res := redisstore.NewReservations(client, redisstore.Options{Prefix: s.Keys().Prefix})
	a, b := grab(1, 7, 1), grab(2, 7, 1)
	a.OrderID, b.OrderID = "o7-a", "o7-b"
	check(t, s.Reserve(ctx, a))
	check(t, s.Reserve(ctx, b))
	index := s.Keys().UserOrders(7)
	if got, err := client.HGetAll(ctx, index).Result(); err != nil || len(got) != 2 || got["o7-a"] != "1" || got["o7-b"] != "2" {
		t.Fatalf("index of user 7 = %v, %v", got, err)
	}
	if ttl, err := client.PTTL(ctx, index).Result(); err != nil || ttl <= 0 {
		t.Fatalf("index of user 7 expires in %v (%v), want a TTL", ttl, err)
	}

	_, err := s.Release(ctx, order(a))
	check(t, err)
	got, err := res.ForUser(ctx, 7)
	check(t, err)
	if len(got) != 1 || !sameReservation(got[0], b) {
		t.Fatalf("ForUser after a release = %+v, want only %+v", got, b)
	}
	// A refused grab: on one server the script indexes only what it reserves; on a
	// cluster the index is written before the script, so the refused grab has an entry
	// too, which lists nothing.
	refused := grab(2, 7, 1)
	refused.OrderID = "o7-again"
	var ap *domain.AlreadyPurchasedError
	if err := s.Reserve(ctx, refused); !errors.As(err, &ap) {
		t.Fatalf("a second grab of voucher 2 by user 7 = %v, want already purchased", err)
	}
	entry, err := client.HGet(ctx, index, "o7-again").Result()
	if _, cluster := client.(*redis.ClusterClient); cluster && (err != nil || entry != "2") {
		t.Fatalf("index entry of the refused grab = %q, %v; want it written before the script", entry, err)
	} else if !cluster && !errors.Is(err, redis.Nil) {
		t.Fatalf("index entry of the refused grab = %q, %v; want none", entry, err)
	}
	if got, err := res.ForUser(ctx, 7); err != nil || len(got) != 1 || !sameReservation(got[0], b) {
		t.Fatalf("ForUser with a refused grab's entry = %+v, %v; want only %+v", got, err, b)
	}

	// Its owner finds it through the index, an admin (user 0) among the vouchers on
	// sale; another user never.
	for _, user := range []domain.UserID{7, 0} {
		found, err := res.Find(ctx, user, b.OrderID)
		check(t, err)
		if !sameReservation(found, b) {
			t.Fatalf("Find(%d) = %+v, want %+v", user, found, b)
		}
	}
	if _, err := res.Find(ctx, 8, b.OrderID); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("Find by another user = %v, want %v", err, domain.ErrNotFound)
	}
	// An index entry naming another user's order (never written so, but the record
	// decides) finds nothing.
	check(t, client.HSet(ctx, s.Keys().UserOrders(8), string(b.OrderID), "2").Err())
	cleanupUsers(t, client, s, 8)
	if _, err := res.Find(ctx, 8, b.OrderID); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("Find through another user's index = %v, want %v", err, domain.ErrNotFound)
	}
	if got, err := res.ForUser(ctx, 8); err != nil || len(got) != 0 {
		t.Fatalf("ForUser through another user's index = %+v, %v", got, err)
	}
}
