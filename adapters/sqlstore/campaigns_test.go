package sqlstore_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/uptrace/bun"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/seckill/seckill/adapters/sqlstore"
	"github.com/seckill/seckill/domain"
	"github.com/seckill/seckill/ports"
)

// campaignFixture is a migrated database with the repositories over it, campaigns
// included.
type campaignFixture struct {
	orderFixture
	campaigns *sqlstore.Campaigns
	log       *sqlstore.AuditLog
}

func newCampaignFixture(t *testing.T) campaignFixture {
	t.Helper()
	f := newOrderFixture(t)
	return campaignFixture{orderFixture: f, campaigns: sqlstore.NewCampaigns(f.db), log: sqlstore.NewAuditLog(f.db)}
}

// campaign creates a campaign on sale from t0 for an hour, of at most limit units a
// user and, unless capped is 0, capped units in all.
func (f campaignFixture) campaign(t *testing.T, limit, capped int) domain.Campaign {
	t.Helper()
	c := domain.Campaign{Title: fmt.Sprintf("drop of %d", capped), BeginsAt: t0, EndsAt: t0.Add(time.Hour), PerUserLimit: limit}
	if capped != 0 {
		c.Cap = &capped
	}
	if err := f.campaigns.Create(context.Background(), &c, domain.Author{Actor: "admin"}, nil); err != nil {
		t.Fatalf("Create campaign: %v", err)
	}
	return c
}

// edit stores e's change of campaign id, as UpdateCampaign does (with its audit entry).
func (f campaignFixture) edit(id domain.CampaignID, e domain.CampaignEdit) (domain.Campaign, error) {
	return f.campaigns.Update(context.Background(), id, ports.CampaignUpdate{Action: domain.AuditCampaignUpdate,
		Change: func(c domain.Campaign) (domain.Campaign, error) { return c.Apply(e) }})
}

// variant creates campaign c's next voucher, of stock units and at most limit a user.
func (f campaignFixture) variant(t *testing.T, c domain.CampaignID, stock, limit int) domain.Voucher {
	t.Helper()
	v := domain.Voucher{Title: fmt.Sprintf("size %d", stock), Stock: stock, PerUserLimit: limit, CampaignID: c}
	if err := f.vouchers.Create(context.Background(), &v, domain.Author{Actor: "admin"}, nil); err != nil {
		t.Fatalf("Create variant of campaign %d: %v", c, err)
	}
	return v
}

func (f campaignFixture) get(t *testing.T, id domain.CampaignID) domain.Campaign {
	t.Helper()
	c, err := f.campaigns.Get(context.Background(), id)
	if err != nil {
		t.Fatalf("Get campaign %d: %v", id, err)
	}
	return c
}

// userUnits returns campaign_units as the triggers keep it: each user's units of c.
func userUnits(t *testing.T, db bun.IDB, c domain.CampaignID) map[domain.UserID]int {
	t.Helper()
	var rows []struct {
		UserID int64 `bun:"user_id"`
		Units  int   `bun:"units"`
	}
	if err := db.NewRaw("SELECT user_id, units FROM campaign_units WHERE campaign_id = ?", int64(c)).
		Scan(context.Background(), &rows); err != nil {
		t.Fatalf("read campaign_units: %v", err)
	}
	out := make(map[domain.UserID]int)
	for _, r := range rows {
		if r.Units != 0 {
			out[domain.UserID(r.UserID)] = r.Units
		}
	}
	return out
}

// liveUserUnits returns each user's units of c's live orders, summed from the orders.
func liveUserUnits(t *testing.T, db bun.IDB, c domain.CampaignID) map[domain.UserID]int {
	t.Helper()
	var rows []struct {
		UserID int64 `bun:"user_id"`
		Units  int   `bun:"units"`
	}
	err := db.NewRaw(`SELECT user_id, sum(quantity) AS units FROM orders
		WHERE voucher_id BETWEEN ? AND ? AND status IN (?) GROUP BY user_id`,
		int64(c.Variant(1)), int64(c.Variant(domain.MaxVariants)), bun.List(sqlstore.LiveStatuses)).
		Scan(context.Background(), &rows)
	if err != nil {
		t.Fatalf("sum live units of campaign %d: %v", c, err)
	}
	out := make(map[domain.UserID]int)
	for _, r := range rows {
		out[domain.UserID(r.UserID)] = r.Units
	}
	return out
}

// wantCampaignConsistent fails unless c's sold is the sum of its vouchers' sold
// counters and of its live orders' units, each voucher's sold its live orders', and
// campaign_units each user's live units.
func (f campaignFixture) wantCampaignConsistent(t *testing.T, c domain.Campaign) domain.Campaign {
	t.Helper()
	got := f.get(t, c.ID)
	vouchers, live := 0, 0
	for _, v := range got.VoucherIDs() {
		f.wantConsistent(t, v)
		vouchers += f.sold(t, v)
	}
	for _, n := range liveUserUnits(t, f.db, c.ID) {
		live += n
	}
	if got.Sold != vouchers || got.Sold != live {
		t.Fatalf("campaign %d: sold = %d, its vouchers' sold %d, its live orders' units %d", c.ID, got.Sold, vouchers, live)
	}
	if units, want := userUnits(t, f.db, c.ID), liveUserUnits(t, f.db, c.ID); !mapsEqual(units, want) {
		t.Fatalf("campaign %d: campaign_units = %v, live orders hold %v", c.ID, units, want)
	}
	return got
}

func mapsEqual[K comparable](a, b map[K]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// campaignEntries returns the audit log's entries of campaigns, newest first, as
// "action campaign voucher before after" lines.
func campaignEntries(t *testing.T, log *sqlstore.AuditLog) []string {
	t.Helper()
	es, err := log.List(context.Background(), ports.AuditQuery{Limit: 100})
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	var out []string
	for _, e := range es {
		if e.CampaignID != 0 {
			out = append(out, fmt.Sprintf("%s %d %d %s %s", e.Action, e.CampaignID, e.VoucherID, e.Before, e.After))
		}
	}
	return out
}

// TestCampaignsCreateGetListUpdate: a campaign is stored as created and read back alike,
// listed newest first by keyset pages, and each change that changes something is
// written with its audit entry, naming the campaign; a change of nothing writes none.
func TestCampaignsCreateGetListUpdate(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newCampaignFixture(t)

	five := 5
	in := domain.Campaign{Title: "Sneaker drop", BeginsAt: t0, EndsAt: t0.Add(time.Hour), PerUserLimit: 2, Cap: &five,
		Challenge: domain.ChallengePow, PowDifficulty: 8}
	c := in
	if err := f.campaigns.Create(ctx, &c, domain.Author{Actor: "alice", RequestID: "r1"}, nil); err != nil {
		t.Fatalf("Create: %v", err)
	}
	if c.ID <= 0 || c.CreatedAt.IsZero() || c.CreatedAt.Location() != time.UTC {
		t.Fatalf("Create left id %d, created at %v", c.ID, c.CreatedAt)
	}
	want := domain.Campaign{ID: c.ID, Title: in.Title, BeginsAt: t0.UTC().Truncate(time.Microsecond),
		EndsAt: t0.Add(time.Hour).UTC().Truncate(time.Microsecond), PerUserLimit: 2, Cap: &five,
		Admission: domain.AdmissionFirstCome, Challenge: domain.ChallengePow, PowDifficulty: 8, CreatedAt: c.CreatedAt}
	got := f.get(t, c.ID)
	if got.Cap == nil || *got.Cap != 5 {
		t.Fatalf("Get read cap %v, want 5", got.Cap)
	}
	got.Cap, want.Cap = nil, nil
	if fmt.Sprintf("%+v", got) != fmt.Sprintf("%+v", want) {
		t.Fatalf("Get =\n%+v, want\n%+v", got, want)
	}
	if _, err := f.campaigns.Get(ctx, c.ID+1); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("Get of an unknown campaign = %v, want ErrNotFound", err)
	}

	second := f.campaign(t, 1, 0)
	third := f.campaign(t, 1, 0)
	page, err := f.campaigns.List(ctx, ports.CampaignQuery{Limit: 2})
	if err != nil {
		t.Fatal(err)
	}
	if len(page) != 2 || page[0].ID != third.ID || page[1].ID != second.ID || page[1].Cap != nil {
		t.Fatalf("first page = %+v, want campaigns %d, %d", page, third.ID, second.ID)
	}
	page, err = f.campaigns.List(ctx, ports.CampaignQuery{Before: second.ID, Limit: 2})
	if err != nil {
		t.Fatal(err)
	}
	if len(page) != 1 || page[0].ID != c.ID {
		t.Fatalf("second page = %+v, want campaign %d alone", page, c.ID)
	}
	if _, err := f.campaigns.List(ctx, ports.CampaignQuery{}); !errors.Is(err, domain.ErrInvalid) {
		t.Fatalf("List with no limit = %v, want a validation error", err)
	}

	three, title := 3, "Sneaker drop, second run"
	edit := domain.CampaignEdit{Cap: &three, Title: &title}
	got, err = f.campaigns.Update(ctx, c.ID, ports.CampaignUpdate{Action: domain.AuditCampaignUpdate,
		By:     domain.Author{Actor: "bob"},
		Change: func(c domain.Campaign) (domain.Campaign, error) { return c.Apply(edit) }})
	if err != nil {
		t.Fatalf("Update: %v", err)
	}
	if *got.Cap != 3 || got.Title != title || got.Version != 1 {
		t.Fatalf("Update returned %+v, want cap 3, the new title, version 1", got)
	}
	if stored := f.get(t, c.ID); *stored.Cap != 3 || stored.Version != 1 {
		t.Fatalf("stored %+v after Update", stored)
	}
	// A change of nothing writes nothing; an error of Change stores nothing.
	if _, err := f.campaigns.Update(ctx, c.ID, ports.CampaignUpdate{Action: domain.AuditCampaignUpdate,
		Change: func(c domain.Campaign) (domain.Campaign, error) { return c, nil }}); err != nil {
		t.Fatalf("Update of nothing: %v", err)
	}
	boom := errors.New("boom")
	if _, err := f.campaigns.Update(ctx, c.ID, ports.CampaignUpdate{Action: domain.AuditCampaignUpdate,
		Change: func(c domain.Campaign) (domain.Campaign, error) { return c.Apply(edit) },
		Commit: func(context.Context, domain.Campaign, domain.Campaign) error { return boom }}); !errors.Is(err, boom) {
		t.Fatalf("Update whose Commit fails = %v, want its error", err)
	}
	if _, err := f.campaigns.Update(ctx, 999999, ports.CampaignUpdate{Action: domain.AuditCampaignUpdate,
		Change: func(c domain.Campaign) (domain.Campaign, error) { return c, nil }}); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("Update of an unknown campaign = %v, want ErrNotFound", err)
	}

	ends := t0.Add(time.Hour).UTC().Format(domain.StampLayout)
	wantLines(t, "campaign entries", campaignEntries(t, f.log), []string{
		fmt.Sprintf(`campaign.update %d 0 {"cap":5,"title":"Sneaker drop"} {"cap":3,"title":"Sneaker drop, second run"}`, c.ID),
		fmt.Sprintf(`campaign.create %d 0  {"begins_at":"%s","cap":null,"ends_at":"%s","per_user_limit":1,"title":"drop of 0"}`,
			third.ID, t0.UTC().Format(domain.StampLayout), ends),
		fmt.Sprintf(`campaign.create %d 0  {"begins_at":"%s","cap":null,"ends_at":"%s","per_user_limit":1,"title":"drop of 0"}`,
			second.ID, t0.UTC().Format(domain.StampLayout), ends),
		fmt.Sprintf(`campaign.create %d 0  {"begins_at":"%s","cap":5,"challenge":"pow","ends_at":"%s","per_user_limit":2,"pow_difficulty":8,"title":"Sneaker drop"}`,
			c.ID, t0.UTC().Format(domain.StampLayout), ends),
	})
}

// TestCampaignEntriesRoundTrip: an entry appended with a campaign reads back with it,
// and the entries of no campaign without one.
func TestCampaignEntriesRoundTrip(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	log := sqlstore.NewAuditLog(openMigrated(t))
	for _, e := range []domain.AuditEntry{
		{Actor: "a", Action: domain.AuditCampaignUpdate, CampaignID: 7},
		{Actor: "b", Action: domain.AuditVoucherUpdate, VoucherID: 3},
	} {
		if err := log.Append(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	es, err := log.List(ctx, ports.AuditQuery{Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(es) != 2 || es[0].VoucherID != 3 || es[0].CampaignID != 0 || es[1].CampaignID != 7 || es[1].VoucherID != 0 {
		t.Fatalf("entries = %+v", es)
	}
}

// TestCampaignVariants: a voucher created with a campaign is its next variant, its id
// in the campaign's block and the campaign's window, admission and challenge its own;
// the campaign counts it; the vouchers listed by campaign are its own. An unknown
// campaign is a validation error on campaign_id.
func TestCampaignVariants(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newCampaignFixture(t)
	c := f.campaign(t, 3, 0)
	other := f.campaign(t, 3, 0)
	plain := f.voucher(t, 10)

	// The voucher's own window is the campaign's whatever it asks.
	v := domain.Voucher{Title: "small", Stock: 10, CampaignID: c.ID, BeginsAt: t0.Add(-time.Hour), EndsAt: t0.Add(9 * time.Hour)}
	if err := f.vouchers.Create(ctx, &v, domain.Author{}, nil); err != nil {
		t.Fatalf("Create variant: %v", err)
	}
	second := f.variant(t, c.ID, 20, 2)
	f.variant(t, other.ID, 5, 1)
	if v.ID != c.ID.Variant(1) || second.ID != c.ID.Variant(2) || v.CampaignID != c.ID || second.CampaignID != c.ID {
		t.Fatalf("variants %d (campaign %d), %d (campaign %d); want %d, %d of campaign %d",
			v.ID, v.CampaignID, second.ID, second.CampaignID, c.ID.Variant(1), c.ID.Variant(2), c.ID)
	}
	if !v.BeginsAt.Equal(c.BeginsAt) || !v.EndsAt.Equal(c.EndsAt) || v.PerUserLimit != 3 || v.Admission != domain.AdmissionFirstCome {
		t.Fatalf("variant = %+v, want the campaign's window and its per-user limit", v)
	}
	got, err := f.vouchers.Get(ctx, v.ID)
	if err != nil || got != v {
		t.Fatalf("Get(variant) = %+v, %v; want %+v", got, err, v)
	}
	if n := f.get(t, c.ID).Variants; n != 2 {
		t.Fatalf("campaign counts %d variants, want 2", n)
	}

	listed, err := f.vouchers.List(ctx, ports.VoucherQuery{Campaign: c.ID, Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	var ids []domain.VoucherID
	for _, l := range listed {
		ids = append(ids, l.ID)
	}
	if want := []domain.VoucherID{second.ID, v.ID}; !slices.Equal(ids, want) {
		t.Fatalf("vouchers of campaign %d = %v, want %v", c.ID, ids, want)
	}
	if all := list(t, f.vouchers); len(all) != 4 || all[len(all)-1].ID != plain || all[len(all)-1].CampaignID != 0 {
		t.Fatalf("all vouchers = %+v", all)
	}

	for name, bad := range map[string]domain.Voucher{
		"unknown campaign":         {Title: "x", Stock: 1, CampaignID: other.ID + 100},
		"limit above the campaign": {Title: "x", Stock: 10, PerUserLimit: 4, CampaignID: c.ID},
	} {
		err := f.vouchers.Create(ctx, &bad, domain.Author{}, nil)
		var invalid *domain.ValidationError
		if !errors.As(err, &invalid) {
			t.Fatalf("%s: Create = %v, want a validation error", name, err)
		}
	}
	if n := f.get(t, c.ID).Variants; n != 2 {
		t.Fatalf("campaign counts %d variants after refused creations, want 2", n)
	}
}

// TestVoucherIDsStayBelowTheCampaignsBlock: a variant's explicit id moves neither the
// identity nor SQLite's AUTOINCREMENT, so the next voucher of no campaign takes the
// id after the last such voucher's, and on SQLite sqlite_sequence stays below 2^40.
func TestVoucherIDsStayBelowTheCampaignsBlock(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newCampaignFixture(t)
	first := f.voucher(t, 10)
	c := f.campaign(t, 1, 0)
	f.variant(t, c.ID, 10, 1)
	f.variant(t, c.ID, 10, 1)
	next := f.voucher(t, 10)
	if next != first+1 {
		t.Fatalf("the voucher after two variants got id %d, want %d", next, first+1)
	}
	imported, err := f.vouchers.Import(ctx, []domain.Voucher{{Title: "seeded", Stock: 1, PerUserLimit: 1,
		BeginsAt: t0, EndsAt: t0.Add(time.Hour)}})
	if err != nil {
		t.Fatalf("Import: %v", err)
	}
	if imported[0].ID != next+1 {
		t.Fatalf("an imported voucher got id %d, want %d", imported[0].ID, next+1)
	}
	if sqlstore.IsSQLite(f.db) {
		var seq int64
		if err := f.db.NewRaw("SELECT seq FROM sqlite_sequence WHERE name = 'vouchers'").Scan(ctx, &seq); err != nil {
			t.Fatal(err)
		}
		if seq != int64(imported[0].ID) {
			t.Fatalf("sqlite_sequence holds %d for vouchers, want %d (the last voucher of no campaign)", seq, imported[0].ID)
		}
	}
}

// TestCampaignUpdateMovesItsVouchersWindow: a campaign's vouchers always share its
// window; its end moved moves theirs, each one's version one more, and leaves the
// other vouchers alone. A cap below the units sold stores nothing.
func TestCampaignUpdateMovesItsVouchersWindow(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newCampaignFixture(t)
	c := f.campaign(t, 2, 10)
	a, b := f.variant(t, c.ID, 10, 2), f.variant(t, c.ID, 10, 2)
	plain := f.voucher(t, 10)
	f.persisted(t, reserve(1, a.ID, 1, 2), reserve(2, b.ID, 2, 2))

	// The window to the millisecond, as domain.Campaign.Apply keeps it.
	ends := t0.Add(30 * time.Minute).UTC().Truncate(time.Millisecond)
	got, err := f.edit(c.ID, domain.CampaignEdit{EndsAt: &ends})
	if err != nil {
		t.Fatalf("Update: %v", err)
	}
	if !got.EndsAt.Equal(ends) || got.Sold != 4 {
		t.Fatalf("Update returned %+v, want ends at %v, sold 4", got, ends)
	}
	for _, v := range []domain.Voucher{a, b} {
		stored, err := f.vouchers.Get(ctx, v.ID)
		if err != nil {
			t.Fatal(err)
		}
		if !stored.EndsAt.Equal(ends) || stored.Version != v.Version+1 || !stored.BeginsAt.Equal(v.BeginsAt) {
			t.Fatalf("variant %d = %+v after the campaign's end moved to %v", v.ID, stored, ends)
		}
	}
	if stored, _ := f.vouchers.Get(ctx, plain); stored.Version != 0 || !stored.EndsAt.Equal(t0.Add(time.Hour).Truncate(time.Microsecond)) {
		t.Fatalf("a voucher of no campaign changed: %+v", stored)
	}

	entriesBefore := len(campaignEntries(t, f.log))
	three := 3
	_, err = f.edit(c.ID, domain.CampaignEdit{Cap: &three})
	if !errors.Is(err, domain.ErrNotEnoughUnits) {
		t.Fatalf("a cap of 3 under 4 sold = %v, want ErrNotEnoughUnits", err)
	}
	if stored := f.get(t, c.ID); *stored.Cap != 10 || stored.Version != got.Version {
		t.Fatalf("a refused cap stored %+v", stored)
	}
	if n := len(campaignEntries(t, f.log)); n != entriesBefore {
		t.Fatalf("a refused cap wrote %d entries", n-entriesBefore)
	}
	four := 4
	if _, err = f.edit(c.ID, domain.CampaignEdit{Cap: &four}); err != nil {
		t.Fatalf("a cap of exactly the units sold: %v", err)
	}
}

// TestCampaignUpdatedEvent: WithOutbox, a change of a campaign writes campaign.updated
// with the campaign as it now is; a new end writes, in the same transaction,
// voucher.updated for each of its vouchers with the window it moved to (their
// subscribers learn of it as of any voucher's edit), and a change that moves no
// window writes none of the vouchers'.
func TestCampaignUpdatedEvent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newCampaignFixture(t)
	f.campaigns = f.campaigns.WithOutbox()
	c := f.campaign(t, 2, 0)
	f.variant(t, c.ID, 5, 1)
	f.variant(t, c.ID, 3, 1)
	later := c.EndsAt.Add(time.Hour)
	after, err := f.edit(c.ID, domain.CampaignEdit{EndsAt: &later})
	if err != nil {
		t.Fatal(err)
	}
	ends := after.EndsAt
	ds, err := sqlstore.NewWebhooks(f.db).List(ctx, ports.DeliveryQuery{Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	var moved []domain.VoucherID
	campaigns := 0
	for _, d := range ds {
		switch {
		case d.Type == domain.EventCampaignUpdated && d.Campaign != nil && d.Campaign.EndsAt.Equal(ends):
			campaigns++
		case d.Type == domain.EventVoucherUpdated && d.Voucher != nil && d.Voucher.EndsAt.Equal(ends) &&
			d.Voucher.CampaignID == c.ID:
			moved = append(moved, d.Voucher.ID)
		default:
			t.Fatalf("delivery %+v (voucher %+v): want campaign.updated or voucher.updated at the new end", d, d.Voucher)
		}
	}
	slices.Sort(moved)
	if campaigns != 1 || !slices.Equal(moved, []domain.VoucherID{c.ID.Variant(1), c.ID.Variant(2)}) {
		t.Fatalf("deliveries = %+v, want one campaign.updated and voucher.updated of both vouchers", ds)
	}

	title := "renamed"
	if _, err := f.edit(c.ID, domain.CampaignEdit{Title: &title}); err != nil {
		t.Fatal(err)
	}
	if ds, err = sqlstore.NewWebhooks(f.db).List(ctx, ports.DeliveryQuery{Limit: 10}); err != nil || len(ds) != 4 {
		t.Fatalf("deliveries after a rename: %d, %v; want one more (campaign.updated)", len(ds), err)
	}
	renamed := 0
	for _, d := range ds {
		if d.Type == domain.EventCampaignUpdated && d.Campaign.Title == title && d.Campaign.Variants == 2 && d.Campaign.Cap == nil {
			renamed++
		}
	}
	if renamed != 1 {
		t.Fatalf("deliveries = %+v, want one campaign.updated of the renamed campaign", ds)
	}
}

// wantRefusedBy fails unless err is the database refusing a statement by the CHECK
// constraint named (on PostgreSQL a check_violation naming it, raised by a CHECK or a
// trigger's function; on SQLite a CHECK, or the trigger that stands in for one, which
// raises the name).
func wantRefusedBy(t *testing.T, err error, constraint string) {
	t.Helper()
	var liteErr *sqlite.Error
	if errors.As(err, &liteErr) {
		code := liteErr.Code()
		if (code != sqlite3.SQLITE_CONSTRAINT_CHECK && code != sqlite3.SQLITE_CONSTRAINT_TRIGGER) ||
			!strings.HasSuffix(liteErr.Error(), fmt.Sprintf("failed: %s (%d)", constraint, code)) {
			t.Fatalf("error = %v, want SQLite refusing by %s", err, constraint)
		}
		return
	}
	wantViolation(t, err, checkViolation, constraint)
}

// insertVoucher inserts a voucher row as is, id and campaign_id (nil: NULL) included.
func insertVoucher(db bun.IDB, id int64, campaign *int64) error {
	overriding := ""
	if !sqlstore.IsSQLite(db) {
		overriding = "OVERRIDING SYSTEM VALUE"
	}
	_, err := db.NewRaw(`INSERT INTO vouchers (id, campaign_id, title, stock, begins_at, ends_at) ?
		VALUES (?, ?, 'raw', 10, ?, ?)`, bun.Safe(overriding), id, campaign, t0.UTC(), t0.Add(time.Hour).UTC()).
		Exec(context.Background())
	return err
}

// TestCampaignNet: the schema refuses what would break a campaign, whoever writes it:
// a sold past the cap, a user's units past the limit, a voucher id outside the
// scheme. Closing orders stays possible under a limit lowered below what a user holds.
func TestCampaignNet(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newCampaignFixture(t)
	c := f.campaign(t, 2, 5)
	a, b, third := f.variant(t, c.ID, 10, 2), f.variant(t, c.ID, 10, 2), f.variant(t, c.ID, 10, 2)

	setSold := func(v domain.VoucherID, sold int) error {
		_, err := f.db.NewRaw("UPDATE vouchers SET sold = ? WHERE id = ?", sold, int64(v)).Exec(ctx)
		return err
	}
	if err := setSold(a.ID, 3); err != nil {
		t.Fatalf("sell 3 of a cap of 5: %v", err)
	}
	wantRefusedBy(t, setSold(b.ID, 3), "campaigns_sold_check")
	if err := setSold(b.ID, 2); err != nil {
		t.Fatalf("sell the cap's last 2: %v", err)
	}
	if got := f.get(t, c.ID).Sold; got != 5 {
		t.Fatalf("campaign sold = %d after its vouchers' 3 and 2", got)
	}
	for _, v := range []domain.VoucherID{a.ID, b.ID} {
		if err := setSold(v, 0); err != nil {
			t.Fatal(err)
		}
	}
	if got := f.get(t, c.ID).Sold; got != 0 {
		t.Fatalf("campaign sold = %d after its vouchers' went back to 0", got)
	}

	// User 7 holds 2 units, the limit: a third, of any variant, is refused.
	mustInsertOrder(t, f.db, "01KB0000000000000000000001", a.ID, 7, domain.StatusAwaitingPayment)
	mustInsertOrder(t, f.db, "01KB0000000000000000000002", b.ID, 7, domain.StatusPaid)
	wantRefusedBy(t, insertOrder(f.db, "01KB0000000000000000000003", third.ID, 7, domain.StatusQueued),
		"campaign_units_limit_check")
	_, err := f.db.NewRaw("UPDATE orders SET quantity = 2 WHERE id = '01KB0000000000000000000001'").Exec(ctx)
	wantRefusedBy(t, err, "campaign_units_limit_check")
	// A failed order holds nothing and passes; so does another user's order.
	mustInsertOrder(t, f.db, "01KB0000000000000000000004", third.ID, 7, domain.StatusFailed)
	mustInsertOrder(t, f.db, "01KB0000000000000000000005", third.ID, 8, domain.StatusQueued)
	_, err = f.db.NewRaw("UPDATE orders SET status = 'awaiting_payment' WHERE id = '01KB0000000000000000000004'").Exec(ctx)
	wantRefusedBy(t, err, "campaign_units_limit_check")

	// The limit lowered below what user 7 holds: closing an order passes, a new one
	// does not.
	if _, err := f.db.NewRaw("UPDATE campaigns SET per_user_limit = 1 WHERE id = ?", int64(c.ID)).Exec(ctx); err != nil {
		t.Fatal(err)
	}
	mustInsertOrder(t, f.db, "01KB0000000000000000000006", a.ID, 9, domain.StatusQueued)
	setStatus(t, f.db, "01KB0000000000000000000002", domain.StatusCancelled)
	if units := userUnits(t, f.db, c.ID); !mapsEqual(units, map[domain.UserID]int{7: 1, 8: 1, 9: 1}) {
		t.Fatalf("campaign units = %v", units)
	}
	if _, err := f.db.NewRaw("DELETE FROM orders WHERE id = '01KB0000000000000000000006'").Exec(ctx); err != nil {
		t.Fatal(err)
	}
	if units, want := userUnits(t, f.db, c.ID), liveUserUnits(t, f.db, c.ID); !mapsEqual(units, want) {
		t.Fatalf("campaign units = %v after a delete, live orders hold %v", units, want)
	}

	// The id scheme: a voucher in a campaign's block names that campaign, and no
	// other voucher names one.
	id := int64(c.ID.Variant(9))
	cid, wrong := int64(c.ID), int64(c.ID)+1
	wantRefusedBy(t, insertVoucher(f.db, id, nil), "vouchers_campaign_check")
	wantRefusedBy(t, insertVoucher(f.db, id, &wrong), "vouchers_campaign_check")
	wantRefusedBy(t, insertVoucher(f.db, int64(c.ID.Variant(1001)), &cid), "vouchers_campaign_check")
	wantRefusedBy(t, insertVoucher(f.db, 1000, &cid), "vouchers_campaign_check")
	plain := f.voucher(t, 10)
	_, err = f.db.NewRaw("UPDATE vouchers SET campaign_id = ? WHERE id = ?", cid, int64(plain)).Exec(ctx)
	wantRefusedBy(t, err, "vouchers_campaign_check")
	if err := insertVoucher(f.db, id, &cid); err != nil {
		t.Fatalf("a voucher in the scheme: %v", err)
	}
}

// TestCampaignWithAWaitingRoomReadsBack: a campaign's waiting room (its settings and
// seed) is stored and read back, and its vouchers are stored with them.
func TestCampaignWithAWaitingRoomReadsBack(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newCampaignFixture(t)
	c := domain.Campaign{Title: "room", BeginsAt: t0, EndsAt: t0.Add(time.Hour), PerUserLimit: 1,
		Admission: domain.AdmissionWaitingRoom}
	c = c.WithAdmissionDefaults(t0.Add(-time.Hour))
	c.QueueWindow = 7
	seed := c.Seed
	if err := f.campaigns.Create(ctx, &c, domain.Author{Actor: "admin"}, nil); err != nil {
		t.Fatal(err)
	}
	got, err := f.campaigns.Get(ctx, c.ID)
	if err != nil || got.Seed != seed || got.QueueWindow != 7 || !got.QueueOpensAt.Equal(t0.Add(-domain.DefaultQueueLead).Truncate(time.Microsecond)) ||
		got.Admission != domain.AdmissionWaitingRoom {
		t.Fatalf("Get = %+v, %v", got, err)
	}
	v := f.variant(t, c.ID, 5, 1)
	if v.Seed != seed || v.QueueWindow != 7 || v.Admission != domain.AdmissionWaitingRoom {
		t.Fatalf("its voucher %+v", v)
	}
}
