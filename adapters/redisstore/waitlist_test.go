package redisstore_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/adapters/redisstore"
	"github.com/seckill/seckill/adapters/strategies/watchstock"
	"github.com/seckill/seckill/domain"
	"github.com/seckill/seckill/ports"
)

// liveVoucher returns a voucher on sale by the Redis server's own clock (which judges
// joins and hand-offs): begun an hour ago, ending at now, far ahead.
func liveVoucher(id domain.VoucherID, stock, limit int) domain.Voucher {
	v := voucher(id, stock, limit)
	v.BeginsAt = time.Now().Add(-time.Hour)
	v.EndsAt = now
	return v
}

// take reserves one unit of id for each of users, judged by the sale's clock, under
// order ids o<user>.
func take(t testing.TB, s ports.Stock, id domain.VoucherID, users ...domain.UserID) []domain.Reservation {
	t.Helper()
	rs := make([]domain.Reservation, len(users))
	for i, u := range users {
		rs[i] = grab(id, u, 1)
		rs[i].At = time.Time{}
		check(t, s.Reserve(context.Background(), rs[i]))
	}
	return rs
}

// join puts each of users on id's waitlist under order id w<user>, checking the
// position each is given follows the last.
func join(t testing.TB, w *redisstore.Waitlist, id domain.VoucherID, users ...domain.UserID) {
	t.Helper()
	for _, u := range users {
		before, err := w.Length(context.Background(), id)
		check(t, err)
		pos, err := w.Join(context.Background(), id, u, domain.OrderID("w"+u.String()))
		check(t, err)
		if pos != before+1 {
			t.Fatalf("user %d joined at %d, want %d", u, pos, before+1)
		}
	}
}

// entries returns voucher id's stream entries as "order:user:qty", in order.
func entries(t testing.TB, client redis.UniversalClient, s *redisstore.Stock, id domain.VoucherID) []string {
	t.Helper()
	msgs, err := client.XRange(context.Background(), s.Keys().Stream(id), "-", "+").Result()
	check(t, err)
	out := make([]string, len(msgs))
	for i, m := range msgs {
		r, err := redisstore.DecodeEntry(id, m.Values)
		check(t, err)
		out[i] = fmt.Sprintf("%s:%d:%d", r.OrderID, r.UserID, r.Quantity)
	}
	return out
}

func TestWaitlistJoinPositionLeave(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	client, s := newStock(t, 0)
	w := redisstore.NewWaitlist(s)
	v := liveVoucher(1, 2, 1)
	warm(t, client, s, v)
	if _, err := w.Join(ctx, v.ID, 9, "w9"); !errors.Is(err, domain.ErrNotSoldOut) {
		t.Fatalf("join while units are on sale: %v, want not sold out", err)
	}
	take(t, s, v.ID, 1, 2)
	var held *domain.AlreadyPurchasedError
	if _, err := w.Join(ctx, v.ID, 1, "w1"); !errors.As(err, &held) || held.OrderID != "o1" {
		t.Fatalf("join of a holder: %v, want already purchased o1", err)
	}
	join(t, w, v.ID, 3, 4)
	// Again: the same place, and the first order id stays.
	if pos, err := w.Join(ctx, v.ID, 3, "w3-again"); err != nil || pos != 1 {
		t.Fatalf("join again = %d, %v; want 1", pos, err)
	}
	if got, _ := client.HGet(ctx, s.Keys().Waiting(v.ID), "3").Result(); got != "w3" {
		t.Fatalf("order id of user 3 = %q, want w3", got)
	}
	if pos, err := w.Position(ctx, v.ID, 4); err != nil || pos != 2 {
		t.Fatalf("position of user 4 = %d, %v; want 2", pos, err)
	}
	if _, err := w.Position(ctx, v.ID, 5); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("position of a user not on it: %v, want not found", err)
	}
	check(t, w.Leave(ctx, v.ID, 3))
	check(t, w.Leave(ctx, v.ID, 3))
	if pos, err := w.Position(ctx, v.ID, 4); err != nil || pos != 1 {
		t.Fatalf("position of user 4 after 3 left = %d, %v; want 1", pos, err)
	}
	join(t, w, v.ID, 3)
	if _, err := w.Join(ctx, 99, 3, "x"); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("join of a voucher without sale state: %v, want not found", err)
	}
	ended := liveVoucher(2, 1, 1)
	ended.EndsAt = time.Now().Add(-time.Minute)
	ended.BeginsAt = ended.EndsAt.Add(-time.Hour)
	warm(t, client, s, ended)
	if _, err := w.Join(ctx, ended.ID, 3, "x"); !errors.Is(err, domain.ErrEnded) {
		t.Fatalf("join of an ended sale: %v, want ended", err)
	}
}

// TestReleaseHandsOffToTheWaitlist checks a release: its unit goes to the first on the
// waitlist who may still buy (one holding an order already is passed over and leaves),
// as a reservation under the order id it joined with, appended to the stream; only a
// unit nobody may take goes back on sale, and only then is a restock published. A
// release applied again hands nothing off.
func TestReleaseHandsOffToTheWaitlist(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	client, s := newStock(t, 0)
	w := redisstore.NewWaitlist(s)
	v := liveVoucher(3, 3, 2)
	warm(t, client, s, v)
	channel := s.Keys().Restock()
	if _, ok := client.(*redis.ClusterClient); ok {
		channel = s.Keys().VoucherRestock(v.ID)
	}
	published := listen(t, client, channel)
	big := grab(v.ID, 1, 2)
	big.At = time.Time{}
	check(t, s.Reserve(ctx, big))
	take(t, s, v.ID, 2)
	join(t, w, v.ID, 3, 4, 5)
	// User 3 holds an order meanwhile (as if it had grabbed a unit on sale).
	check(t, client.HSet(ctx, s.Keys().Buyers(v.ID), "3", "o3").Err())

	released, err := s.Release(ctx, order(big))
	check(t, err)
	if !released {
		t.Fatal("release released nothing")
	}
	if n := remaining(t, s, v.ID); n != 0 {
		t.Fatalf("remaining after the hand-off = %d, want 0", n)
	}
	buyers, err := client.HGetAll(ctx, s.Keys().Buyers(v.ID)).Result()
	check(t, err)
	if want := map[string]string{"2": "o2", "3": "o3", "4": "w4", "5": "w5"}; !maps.Equal(buyers, want) {
		t.Fatalf("buyers = %v, want %v", buyers, want)
	}
	got := entries(t, client, s, v.ID)
	if want := []string{"o1:1:2", "o2:2:1", "w4:4:1", "w5:5:1"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("stream = %v, want %v", got, want)
	}
	if n, _ := w.Length(ctx, v.ID); n != 0 {
		t.Fatalf("waitlist length = %d, want 0", n)
	}
	if s.HandOffs() != 2 {
		t.Fatalf("hand-offs = %d, want 2", s.HandOffs())
	}
	// Applied again, nothing changes.
	released, err = s.Release(ctx, order(big))
	check(t, err)
	if released || len(entries(t, client, s, v.ID)) != 4 || s.HandOffs() != 2 {
		t.Fatal("a second release of the order changed something")
	}
	if p := published(); len(p) != 0 {
		t.Fatalf("published %v; nothing went back on sale", p)
	}
	// The handed-off reservations are the users' like any grab's.
	found, err := redisstore.NewReservations(client, redisstore.Options{Prefix: s.Keys().Prefix}).Find(ctx, 4, "w4")
	check(t, err)
	if found.UserID != 4 || found.Quantity != 1 {
		t.Fatalf("reservation w4 = %+v", found)
	}

	// An empty waitlist: the unit goes back on sale, announced.
	released, err = s.Release(ctx, order(domain.Reservation{OrderID: "w5", VoucherID: v.ID, UserID: 5, Quantity: 1}))
	check(t, err)
	if !released || remaining(t, s, v.ID) != 1 {
		t.Fatal("a release with nobody waiting did not put the unit on sale")
	}
	if p := published(); len(p) != 1 {
		t.Fatalf("published %v, want one restock", p)
	}
}

// TestEditHandsAddedUnitsToTheWaitlist checks that units an edit adds go to the
// waitlist first, and only the rest on sale; the same edit again hands nothing off.
func TestEditHandsAddedUnitsToTheWaitlist(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	client, s := newStock(t, 0)
	w := redisstore.NewWaitlist(s)
	v := liveVoucher(4, 1, 1)
	warm(t, client, s, v)
	take(t, s, v.ID, 1)
	join(t, w, v.ID, 2, 3)
	v.Stock, v.Version = 4, v.Version+1
	changed, err := s.Edit(ctx, v, ports.EditHeld)
	check(t, err)
	if !changed || remaining(t, s, v.ID) != 1 {
		t.Fatalf("edit changed %v, remaining %d; want true, 1", changed, remaining(t, s, v.ID))
	}
	got := entries(t, client, s, v.ID)
	if want := []string{"o1:1:1", "w2:2:1", "w3:3:1"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("stream = %v, want %v", got, want)
	}
	changed, err = s.Edit(ctx, v, ports.EditHeld)
	check(t, err)
	if changed || len(entries(t, client, s, v.ID)) != 3 {
		t.Fatal("the same edit again changed something")
	}
}

// TestWaitlistDrop checks that a dropped (denied) user leaves every waitlist it joined.
func TestWaitlistDrop(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	client, s := newStock(t, 0)
	w := redisstore.NewWaitlist(s)
	for _, id := range []domain.VoucherID{5, 6} {
		v := liveVoucher(id, 1, 1)
		warm(t, client, s, v)
		take(t, s, id, 1)
		join(t, w, id, 2, 3)
	}
	t.Cleanup(func() { client.Del(context.Background(), s.Keys().UserWaits(2), s.Keys().UserOrders(2)) })
	check(t, w.Drop(ctx, 2))
	for _, id := range []domain.VoucherID{5, 6} {
		if _, err := w.Position(ctx, id, 2); !errors.Is(err, domain.ErrNotFound) {
			t.Fatalf("dropped user on voucher %d's waitlist: %v", id, err)
		}
		if pos, err := w.Position(ctx, id, 3); err != nil || pos != 1 {
			t.Fatalf("user 3 on voucher %d at %d, %v; want 1", id, pos, err)
		}
	}
}

// TestWaitlistWinsEveryReturnedUnit releases a sold-out voucher's orders one by one
// while grabs of fresh users race for the same units, through the reserve script and
// through the WATCH strategy (whose releases are the same script): every unit goes to
// the waitlist, in its order; no grab takes one, nothing is oversold.
func TestWaitlistWinsEveryReturnedUnit(t *testing.T) {
	t.Parallel()
	for name, watch := range map[string]bool{"lua": false, "watch": true} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			waitlistWinsEveryReturnedUnit(t, watch)
		})
	}
}

func waitlistWinsEveryReturnedUnit(t *testing.T, watch bool) {
	ctx := context.Background()
	client, s := newStock(t, 0)
	var grabs ports.Stock = s
	if watch {
		grabs = watchstock.New(s, watchstock.DefaultAttempts)
	}
	w := redisstore.NewWaitlist(s)
	const units = 20
	v := liveVoucher(7, units, 1)
	warm(t, client, s, v)
	holders := make([]domain.UserID, units)
	for i := range holders {
		holders[i] = domain.UserID(1 + i)
	}
	rs := take(t, s, v.ID, holders...)
	waiting := make([]domain.UserID, units)
	for i := range waiting {
		waiting[i] = domain.UserID(1000 + i)
	}
	join(t, w, v.ID, waiting...)

	var stop atomic.Bool
	var grabbed atomic.Int64
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := 0; !stop.Load(); i++ {
				r := domain.Reservation{OrderID: domain.OrderID(fmt.Sprintf("g%d-%d", g, i)), VoucherID: v.ID,
					UserID: domain.UserID(100000 + g*100000 + i), Quantity: 1}
				err := grabs.Reserve(ctx, r)
				if err == nil {
					grabbed.Add(1)
				} else if !errors.Is(err, domain.ErrSoldOut) && !(watch && errors.Is(err, domain.ErrUnavailable)) {
					t.Errorf("grab: %v", err)
					return
				}
			}
		})
	}
	for _, r := range rs {
		released, err := s.Release(ctx, order(r))
		check(t, err)
		if !released {
			t.Fatalf("release of %s released nothing", r.OrderID)
		}
	}
	stop.Store(true)
	wg.Wait()
	if n := grabbed.Load(); n != 0 {
		t.Fatalf("%d grabs took a returned unit", n)
	}
	if n := remaining(t, s, v.ID); n != 0 {
		t.Fatalf("remaining = %d, want 0", n)
	}
	buyers, err := client.HGetAll(ctx, s.Keys().Buyers(v.ID)).Result()
	check(t, err)
	if len(buyers) != units {
		t.Fatalf("%d buyers, want %d", len(buyers), units)
	}
	got := entries(t, client, s, v.ID)[units:]
	for i, u := range waiting {
		if want := fmt.Sprintf("w%d:%d:1", u, u); got[i] != want {
			t.Fatalf("hand-off %d = %s, want %s", i, got[i], want)
		}
	}
}
