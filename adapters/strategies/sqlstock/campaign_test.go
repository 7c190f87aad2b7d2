package sqlstock_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/seckill/seckill/adapters/sqlstore"
	"github.com/seckill/seckill/adapters/strategies/sqlstock"
	"github.com/seckill/seckill/domain"
)

// drop creates a campaign on sale from t0 for an hour under capUnits and limit units
// a user, and a voucher of each of stocks in it; it returns their ids.
func (f stockFixture) drop(t *testing.T, capUnits, limit int, stocks ...int) []domain.VoucherID {
	t.Helper()
	return f.dropAdmitting(t, domain.AdmissionFirstCome, capUnits, limit, stocks...)
}

// dropAdmitting is drop with the campaign's admission.
func (f stockFixture) dropAdmitting(t *testing.T, admission domain.Admission, capUnits, limit int, stocks ...int) []domain.VoucherID {
	t.Helper()
	ctx := context.Background()
	c := domain.Campaign{Title: "drop", BeginsAt: t0, EndsAt: t0.Add(time.Hour), PerUserLimit: limit, Cap: &capUnits, Admission: admission}
	c = c.WithAdmissionDefaults(t0.Add(-time.Hour))
	if err := sqlstore.NewCampaigns(f.db).Create(ctx, &c, domain.Author{}, nil); err != nil {
		t.Fatalf("Create campaign: %v", err)
	}
	ids := make([]domain.VoucherID, len(stocks))
	for k, stock := range stocks {
		v := domain.Voucher{Title: "size", Stock: stock, CampaignID: c.ID}
		if err := f.vouchers.Create(ctx, &v, domain.Author{}, nil); err != nil {
			t.Fatalf("Create variant: %v", err)
		}
		ids[k] = v.ID
	}
	return ids
}

// TestStockSellsACampaign: a grab of a campaign's voucher is judged by the campaign's
// rows too — the per-user limit across its vouchers (naming the orders held), a
// voucher sold out, the cap — and a refused grab stores nothing; the waitlist and the
// draw stay unsupported on this strategy.
func TestStockSellsACampaign(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newStockFixture(t)
	ids := f.drop(t, 3, 2, 2, 5, 5)
	a, b, c := ids[0], ids[1], ids[2]
	at := t0.Add(time.Minute)

	for n, g := range []struct {
		v    domain.VoucherID
		user int64
	}{{a, 1}, {b, 1}, {a, 2}} {
		if err := f.stock.Reserve(ctx, grabAt(n+1, g.v, g.user, 1, at)); err != nil {
			t.Fatalf("grab %d: %v", n+1, err)
		}
	}
	var held *domain.AlreadyPurchasedError
	if err := f.stock.Reserve(ctx, grabAt(4, c, 1, 1, at)); !errors.As(err, &held) ||
		!slices.Equal(held.Orders, []domain.OrderID{grabAt(1, a, 1, 1, at).OrderID, grabAt(2, b, 1, 1, at).OrderID}) {
		t.Fatalf("user 1's third voucher: %v (%+v), want already purchased naming its two orders", err, held)
	}
	if err := f.stock.Reserve(ctx, grabAt(5, a, 3, 1, at)); !errors.Is(err, domain.ErrSoldOut) {
		t.Fatalf("voucher A, sold out: %v", err)
	}
	if err := f.stock.Reserve(ctx, grabAt(6, c, 3, 1, at)); !errors.Is(err, domain.ErrCampaignSoldOut) {
		t.Fatalf("voucher C at the cap: %v, want campaign sold out", err)
	}
	for _, n := range []int{4, 5, 6} {
		if _, err := f.orders.Get(ctx, grabAt(n, a, 1, 1, at).OrderID); !errors.Is(err, domain.ErrNotFound) {
			t.Fatalf("refused grab %d's order: %v, want ErrNotFound", n, err)
		}
	}
	if got := f.sold(t, a) + f.sold(t, b) + f.sold(t, c); got != 3 {
		t.Fatalf("sold %d across the campaign, want its cap 3", got)
	}
	if _, err := (sqlstock.NoWaitlist{}).Join(ctx, c, 7, "01KB0000000000000000000099"); !errors.Is(err, domain.ErrWaitlistUnsupported) {
		t.Fatalf("Join of a campaign's voucher = %v, want ErrWaitlistUnsupported", err)
	}
	if _, err := (sqlstock.NoEntries{}).Enter(ctx, domain.Voucher{ID: c}, 7); !errors.Is(err, domain.ErrDrawUnsupported) {
		t.Fatalf("Enter of a campaign's voucher = %v, want ErrDrawUnsupported", err)
	}
}

// TestStockSellsACampaignExactlyUnderConcurrentGrabs: 150 users grab random vouchers
// of a campaign of three (15 units each, a cap of 30, 2 units a user) at once:
// exactly the cap is sold, and no user holds more than the limit across it.
func TestStockSellsACampaignExactlyUnderConcurrentGrabs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newStockFixture(t)
	ids := f.drop(t, 30, 2, 15, 15, 15)
	at := t0.Add(time.Minute)
	var mu sync.Mutex
	units := map[int64]int{}
	var wg sync.WaitGroup
	for u := int64(1); u <= 150; u++ {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(u), 3))
			for k := range 3 {
				err := f.stock.Reserve(ctx, grabAt(int(u)*10+k, ids[rng.IntN(len(ids))], u, 1, at))
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
	sum := 0
	for u, n := range units {
		if n > 2 {
			t.Fatalf("user %d holds %d units, over the limit of 2", u, n)
		}
		sum += n
	}
	sold := 0
	for _, id := range ids {
		sold += f.sold(t, id)
	}
	if sum != 30 || sold != 30 {
		t.Fatalf("%d grabs answered reserved, %d sold; want the cap, 30", sum, sold)
	}
}

// TestStockTakesACampaignsPassOnce: a pass of a campaign's waiting room admits one
// grab of any of its vouchers: used on one, it admits none on another.
func TestStockTakesACampaignsPassOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newStockFixture(t)
	ids := f.dropAdmitting(t, domain.AdmissionWaitingRoom, 10, 2, 5, 5)
	at := t0.Add(time.Minute)
	withPass := func(r domain.Reservation, pass time.Time) domain.Reservation { r.Pass = pass; return r }
	pass := at.Add(time.Minute)
	if err := f.stock.Reserve(ctx, grabAt(1, ids[0], 1, 1, at)); !errors.Is(err, domain.ErrQueueRequired) {
		t.Fatalf("a grab with no pass: %v, want %v", err, domain.ErrQueueRequired)
	}
	if err := f.stock.Reserve(ctx, withPass(grabAt(2, ids[0], 1, 1, at), pass)); err != nil {
		t.Fatalf("a grab with the pass: %v", err)
	}
	if err := f.stock.Reserve(ctx, withPass(grabAt(3, ids[1], 1, 1, at), pass)); !errors.Is(err, domain.ErrQueueRequired) {
		t.Fatalf("the pass used again on the other voucher: %v, want %v", err, domain.ErrQueueRequired)
	}
	// Another pass of the user's (a later one) admits again, up to the campaign's limit.
	if err := f.stock.Reserve(ctx, withPass(grabAt(4, ids[1], 1, 1, at), pass.Add(time.Second))); err != nil {
		t.Fatalf("a grab with a new pass: %v", err)
	}
	if got := f.sold(t, ids[0]) + f.sold(t, ids[1]); got != 2 {
		t.Fatalf("sold %d, want 2", got)
	}
}
