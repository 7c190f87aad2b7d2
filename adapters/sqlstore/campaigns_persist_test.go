package sqlstore_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/seckill/seckill/adapters/sqlstore"
	"github.com/seckill/seckill/domain"
	"github.com/seckill/seckill/ports"
)

// TestPersistKeepsACampaignsCapAndLimit: orders that would pass a campaign's cap or
// take a user past its per-user limit are stored failed, with their reasons, and the
// rest of the batch persisted; the cap filled writes campaign.sold_out.
func TestPersistKeepsACampaignsCapAndLimit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newCampaignFixture(t)
	f.orders, f.campaigns = f.orders.WithOutbox(), f.campaigns.WithOutbox()
	hooks := sqlstore.NewWebhooks(f.db)
	c := f.campaign(t, 3, 6)
	a, b := f.variant(t, c.ID, 10, 3), f.variant(t, c.ID, 10, 3)
	plain := f.voucher(t, 10)

	// User 1 holds 2 units of a; 3 more of b would make 5, over the limit of 3.
	f.persisted(t, reserve(1, a.ID, 1, 2))
	rs := []domain.Reservation{reserve(2, b.ID, 1, 3), reserve(3, plain, 1, 1), reserve(4, b.ID, 2, 1), reserve(5, b.ID, 1, 1)}
	got := f.persist(t, rs...)
	want := []ports.PersistResult{result(rs[0], ports.Failed, reasonCampaignLimit), result(rs[1], ports.Persisted, ""),
		result(rs[2], ports.Persisted, ""), result(rs[3], ports.Persisted, "")}
	if !slices.Equal(got, want) {
		t.Fatalf("Persist =\n%+v, want\n%+v", got, want)
	}
	if c := f.wantCampaignConsistent(t, c); c.Sold != 4 {
		t.Fatalf("campaign sold = %d, want 4", c.Sold)
	}

	// Sold 4 of a cap of 6, and each voucher has units left: the cap takes a's orders
	// first (vouchers in id order), in order id order: 3 units do not fit, 2 do; then
	// b's 1 unit does not.
	rs = []domain.Reservation{reserve(6, a.ID, 3, 3), reserve(7, b.ID, 4, 1), reserve(8, a.ID, 5, 2)}
	got = f.persist(t, rs...)
	want = []ports.PersistResult{result(rs[0], ports.Failed, reasonCampaignCap), result(rs[1], ports.Failed, reasonCampaignCap),
		result(rs[2], ports.Persisted, "")}
	if !slices.Equal(got, want) {
		t.Fatalf("Persist at the cap =\n%+v, want\n%+v", got, want)
	}
	if c := f.wantCampaignConsistent(t, c); c.Sold != 6 {
		t.Fatalf("campaign sold = %d, want its cap, 6", c.Sold)
	}

	// The failed orders are closed and unreleased, as any failed order: the release
	// path gives their units back to the stock.
	unreleased, err := f.orders.Unreleased(ctx, 100)
	if err != nil {
		t.Fatal(err)
	}
	var failed []domain.OrderID
	for _, o := range unreleased {
		failed = append(failed, o.ID)
	}
	slices.Sort(failed)
	if want := []domain.OrderID{orderID(2), orderID(6), orderID(7)}; !slices.Equal(failed, want) {
		t.Fatalf("unreleased = %v, want %v", failed, want)
	}

	ds, err := hooks.List(ctx, ports.DeliveryQuery{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	var soldOut []domain.Delivery
	for _, d := range ds {
		if d.Type == domain.EventCampaignSoldOut {
			soldOut = append(soldOut, d)
		}
	}
	if len(soldOut) != 1 || soldOut[0].Campaign == nil || soldOut[0].Campaign.ID != c.ID || soldOut[0].Campaign.Sold != 6 ||
		soldOut[0].Campaign.Variants != 2 || *soldOut[0].Campaign.Cap != 6 {
		t.Fatalf("campaign.sold_out deliveries = %+v, want one of campaign %d at sold 6", soldOut, c.ID)
	}
}

// TestCancellingGivesCampaignUnitsBack: closing an order of a campaign's voucher (a
// cancellation, an expiry) gives its units back to the campaign's sold and to its
// user's campaign units, so the user may order again.
func TestCancellingGivesCampaignUnitsBack(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newCampaignFixture(t)
	c := f.campaign(t, 2, 3)
	a, b := f.variant(t, c.ID, 10, 2), f.variant(t, c.ID, 10, 2)
	r1, r2, r3 := reserve(1, a.ID, 1, 2), reserve(2, b.ID, 2, 1), reserve(3, a.ID, 3, 1)
	r1.Expires = t0.Add(time.Hour)
	r2.Expires = t0.Add(time.Minute)
	r3.Expires = t0.Add(time.Hour)
	f.persisted(t, r1, r2)
	if got := f.wantCampaignConsistent(t, c); got.Sold != 3 {
		t.Fatalf("sold = %d, want 3", got.Sold)
	}

	if _, err := f.orders.Transition(ctx, r1.OrderID, r1.UserID, domain.StatusCancelled, nil); err != nil {
		t.Fatalf("cancel: %v", err)
	}
	if got := f.wantCampaignConsistent(t, c); got.Sold != 1 {
		t.Fatalf("sold after a cancellation = %d, want 1", got.Sold)
	}
	if units := userUnits(t, f.db, c.ID); units[1] != 0 || units[2] != 1 {
		t.Fatalf("campaign units after the cancellation = %v", units)
	}
	expired, err := f.orders.ExpireDue(ctx, t0.Add(2*time.Minute), domain.PaymentWindow(time.Hour), 10)
	if err != nil || len(expired) != 1 || expired[0].ID != r2.OrderID {
		t.Fatalf("ExpireDue = %+v, %v; want order 2 expired", expired, err)
	}
	if got := f.wantCampaignConsistent(t, c); got.Sold != 0 || len(userUnits(t, f.db, c.ID)) != 0 {
		t.Fatalf("after the expiry: sold %d, units %v", got.Sold, userUnits(t, f.db, c.ID))
	}
	// User 1 may order up to the limit again; a payment moves nothing.
	r4 := reserve(4, b.ID, 1, 2)
	f.persisted(t, r4, r3)
	if _, err := f.orders.Transition(ctx, r4.OrderID, r4.UserID, domain.StatusPaid, nil); err != nil {
		t.Fatalf("pay: %v", err)
	}
	if got := f.wantCampaignConsistent(t, c); got.Sold != 3 {
		t.Fatalf("sold = %d, want 3", got.Sold)
	}
	if sold, err := f.orders.RecountSold(ctx, a.ID); err != nil || sold != 1 {
		t.Fatalf("RecountSold = %d, %v; want 1", sold, err)
	}
	f.wantCampaignConsistent(t, c)
}

// campaignBurst is a campaign of cap 60 and 3 units a user, its four vouchers of 40
// units and a voucher of no campaign, and the reservations of a burst on them: one
// per user and voucher (as the stock lets a user hold one live order of a voucher), of
// 1 or 2 units, mixed, so users ask for more than the limit and, together, for more
// than the cap.
type campaignBurst struct {
	campaign domain.Campaign
	plain    domain.VoucherID
	rs       []domain.Reservation
}

const burstCap, burstLimit = 60, 3

func newCampaignBurst(t *testing.T, f campaignFixture) campaignBurst {
	t.Helper()
	b := campaignBurst{campaign: f.campaign(t, burstLimit, burstCap), plain: f.voucher(t, 1000)}
	var vouchers []domain.VoucherID
	for range 4 {
		vouchers = append(vouchers, f.variant(t, b.campaign.ID, 40, 2).ID)
	}
	vouchers = append(vouchers, b.plain)
	n := 0
	for u := range 40 {
		for i, v := range vouchers {
			n++
			b.rs = append(b.rs, reserve(n, v, int64(u+1), 1+(u+i)%2))
		}
	}
	for i := range b.rs {
		j := (i*7919 + 13) % len(b.rs)
		b.rs[i], b.rs[j] = b.rs[j], b.rs[i]
	}
	return b
}

// persist persists the burst in batches of 7 from 16 goroutines at once, calling
// after (when set) with each batch's results, and returns each reservation's result.
func (b campaignBurst) persist(t *testing.T, f campaignFixture, after func([]ports.PersistResult)) map[domain.OrderID]ports.PersistResult {
	t.Helper()
	batches := slices.Collect(slices.Chunk(b.rs, 7))
	results := make([][]ports.PersistResult, len(batches))
	errs := make([]error, len(batches))
	var wg sync.WaitGroup
	next := make(chan int)
	for range 16 {
		wg.Go(func() {
			for i := range next {
				results[i], errs[i] = f.orders.Persist(context.Background(), batches[i])
				if errs[i] == nil && after != nil {
					after(results[i])
				}
			}
		})
	}
	for i := range batches {
		next <- i
	}
	close(next)
	wg.Wait()
	outcomes := map[domain.OrderID]ports.PersistResult{}
	for i, err := range errs {
		if err != nil {
			t.Fatalf("batch %d: %v", i, err)
		}
		for _, res := range results[i] {
			outcomes[res.OrderID] = res
		}
	}
	return outcomes
}

// wantKept fails unless every reservation ended persisted or failed and stored so
// (closedLater: or closed since), none was lost, the campaign is consistent, within
// its cap, and no user past its limit; it returns the outcomes' count by reason.
func (b campaignBurst) wantKept(t *testing.T, f campaignFixture, outcomes map[domain.OrderID]ports.PersistResult, closedLater bool) map[string]int {
	t.Helper()
	reasons := map[string]int{}
	for _, r := range b.rs {
		res, ok := outcomes[r.OrderID]
		if !ok || (res.Outcome != ports.Persisted && res.Outcome != ports.Failed) {
			t.Fatalf("reservation %s ended %+v, want persisted or failed", r.OrderID, res)
		}
		status := f.orderFixture.get(t, r.OrderID).Status
		ok = res.Outcome == ports.Failed && status == domain.StatusFailed ||
			res.Outcome == ports.Persisted && (status == domain.StatusAwaitingPayment ||
				closedLater && (status == domain.StatusCancelled || status == domain.StatusExpired))
		if !ok {
			t.Fatalf("reservation %s answered %+v, stored %s", r.OrderID, res, status)
		}
		reasons[res.Reason]++
	}
	if got := f.count(t); got != len(b.rs) {
		t.Fatalf("%d orders stored of %d reservations", got, len(b.rs))
	}
	if got := f.wantCampaignConsistent(t, b.campaign); got.Sold > burstCap {
		t.Fatalf("campaign sold %d, over its cap %d", got.Sold, burstCap)
	}
	for u, units := range liveUserUnits(t, f.db, b.campaign.ID) {
		if units > burstLimit {
			t.Fatalf("user %d holds %d units of the campaign, over its limit %d", u, units, burstLimit)
		}
	}
	f.wantConsistent(t, b.plain)
	return reasons
}

// TestConcurrentPersistsKeepACampaign: batches of a burst persisted at once, each of
// orders of several of a campaign's vouchers and of a voucher of no campaign: none
// errs, every reservation ends persisted or failed, the cap is filled and not passed,
// and no user passes the limit.
func TestConcurrentPersistsKeepACampaign(t *testing.T) {
	t.Parallel()
	f := newCampaignFixture(t)
	b := newCampaignBurst(t, f)
	reasons := b.wantKept(t, f, b.persist(t, f, nil), false)
	if got := f.get(t, b.campaign.ID).Sold; got != burstCap {
		t.Fatalf("campaign sold %d, want its cap %d (asked for far more)", got, burstCap)
	}
	if reasons[reasonCampaignLimit] == 0 || reasons[reasonCampaignCap] == 0 {
		t.Fatalf("outcomes by reason %v: want both the limit and the cap to have refused some", reasons)
	}
}

// TestConcurrentPersistsCancelsAndExpiriesKeepACampaign: the burst again, while each
// batch's first persisted order is cancelled as soon as it is stored and a sweeper
// expires the oldest orders: the counters that move down meet those that move up in
// every order of locks, and the campaign stays within its cap and limits, consistent.
func TestConcurrentPersistsCancelsAndExpiriesKeepACampaign(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newCampaignFixture(t)
	b := newCampaignBurst(t, f)
	stop := make(chan struct{})
	swept := make(chan error, 1)
	// The sweeper closes firstExpired once it expired an order, and the first batch
	// to be persisted waits for it (bounded), so expiries meet persists however the
	// machine schedules them (SQLite writes one at a time).
	firstExpired := make(chan struct{})
	var expiredOnce, waitOnce sync.Once
	go func() {
		// Orders are stored made n seconds after t0; a window of a second at t0+k
		// expires those made before t0+k-1.
		for k := 0; ; k++ {
			select {
			case <-stop:
				swept <- nil
				return
			default:
			}
			expired, err := f.orders.ExpireDue(ctx, t0.Add(time.Duration(k%len(b.rs))*time.Second), domain.PaymentWindow(time.Second), 5)
			if err != nil {
				swept <- err
				return
			}
			if len(expired) > 0 {
				expiredOnce.Do(func() { close(firstExpired) })
			}
		}
	}()
	outcomes := b.persist(t, f, func(rs []ports.PersistResult) {
		waitOnce.Do(func() {
			select {
			case <-firstExpired:
			case <-time.After(2 * time.Minute):
				t.Error("the sweeper expired no order in 2 minutes")
			}
		})
		for _, res := range rs {
			if res.Outcome != ports.Persisted {
				continue
			}
			_, err := f.orders.Transition(ctx, res.OrderID, 0, domain.StatusCancelled, nil)
			if err != nil && !errors.Is(err, domain.ErrInvalidState) {
				t.Errorf("cancel %s: %v", res.OrderID, err)
			}
			return
		}
	})
	close(stop)
	if err := <-swept; err != nil {
		t.Fatalf("ExpireDue: %v", err)
	}
	b.wantKept(t, f, outcomes, true)
	for _, status := range []domain.OrderStatus{domain.StatusCancelled, domain.StatusExpired} {
		n, err := f.db.NewSelect().Table("orders").Where("status = ?", string(status)).Count(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			t.Fatalf("no order was %s meanwhile", status)
		}
	}
}
