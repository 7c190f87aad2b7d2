package sqlstock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/seckill/seckill/adapters/sqlstore"
	"github.com/seckill/seckill/adapters/strategies/sqlstock"
	"github.com/seckill/seckill/domain"
)

// TestStockSellsNoCampaign: the database strategy keeps no campaign's cap nor its
// per-user limit, so a grab of a campaign's voucher, and a waitlist's or a draw's
// entry to one, answer ErrCampaignUnsupported and store nothing; a voucher of no
// campaign sells as before.
func TestStockSellsNoCampaign(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newStockFixture(t)
	c := domain.Campaign{Title: "drop", BeginsAt: t0, EndsAt: t0.Add(time.Hour), PerUserLimit: 2}
	if err := sqlstore.NewCampaigns(f.db).Create(ctx, &c, domain.Author{}, nil); err != nil {
		t.Fatalf("Create campaign: %v", err)
	}
	v := domain.Voucher{Title: "size 1", Stock: 10, CampaignID: c.ID}
	if err := f.vouchers.Create(ctx, &v, domain.Author{}, nil); err != nil {
		t.Fatalf("Create variant: %v", err)
	}

	if err := f.stock.Reserve(ctx, grabAt(1, v.ID, 7, 1, t0.Add(time.Minute))); !errors.Is(err, domain.ErrCampaignUnsupported) {
		t.Fatalf("Reserve of a campaign's voucher = %v, want ErrCampaignUnsupported", err)
	}
	if got := f.sold(t, v.ID); got != 0 {
		t.Fatalf("sold = %d after a refused grab", got)
	}
	if _, err := f.orders.Get(ctx, grabAt(1, v.ID, 7, 1, t0).OrderID); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("the refused grab's order: %v, want ErrNotFound", err)
	}
	if _, err := (sqlstock.NoWaitlist{}).Join(ctx, v.ID, 7, "01KB0000000000000000000002"); !errors.Is(err, domain.ErrCampaignUnsupported) {
		t.Fatalf("Join of a campaign's voucher = %v, want ErrCampaignUnsupported", err)
	}
	if _, err := (sqlstock.NoEntries{}).Enter(ctx, v, 7); !errors.Is(err, domain.ErrCampaignUnsupported) {
		t.Fatalf("Enter of a campaign's voucher = %v, want ErrCampaignUnsupported", err)
	}

	plain := f.onSale(t, 10, 1)
	if err := f.stock.Reserve(ctx, grabAt(3, plain.ID, 7, 1, t0.Add(time.Minute))); err != nil {
		t.Fatalf("Reserve of a voucher of no campaign: %v", err)
	}
	if _, err := (sqlstock.NoWaitlist{}).Join(ctx, plain.ID, 7, "01KB0000000000000000000004"); !errors.Is(err, domain.ErrWaitlistUnsupported) {
		t.Fatalf("Join of a voucher of no campaign = %v, want ErrWaitlistUnsupported", err)
	}
	if _, err := (sqlstock.NoEntries{}).Enter(ctx, plain, 7); !errors.Is(err, domain.ErrDrawUnsupported) {
		t.Fatalf("Enter of a voucher of no campaign = %v, want ErrDrawUnsupported", err)
	}
}
