package watchstock_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/adapters/redisstore"
	"github.com/seckill/seckill/adapters/strategies/watchstock"
	"github.com/seckill/seckill/domain"
)

// warmDrop loads campaign id of n vouchers of stock units each, under cap (0: none)
// and limit units a user across them, through s (its vouchers first, then its terms,
// as CreateVoucher does), and deletes its keys when the test ends. It returns the
// vouchers' ids.
func warmDrop(t *testing.T, client redis.UniversalClient, s *redisstore.Stock, id domain.CampaignID, n, stock, capUnits, limit int) []domain.VoucherID {
	t.Helper()
	c := domain.Campaign{ID: id, Title: "drop", BeginsAt: now.Add(-time.Hour), EndsAt: now.Add(time.Hour),
		PerUserLimit: limit, Variants: n, Admission: domain.AdmissionFirstCome, Challenge: domain.ChallengeNone}
	if capUnits > 0 {
		c.Cap = &capUnits
	}
	k := s.Keys()
	t.Cleanup(func() {
		if err := client.Unlink(context.Background(), k.Campaign(id), k.CampaignHolders(id)).Err(); err != nil {
			t.Errorf("delete the campaign's keys: %v", err)
		}
	})
	ids := make([]domain.VoucherID, n)
	for j := range ids {
		v := voucher(id.Variant(j+1), stock, limit)
		v.CampaignID = id
		warm(t, client, s, v)
		ids[j] = v.ID
	}
	check(t, s.WarmCampaign(context.Background(), c))
	return ids
}

// TestWatchReserveJudgesACampaignAsTheScript: the same grabs of a campaign's vouchers,
// through the WATCH strategy and through the reserve script, each on a campaign of
// its own, get the same answers — the cap, the limit across vouchers naming the
// orders held, a voucher sold out — and leave the same units.
func TestWatchReserveJudgesACampaignAsTheScript(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	client, lua := newStock(t, time.Hour)
	_, w := newWatchStock(t, redisstore.Options{Grace: time.Hour})
	luaIDs := warmDrop(t, client, lua, 3, 3, 2, 5, 2)
	watchIDs := warmDrop(t, client, w.Stock, 3, 3, 2, 5, 2)

	// (user, voucher's number): user 1 takes two vouchers then is at the limit; the
	// first voucher sells out; the cap of 5 fills with units of the third left.
	steps := [][2]int{{1, 1}, {1, 2}, {1, 3}, {2, 1}, {3, 1}, {3, 2}, {4, 3}, {5, 3}, {2, 2}}
	for i, st := range steps {
		user := domain.UserID(st[0])
		lr, wr := grab(luaIDs[st[1]-1], user, 1), grab(watchIDs[st[1]-1], user, 1)
		lr.OrderID = domain.OrderID(fmt.Sprintf("o%d-%d", st[0], st[1]))
		wr.OrderID = lr.OrderID
		luaErr, watchErr := lua.Reserve(ctx, lr), w.Reserve(ctx, wr)
		if got, want := fmt.Sprint(watchErr), fmt.Sprint(luaErr); got != want {
			t.Fatalf("step %d (user %d, voucher %d): watch answered %q, the script %q", i, st[0], st[1], got, want)
		}
	}
	var held *domain.AlreadyPurchasedError
	if err := w.Reserve(ctx, grab(watchIDs[2], 1, 1)); !errors.As(err, &held) || len(held.Orders) != 2 {
		t.Fatalf("user 1's third voucher: %v, want already purchased naming its two orders", err)
	}
	if err := w.Reserve(ctx, grab(watchIDs[2], 9, 1)); !errors.Is(err, domain.ErrCampaignSoldOut) {
		t.Fatalf("a grab past the cap: %v, want campaign sold out", err)
	}
	for j := range watchIDs {
		if got, want := remaining(t, w, watchIDs[j]), remaining(t, lua, luaIDs[j]); got != want {
			t.Fatalf("voucher %d: watch left %d, the script %d", j+1, got, want)
		}
	}
}

// TestWatchCampaignUnderConcurrentGrabsIsExact: 300 users grab random vouchers of a
// campaign of three (20 units each, a cap of 40, 2 units a user) at once through the
// WATCH strategy: exactly the cap is taken, no voucher past its stock, no user past
// the limit across the campaign.
func TestWatchCampaignUnderConcurrentGrabsIsExact(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	client, base := newStock(t, time.Hour)
	w := watchstock.New(base, 1000)
	ids := warmDrop(t, client, base, 4, 3, 20, 40, 2)
	var mu sync.Mutex
	units := map[domain.UserID]int{}
	var wg sync.WaitGroup
	for u := domain.UserID(1); u <= 300; u++ {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(u), 7))
			for range 3 {
				r := grab(ids[rng.IntN(len(ids))], u, 1)
				r.OrderID = domain.OrderID(fmt.Sprintf("o%d-%d", u, r.VoucherID))
				err := w.Reserve(ctx, r)
				var held *domain.AlreadyPurchasedError
				switch {
				case err == nil:
					mu.Lock()
					units[u]++
					mu.Unlock()
				case errors.As(err, &held), errors.Is(err, domain.ErrSoldOut), errors.Is(err, domain.ErrCampaignSoldOut):
				default:
					t.Errorf("user %d: %v", u, err)
				}
			}
		})
	}
	wg.Wait()
	taken := 0
	for _, id := range ids {
		left := remaining(t, w, id)
		if left < 0 {
			t.Fatalf("voucher %d oversold: %d left", id, left)
		}
		taken += 20 - left
	}
	sum := 0
	for u, n := range units {
		if n > 2 {
			t.Fatalf("user %d took %d units, over the limit of 2", u, n)
		}
		sum += n
	}
	if taken != 40 || sum != 40 {
		t.Fatalf("taken %d by the states, %d by the answers; want the cap, 40", taken, sum)
	}
}

// TestWatchReserveTakesACampaignsPassOnce: the pass of a campaign's waiting room
// (outstanding under the room's id) admits one grab of any of its vouchers, and leaves
// the room's passes with it.
func TestWatchReserveTakesACampaignsPassOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	client, w := newWatchStock(t, redisstore.Options{Grace: time.Hour})
	const id domain.CampaignID = 5
	c := domain.Campaign{ID: id, Title: "drop", BeginsAt: now.Add(-time.Hour), EndsAt: now.Add(time.Hour),
		PerUserLimit: 2, Variants: 2, Admission: domain.AdmissionWaitingRoom, Challenge: domain.ChallengeNone}
	k := w.Keys()
	t.Cleanup(func() {
		if err := client.Unlink(context.Background(), k.Campaign(id), k.CampaignHolders(id), k.Passes(id.Room())).Err(); err != nil {
			t.Errorf("delete the campaign's keys: %v", err)
		}
	})
	ids := []domain.VoucherID{id.Variant(1), id.Variant(2)}
	for _, vid := range ids {
		v := voucher(vid, 5, 2)
		v.CampaignID, v.Admission = id, domain.AdmissionWaitingRoom
		warm(t, client, w.Stock, v)
	}
	check(t, w.WarmCampaign(ctx, c))
	pass := now.Add(time.Minute)
	check(t, client.ZAdd(ctx, k.Passes(id.Room()), redis.Z{Score: float64(pass.UnixMilli()), Member: "1"}).Err())
	first := grab(ids[0], 1, 1)
	first.Pass = pass
	check(t, w.Reserve(ctx, first))
	again := grab(ids[1], 1, 1)
	again.OrderID, again.Pass = "o1-again", pass
	if err := w.Reserve(ctx, again); !errors.Is(err, domain.ErrQueueRequired) {
		t.Fatalf("the pass used again on the other voucher: %v, want %v", err, domain.ErrQueueRequired)
	}
	if n, err := client.ZCard(ctx, k.Passes(id.Room())).Result(); err != nil || n != 0 {
		t.Fatalf("the room's passes hold %d, %v; want the pass used", n, err)
	}
}
