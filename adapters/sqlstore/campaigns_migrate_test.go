package sqlstore_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/seckill/seckill/adapters/sqlstore"
	"github.com/seckill/seckill/domain"
)

// campaignsMigration is the migration that adds campaigns, roomsMigration the one
// that adds their waiting rooms' settings after it, drawsMigration their draws'.
const (
	campaignsMigration = "20261210000000_campaigns"
	roomsMigration     = "20261211000000_campaign_rooms"
	drawsMigration     = "20261212000000_drop_draws"
)

// TestCampaignsMigrateUpAndDown: the campaigns migration applies over a database with
// vouchers, orders and audit entries, which read back as of no campaign; rolled back,
// it forgets the campaigns with their vouchers and orders and leaves the rest; and it
// applies again after that.
func TestCampaignsMigrateUpAndDown(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := openDB(t)
	if err := sqlstore.MigrateBefore(ctx, db, "20261210000000"); err != nil {
		t.Fatalf("migrate before campaigns: %v", err)
	}
	// A voucher, its order and an audit entry, as the schema before campaigns stores them.
	var plain int64
	if err := db.NewRaw("INSERT INTO vouchers (title, stock, begins_at, ends_at) VALUES ('old', 10, ?, ?) RETURNING id",
		t0.UTC(), t0.Add(time.Hour).UTC()).Scan(ctx, &plain); err != nil {
		t.Fatal(err)
	}
	mustInsertOrder(t, db, "01KB0000000000000000000001", domain.VoucherID(plain), 1, domain.StatusAwaitingPayment)
	if _, err := db.NewRaw("INSERT INTO audit_log (at, actor, action, voucher_id) VALUES (?, 'a', 'voucher.create', ?)",
		t0.UTC(), plain).Exec(ctx); err != nil {
		t.Fatal(err)
	}

	if got := migrateUp(t, db); !slices.Equal(got, []string{campaignsMigration, roomsMigration, drawsMigration}) {
		t.Fatalf("up applied %q, want %s, %s and %s", got, campaignsMigration, roomsMigration, drawsMigration)
	}
	f := campaignFixture{orderFixture: orderFixture{db: db, orders: sqlstore.NewOrders(db), vouchers: sqlstore.NewVouchers(db)},
		campaigns: sqlstore.NewCampaigns(db), log: sqlstore.NewAuditLog(db)}
	if v, err := f.vouchers.Get(ctx, domain.VoucherID(plain)); err != nil || v.CampaignID != 0 || v.Title != "old" {
		t.Fatalf("the old voucher reads %+v, %v", v, err)
	}
	c := f.campaign(t, 2, 0)
	v := f.variant(t, c.ID, 10, 1)
	f.persisted(t, reserve(2, v.ID, 1, 1), reserve(3, domain.VoucherID(plain), 2, 1))
	f.wantCampaignConsistent(t, c)

	if got := migrateDown(t, db); !slices.Equal(got, []string{drawsMigration, roomsMigration, campaignsMigration}) {
		t.Fatalf("down rolled back %q, want %s, %s and %s", got, drawsMigration, roomsMigration, campaignsMigration)
	}
	if got := tablesExist(t, db, "campaigns", "campaign_units", "drop_draws", "vouchers", "orders"); !slices.Equal(got, []bool{false, false, false, true, true}) {
		t.Fatalf("after down, campaigns, campaign_units, drop_draws, vouchers, orders exist: %v", got)
	}
	var ids []int64
	if err := db.NewRaw("SELECT id FROM vouchers").Scan(ctx, &ids); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(ids, []int64{plain}) {
		t.Fatalf("vouchers after down = %v, want the old voucher alone", ids)
	}
	var orders []string
	if err := db.NewRaw("SELECT id FROM orders ORDER BY id").Scan(ctx, &orders); err != nil {
		t.Fatal(err)
	}
	if want := []string{"01KB0000000000000000000001", string(orderID(3))}; !slices.Equal(orders, want) {
		t.Fatalf("orders after down = %v, want %v", orders, want)
	}
	if _, err := db.NewRaw("SELECT campaign_id FROM vouchers").Exec(ctx); err == nil {
		t.Fatal("vouchers.campaign_id still exists after down")
	}
	if _, err := db.NewRaw("SELECT campaign_id FROM audit_log").Exec(ctx); err == nil {
		t.Fatal("audit_log.campaign_id still exists after down")
	}

	if got := migrateUp(t, db); !slices.Equal(got, []string{campaignsMigration, roomsMigration, drawsMigration}) {
		t.Fatalf("up again applied %q, want %s, %s and %s", got, campaignsMigration, roomsMigration, drawsMigration)
	}
	c = f.campaign(t, 2, 0)
	f.variant(t, c.ID, 10, 1)
	if next := f.voucher(t, 10); next != domain.VoucherID(plain)+1 {
		t.Fatalf("next voucher of no campaign got id %d, want %d", next, plain+1)
	}
}
