package redisstore_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/adapters/redisstore"
	"github.com/seckill/seckill/adapters/testenv"
	"github.com/seckill/seckill/domain"
	"github.com/seckill/seckill/ports"
)

// drop returns a campaign of n vouchers, each of stock units and the given per-user
// limit, under cap (0: none) and a per-user limit across them, and its vouchers.
func drop(id domain.CampaignID, n, stock, capUnits, limit int) (domain.Campaign, []domain.Voucher) {
	c := domain.Campaign{ID: id, Title: "drop", BeginsAt: now.Add(-time.Hour), EndsAt: now.Add(time.Hour),
		PerUserLimit: limit, Variants: n, Admission: domain.AdmissionFirstCome, Challenge: domain.ChallengeNone}
	if capUnits > 0 {
		c.Cap = &capUnits
	}
	vs := make([]domain.Voucher, n)
	for k := range vs {
		vs[k] = voucher(id.Variant(k+1), stock, limit)
		vs[k].CampaignID = id
	}
	return c, vs
}

// warmDrop loads the campaign's vouchers and then its terms, as CreateVoucher does,
// and deletes the test's keys when it ends.
func warmDrop(t testing.TB, client redis.UniversalClient, s *redisstore.Stock, c domain.Campaign, vs []domain.Voucher) {
	t.Helper()
	ctx := context.Background()
	prefix := s.Keys().Prefix + ":"
	t.Cleanup(func() {
		if err := testenv.DeleteKeys(context.Background(), client, prefix+"*"); err != nil {
			t.Errorf("delete the test's keys: %v", err)
		}
	})
	for _, v := range vs {
		_, err := s.Warm(ctx, v)
		check(t, err)
	}
	check(t, s.WarmCampaign(ctx, c))
}

// takeVariant returns user's reservation of qty units of v at now, under an order id of its
// own per voucher.
func takeVariant(v domain.VoucherID, user domain.UserID, qty int) domain.Reservation {
	_, k := v.Campaign()
	r := grab(v, user, qty)
	r.OrderID = domain.OrderID(fmt.Sprintf("o%d-%d", user, k))
	return r
}

func TestCampaignGrabIsJudgedAgainstTheWholeCampaign(t *testing.T) {
	client, s := newStock(t, time.Hour)
	ctx := context.Background()
	c, vs := drop(7, 3, 4, 6, 2)
	warmDrop(t, client, s, c, vs)
	v1, v2, v3 := vs[0].ID, vs[1].ID, vs[2].ID

	check(t, s.Reserve(ctx, takeVariant(v1, 1, 1)))
	check(t, s.Reserve(ctx, takeVariant(v2, 1, 1)))
	// The user holds the campaign's limit across two vouchers: a third is refused,
	// naming both orders.
	var held *domain.AlreadyPurchasedError
	if err := s.Reserve(ctx, takeVariant(v3, 1, 1)); !errors.As(err, &held) ||
		!slices.Equal(held.Orders, []domain.OrderID{"o1-1", "o1-2"}) || held.OrderID != "o1-1" {
		t.Fatalf("third voucher of a user at the limit = %v (%+v), want already purchased naming o1-1 and o1-2", err, held)
	}
	// A second order of one voucher is refused as for any voucher.
	if err := s.Reserve(ctx, takeVariant(v1, 1, 1)); !errors.As(err, &held) || held.OrderID != "o1-1" || held.Orders != nil {
		t.Fatalf("second grab of one voucher = %v, want already purchased naming o1-1 alone", err)
	}
	// One unit left under the limit, two asked: over the limit.
	check(t, s.Reserve(ctx, takeVariant(v1, 2, 1)))
	if err := s.Reserve(ctx, takeVariant(v2, 2, 2)); !errors.As(err, &held) || held.OrderID != "o2-1" {
		t.Fatalf("two more units of a user holding one of a limit of two = %v, want already purchased", err)
	}
	// Fill the cap (6): three taken, three more.
	for u := domain.UserID(3); u <= 5; u++ {
		check(t, s.Reserve(ctx, takeVariant(v3, u, 1)))
	}
	if err := s.Reserve(ctx, takeVariant(v2, 9, 1)); !errors.Is(err, domain.ErrCampaignSoldOut) {
		t.Fatalf("grab of a voucher with units, the cap reached = %v, want campaign sold out", err)
	}
	// A unit returned goes back under the cap.
	released, err := s.Release(ctx, domain.Order{ID: "o1-1", VoucherID: v1, UserID: 1, Quantity: 1})
	check(t, err)
	if !released {
		t.Fatal("release of a held order released nothing")
	}
	check(t, s.Reserve(ctx, takeVariant(v2, 9, 1)))
	// A voucher out of units answers sold out, whatever the cap has left.
	hundred := 100
	c.Cap, c.Version = &hundred, 1
	check(t, s.EditCampaign(ctx, c))
	check(t, s.Reserve(ctx, takeVariant(v3, 10, 1)))
	if err := s.Reserve(ctx, takeVariant(v3, 11, 1)); !errors.Is(err, domain.ErrSoldOut) {
		t.Fatalf("grab of a voucher without units = %v, want sold out", err)
	}
}

func TestCampaignGrabBeforeItsTermsAreLoaded(t *testing.T) {
	client, s := newStock(t, time.Hour)
	ctx := context.Background()
	c, vs := drop(8, 2, 5, 0, 1)
	warmDrop(t, client, s, c, vs[:1])
	// The second voucher is not loaded, and the campaign counts two: no grab of the
	// campaign is judged without every voucher's state.
	if err := s.Reserve(ctx, takeVariant(vs[0].ID, 1, 1)); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("grab with a voucher of the campaign missing = %v, want not found (rebuild)", err)
	}
	_, err := s.Warm(ctx, vs[1])
	check(t, err)
	check(t, s.Reserve(ctx, takeVariant(vs[0].ID, 1, 1)))
	// Campaign terms gone (Redis forgot them): not found, never judged as a plain voucher.
	check(t, client.Del(ctx, s.Keys().Campaign(c.ID)).Err())
	if err := s.Reserve(ctx, takeVariant(vs[1].ID, 1, 1)); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("grab without the campaign's terms = %v, want not found", err)
	}
	check(t, s.WarmCampaign(ctx, c))
	var held *domain.AlreadyPurchasedError
	if err := s.Reserve(ctx, takeVariant(vs[1].ID, 1, 1)); !errors.As(err, &held) {
		t.Fatalf("second voucher of a user at a limit of one = %v, want already purchased", err)
	}
}

func TestCampaignGrabWaitsWhileAVoucherOfItIsRestoring(t *testing.T) {
	client, s := newStock(t, time.Hour)
	ctx := context.Background()
	c, vs := drop(9, 2, 5, 0, 1)
	warmDrop(t, client, s, c, vs)
	audit := redisstore.NewAudit(client, redisstore.Options{Prefix: s.Keys().Prefix})
	check(t, audit.Restoring(ctx, vs[1].ID))
	if err := s.Reserve(ctx, takeVariant(vs[0].ID, 1, 1)); !errors.Is(err, domain.ErrUnavailable) {
		t.Fatalf("grab while another voucher of the campaign is restoring = %v, want unavailable", err)
	}
	check(t, audit.Restored(ctx, vs[1].ID))
	check(t, s.Reserve(ctx, takeVariant(vs[0].ID, 1, 1)))
}

func TestCampaignLearnsOfANewVoucher(t *testing.T) {
	client, s := newStock(t, time.Hour)
	other := redisstore.NewStock(client, redisstore.Options{Prefix: s.Keys().Prefix, Grace: time.Hour})
	ctx := context.Background()
	c, vs := drop(10, 3, 5, 0, 2)
	c.Variants = 2
	warmDrop(t, client, s, c, vs[:2])
	check(t, s.Reserve(ctx, takeVariant(vs[0].ID, 1, 1)))
	// Another instance adds the third voucher; this one still counts two.
	_, err := other.Warm(ctx, vs[2])
	check(t, err)
	c.Variants = 3
	check(t, other.WarmCampaign(ctx, c))
	check(t, s.Reserve(ctx, takeVariant(vs[2].ID, 1, 1)))
	var held *domain.AlreadyPurchasedError
	if err := s.Reserve(ctx, takeVariant(vs[1].ID, 1, 1)); !errors.As(err, &held) || len(held.Orders) != 2 {
		t.Fatalf("grab past the limit across a voucher added meanwhile = %v, want already purchased naming two orders", err)
	}
}

func TestEditCampaignRefusesACapBelowTheUnitsTaken(t *testing.T) {
	client, s := newStock(t, time.Hour)
	ctx := context.Background()
	c, vs := drop(11, 2, 5, 10, 3)
	warmDrop(t, client, s, c, vs)
	check(t, s.Reserve(ctx, takeVariant(vs[0].ID, 1, 3)))
	check(t, s.Reserve(ctx, takeVariant(vs[1].ID, 2, 2)))
	four := 4
	c.Cap, c.Version = &four, 1
	if err := s.EditCampaign(ctx, c); !errors.Is(err, domain.ErrNotEnoughUnits) {
		t.Fatalf("cap 4 under 5 units taken = %v, want not enough units", err)
	}
	five := 5
	c.Cap = &five
	check(t, s.EditCampaign(ctx, c))
	if err := s.Reserve(ctx, takeVariant(vs[1].ID, 3, 1)); !errors.Is(err, domain.ErrCampaignSoldOut) {
		t.Fatalf("grab at a cap lowered to the units taken = %v, want campaign sold out", err)
	}
	// An older version warmed late changes nothing.
	ten := 10
	c.Cap, c.Version = &ten, 0
	check(t, s.WarmCampaign(ctx, c))
	if err := s.Reserve(ctx, takeVariant(vs[1].ID, 3, 1)); !errors.Is(err, domain.ErrCampaignSoldOut) {
		t.Fatalf("grab after an older version's warm-up = %v, want campaign sold out still", err)
	}
}

// TestCampaignUnderConcurrentGrabsIsExact runs thousands of users grabbing random
// vouchers of one campaign through three stocks at once (three instances), some twice,
// with releases among them, and checks what Redis holds at the end: no voucher over its
// stock, the cap never passed, no user over the limit, and every grab answered
// reserved held.
func TestCampaignUnderConcurrentGrabsIsExact(t *testing.T) {
	client, s := newStock(t, time.Hour)
	prefix := s.Keys().Prefix
	instances := []*redisstore.Stock{s,
		redisstore.NewStock(client, redisstore.Options{Prefix: prefix, Grace: time.Hour}),
		redisstore.NewStock(client, redisstore.Options{Prefix: prefix, Grace: time.Hour})}
	ctx := context.Background()
	const variants, stock, capUnits, limit, users = 20, 40, 500, 2, 3000
	c, vs := drop(12, variants, stock, capUnits, limit)
	for k := range vs {
		vs[k].PerUserLimit = 1
	}
	warmDrop(t, client, s, c, vs)

	var (
		mu       sync.Mutex
		reserved = map[domain.OrderID]domain.Reservation{}
		released = map[domain.OrderID]bool{}
		wg       sync.WaitGroup
	)
	for u := 1; u <= users; u++ {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(u), 37))
			st := instances[u%len(instances)]
			for i := range 3 {
				r := takeVariant(vs[rng.IntN(variants)].ID, domain.UserID(u), 1)
				// Each grab its own order id, as the service mints one per grab: a user
				// may pick the same voucher twice, after releasing the first order.
				r.OrderID = domain.OrderID(fmt.Sprintf("%s-%d", r.OrderID, i))
				err := st.Reserve(ctx, r)
				switch {
				case err == nil:
					mu.Lock()
					reserved[r.OrderID] = r
					mu.Unlock()
					if rng.IntN(10) == 0 {
						ok, err := st.Release(ctx, domain.Order{ID: r.OrderID, VoucherID: r.VoucherID, UserID: r.UserID, Quantity: 1})
						if err != nil || !ok {
							t.Errorf("release %s = %v, %v", r.OrderID, ok, err)
						}
						mu.Lock()
						released[r.OrderID] = true
						mu.Unlock()
					}
				case errors.Is(err, domain.ErrSoldOut), errors.Is(err, domain.ErrCampaignSoldOut),
					errors.Is(err, domain.ErrAlreadyPurchased):
				default:
					t.Errorf("grab %+v: %v", r, err)
				}
			}
		})
	}
	wg.Wait()

	perUser := map[string]int{}
	total := 0
	for _, v := range vs {
		k := s.Keys()
		orders, err := client.HGetAll(ctx, k.Orders(v.ID)).Result()
		check(t, err)
		left, err := client.HGet(ctx, k.Meta(v.ID), "remaining").Int()
		check(t, err)
		units := 0
		for id, record := range orders {
			r, ok := reserved[domain.OrderID(id)]
			if !ok || released[r.OrderID] {
				t.Errorf("voucher %s holds order %s, not one answered reserved and kept", v.ID, id)
			}
			qty, _ := strconv.Atoi(strings.Split(record, ":")[1])
			units += qty
			perUser[strings.Split(record, ":")[0]] += qty
		}
		if units > v.Stock || units+left != v.Stock {
			t.Errorf("voucher %s: %d units held, %d left, stock %d", v.ID, units, left, v.Stock)
		}
		total += units
	}
	kept := 0
	for id := range reserved {
		if !released[id] {
			kept++
		}
	}
	if total != kept {
		t.Errorf("Redis holds %d units, %d grabs answered reserved and not released", total, kept)
	}
	if total > capUnits {
		t.Errorf("%d units held under a cap of %d", total, capUnits)
	}
	if total < capUnits {
		// 3,000 users asking for up to 6,000 units of 500: the cap is reached.
		t.Errorf("only %d units held under a cap of %d, with demand far above it", total, capUnits)
	}
	// The units taken the campaign keeps (campaign_taken in prelude.lua), moved by
	// every grab and release, are the sum of its vouchers' taken.
	if taken, err := client.HGet(ctx, s.Keys().Campaign(c.ID), "taken").Int(); err != nil || taken != total {
		t.Errorf("the campaign keeps %d units taken (%v), its vouchers hold %d", taken, err, total)
	}
	for u, n := range perUser {
		if n > limit {
			t.Errorf("user %s holds %d units of the campaign, limit %d", u, n, limit)
		}
	}
}

// TestCampaignKeepsItsUnitsTakenExact: the units taken a campaign keeps for its grabs
// follow every change of its vouchers' units — a grab, a release, an edit of a
// voucher's stock — and are deleted, in the same step, by a change that rebuilds a
// voucher's state (restoring, a recount, a voucher's state loaded again) or the
// vouchers counted (a campaign's terms written): the next grab sums them again, and a
// voucher restoring holds the campaign's grabs (503) whatever was kept.
func TestCampaignKeepsItsUnitsTakenExact(t *testing.T) {
	client, s := newStock(t, time.Hour)
	ctx := context.Background()
	c, vs := drop(13, 2, 5, 8, 3)
	warmDrop(t, client, s, c, vs)
	key := s.Keys().Campaign(c.ID)
	kept := func() (int, bool) {
		n, err := client.HGet(ctx, key, "taken").Int()
		return n, err == nil
	}
	check(t, s.Reserve(ctx, takeVariant(vs[0].ID, 1, 2)))
	if n, ok := kept(); !ok || n != 2 {
		t.Fatalf("kept after a grab of 2: %d, %v", n, ok)
	}
	check(t, s.Reserve(ctx, takeVariant(vs[1].ID, 2, 3)))
	ok, err := s.Release(ctx, domain.Order{ID: takeVariant(vs[0].ID, 1, 2).OrderID, VoucherID: vs[0].ID, UserID: 1, Quantity: 2})
	if err != nil || !ok {
		t.Fatalf("release: %v, %v", ok, err)
	}
	if n, ok := kept(); !ok || n != 3 {
		t.Fatalf("kept after a release of 2: %d, %v", n, ok)
	}
	// An edit that takes 2 units of voucher 2's 5 away (3 held, 0 left stays 0).
	edited := vs[1]
	edited.Stock, edited.Version = 3, 1
	if _, err := s.Edit(ctx, edited, ports.EditHeld); err != nil {
		t.Fatal(err)
	}
	if n, ok := kept(); !ok || n != 3 {
		t.Fatalf("kept after an edit that takes only units not taken: %d, %v", n, ok)
	}
	a := redisstore.NewAudit(client, redisstore.Options{Prefix: s.Keys().Prefix})
	check(t, a.Restoring(ctx, vs[0].ID))
	if n, ok := kept(); ok {
		t.Fatalf("kept while a voucher restores: %d", n)
	}
	if err := s.Reserve(ctx, takeVariant(vs[1].ID, 3, 1)); !errors.Is(err, domain.ErrUnavailable) {
		t.Fatalf("a grab of another voucher while one restores: %v, want unavailable", err)
	}
	check(t, a.Restored(ctx, vs[0].ID))
	check(t, s.Reserve(ctx, takeVariant(vs[0].ID, 3, 1)))
	if n, ok := kept(); !ok || n != 4 {
		t.Fatalf("kept once summed again after the restore: %d, %v", n, ok)
	}
	check(t, s.WarmCampaign(ctx, c))
	c.Version++
	check(t, s.WarmCampaign(ctx, c))
	if n, ok := kept(); ok {
		t.Fatalf("kept after the campaign's terms were written: %d", n)
	}
}

// TestCampaignRestoreRecordsItsHolders: the grab script looks for a user's orders
// across the campaign only for the users its holders set names; a restore (the heal
// after Redis forgot) names the users of the live orders it records, so a user whose
// orders came back from the database is held to the limit.
func TestCampaignRestoreRecordsItsHolders(t *testing.T) {
	client, s := newStock(t, time.Hour)
	ctx := context.Background()
	c, vs := drop(13, 3, 5, 0, 2)
	warmDrop(t, client, s, c, vs)
	a, b := takeVariant(vs[0].ID, 1, 1), takeVariant(vs[1].ID, 1, 1)
	check(t, s.Reserve(ctx, a))
	check(t, s.Reserve(ctx, b))
	// Redis forgets who holds what: the holders set and the buyers go.
	k := s.Keys()
	check(t, client.Del(ctx, k.CampaignHolders(c.ID)).Err())
	for _, v := range vs[:2] {
		check(t, client.Del(ctx, k.Buyers(v.ID), k.Orders(v.ID)).Err())
	}
	audit := redisstore.NewAudit(client, redisstore.Options{Prefix: k.Prefix})
	for _, r := range []domain.Reservation{a, b} {
		ok, err := audit.Restore(ctx, r.Order(domain.StatusAwaitingPayment))
		check(t, err)
		if !ok[0] {
			t.Fatalf("restore of %s: not agreed", r.OrderID)
		}
	}
	var held *domain.AlreadyPurchasedError
	if err := s.Reserve(ctx, takeVariant(vs[2].ID, 1, 1)); !errors.As(err, &held) || len(held.Orders) != 2 {
		t.Fatalf("grab of a user at the limit through restored orders = %v, want already purchased naming two", err)
	}
}

// liveDrop is drop on sale by the sale's clock (Redis's TIME), as a waitlist judges,
// from an hour ago until now.
func liveDrop(id domain.CampaignID, n, stock, capUnits, limit int) (domain.Campaign, []domain.Voucher) {
	c, vs := drop(id, n, stock, capUnits, limit)
	c.BeginsAt, c.EndsAt = time.Now().Add(-time.Hour), now
	for k := range vs {
		vs[k].BeginsAt, vs[k].EndsAt = c.BeginsAt, c.EndsAt
	}
	return c, vs
}

// waitlistDrop warms liveDrop's campaign in a stock of its own, and returns the stock's
// client, the stock, its waitlists and the campaign's vouchers.
func waitlistDrop(t *testing.T, id domain.CampaignID, n, stock, capUnits, limit int) (redis.UniversalClient, *redisstore.Stock, *redisstore.Waitlist, []domain.Voucher) {
	t.Helper()
	client, s := newStock(t, time.Hour)
	c, vs := liveDrop(id, n, stock, capUnits, limit)
	warmDrop(t, client, s, c, vs)
	return client, s, redisstore.NewWaitlist(s), vs
}

// liveTake is takeVariant judged by the sale's clock.
func liveTake(v domain.VoucherID, user domain.UserID, qty int) domain.Reservation {
	r := takeVariant(v, user, qty)
	r.At = time.Time{}
	return r
}

// TestCampaignWaitlistKeepsTheLimit: a campaign's voucher has a waitlist, but a user
// holding the campaign's per-user limit across its other vouchers is refused a place
// (naming its orders), and one who reached it after joining is passed over when a
// unit comes back; the user given the unit is then one of the campaign's holders, so
// its next grab of another voucher is judged against the limit.
func TestCampaignWaitlistKeepsTheLimit(t *testing.T) {
	t.Parallel()
	client, s, w, vs := waitlistDrop(t, 11, 3, 1, 0, 1)
	ctx := context.Background()
	v1, v2, v3 := vs[0].ID, vs[1].ID, vs[2].ID

	first := liveTake(v1, 1, 1)
	check(t, s.Reserve(ctx, first))
	join(t, w, v1, 2, 3)
	check(t, s.Reserve(ctx, liveTake(v2, 2, 1)))
	var held *domain.AlreadyPurchasedError
	if _, err := w.Join(ctx, v3, 2, "w2-3"); !errors.As(err, &held) || !slices.Equal(held.Orders, []domain.OrderID{"o2-2"}) {
		t.Fatalf("a user at the campaign's limit joins a waitlist: %v (%+v), want already purchased naming o2-2", err, held)
	}

	released, err := s.Release(ctx, order(first))
	check(t, err)
	if !released {
		t.Fatal("release released nothing")
	}
	buyers, err := client.HGetAll(ctx, s.Keys().Buyers(v1)).Result()
	check(t, err)
	if want := map[string]string{"3": "w3"}; !maps.Equal(buyers, want) {
		t.Fatalf("buyers of the voucher after the hand-off = %v, want %v (user 2 holds the limit)", buyers, want)
	}
	if n := remaining(t, s, v1); n != 0 {
		t.Fatalf("remaining = %d, want 0", n)
	}
	if n, _ := w.Length(ctx, v1); n != 0 {
		t.Fatalf("waitlist length = %d, want 0", n)
	}
	if err := s.Reserve(ctx, liveTake(v3, 3, 1)); !errors.As(err, &held) || !slices.Equal(held.Orders, []domain.OrderID{"w3"}) {
		t.Fatalf("the user handed a unit grabs another voucher: %v (%+v), want already purchased naming w3", err, held)
	}
}

// TestCampaignWaitlistKeepsTheCap: units added to a campaign's voucher go to its
// waitlist only as far as the campaign's cap has units left (the rest go on sale and
// are refused as the campaign's sold out), while a unit that comes back frees the cap
// as it goes to the waitlist.
func TestCampaignWaitlistKeepsTheCap(t *testing.T) {
	t.Parallel()
	client, s, w, vs := waitlistDrop(t, 12, 2, 2, 2, 1)
	ctx := context.Background()
	v1 := vs[0]

	first := liveTake(v1.ID, 1, 1)
	check(t, s.Reserve(ctx, first))
	check(t, s.Reserve(ctx, liveTake(v1.ID, 2, 1)))
	join(t, w, v1.ID, 3)

	v1.Stock, v1.Version = 3, v1.Version+1
	if _, err := s.Edit(ctx, v1, ports.EditHeld); err != nil {
		t.Fatal(err)
	}
	if n, _ := w.Length(ctx, v1.ID); n != 1 {
		t.Fatalf("waitlist length after a unit added under a full cap = %d, want 1", n)
	}
	if n := remaining(t, s, v1.ID); n != 1 {
		t.Fatalf("remaining = %d, want the added unit", n)
	}
	if err := s.Reserve(ctx, liveTake(v1.ID, 4, 1)); !errors.Is(err, domain.ErrCampaignSoldOut) {
		t.Fatalf("grab of the added unit under a full cap: %v, want campaign sold out", err)
	}

	released, err := s.Release(ctx, order(first))
	check(t, err)
	if !released {
		t.Fatal("release released nothing")
	}
	if got, err := client.HGet(ctx, s.Keys().Buyers(v1.ID), "3").Result(); err != nil || got != "w3" {
		t.Fatalf("user 3's order after the release = %q, %v; want w3", got, err)
	}
	if err := s.Reserve(ctx, liveTake(v1.ID, 4, 1)); !errors.Is(err, domain.ErrCampaignSoldOut) {
		t.Fatalf("grab after the hand-off: %v, want campaign sold out (the cap is full again)", err)
	}
}
