package application_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/seckill/seckill/adapters/memory"
	"github.com/seckill/seckill/application"
	"github.com/seckill/seckill/domain"
	"github.com/seckill/seckill/ports"
)

// drop wires the campaigns' use cases, the creation and the grab of their vouchers,
// and fulfillment over the in-memory fakes, the sale's clock at t0.
type drop struct {
	vouchers  *memory.Vouchers
	campaigns *memory.Campaigns
	stock     *memory.Stock
	clock     *memory.Clock
	queue     *memory.Queue
	orders    *memory.Orders
	changes   *memory.Changes

	create  *application.CreateCampaign
	get     *application.GetCampaign
	list    *application.ListCampaigns
	update  *application.UpdateCampaign
	stats   *application.GetCampaignStats
	voucher *application.CreateVoucher
	grab    *application.GrabVoucher
	fulfill *application.FulfillOrder
}

func newDrop(t *testing.T) drop {
	t.Helper()
	d := drop{vouchers: memory.NewVouchers(), stock: memory.NewStock(), clock: memory.NewClock(t0), queue: &memory.Queue{},
		changes: memory.NewChanges()}
	d.campaigns = memory.NewCampaigns(d.vouchers)
	d.orders = memory.NewOrders(d.vouchers)
	d.stock.Clock, d.stock.Queue = d.clock, d.queue
	d.create = application.NewCreateCampaign(d.campaigns, d.stock, d.clock)
	d.get = application.NewGetCampaign(d.campaigns, d.vouchers, d.stock, d.clock)
	d.list = application.NewListCampaigns(d.campaigns, d.vouchers, d.stock, d.clock)
	d.update = application.NewUpdateCampaign(d.campaigns, d.vouchers, d.stock, d.stock, d.clock, d.changes)
	d.stats = application.NewGetCampaignStats(d.campaigns,
		application.NewGetVoucherStats(d.vouchers, d.orders, d.stock, d.clock, nil))
	d.voucher = application.NewCreateVoucher(d.vouchers, d.stock, d.clock).WithCampaigns(d.campaigns, d.stock)
	gate := application.NewBuyerGate(d.vouchers, d.clock, application.GateOptions{SoldOutTTL: time.Second})
	d.grab = application.NewGrabVoucher(d.stock, d.clock, &memory.OrderIDs{}, nil, gate, application.GrabOptions{})
	d.fulfill = application.NewFulfillOrder(d.orders, d.queue, application.NewCompensate(d.stock, d.orders), d.changes, 5)
	return d
}

// campaign creates a campaign on sale from t0 for an hour, with a per-user limit and
// a cap (nil: none).
func (d drop) campaign(t *testing.T, limit int, capped *int) application.LiveCampaign {
	t.Helper()
	c, err := d.create.Handle(context.Background(), application.CreateCampaignCmd{Title: "Sneakers", BeginsAt: t0,
		EndsAt: t0.Add(time.Hour), PerUserLimit: limit, Cap: capped})
	if err != nil {
		t.Fatalf("create campaign: %v", err)
	}
	return c
}

// variant creates a voucher of stock units in campaign c, its per-user limit the
// campaign's.
func (d drop) variant(t *testing.T, c domain.CampaignID, title string, stock int) domain.VoucherID {
	t.Helper()
	v, err := d.voucher.Handle(context.Background(), application.CreateVoucherCmd{Title: title, Stock: stock, CampaignID: c})
	if err != nil {
		t.Fatalf("create voucher %s of campaign %s: %v", title, c, err)
	}
	return v.ID
}

func (d drop) grabAs(user domain.UserID, v domain.VoucherID, qty int) (domain.Reservation, error) {
	return d.grab.Handle(context.Background(), application.GrabVoucherCmd{VoucherID: v, UserID: user, Quantity: qty})
}

func (d drop) mustGrab(t *testing.T, user domain.UserID, v domain.VoucherID, qty int) domain.Reservation {
	t.Helper()
	r, err := d.grabAs(user, v, qty)
	if err != nil {
		t.Fatalf("grab of %s by %d: %v", v, user, err)
	}
	return r
}

// entries returns the audit log's entries of campaign id itself (not of its
// vouchers), oldest first.
func (d drop) entries(id domain.CampaignID) []domain.AuditEntry {
	var out []domain.AuditEntry
	for _, e := range d.vouchers.Log.Entries() {
		if e.CampaignID == id && e.VoucherID == 0 {
			out = append(out, e)
		}
	}
	return out
}

// sameJSON fails unless got holds the JSON object want.
func sameJSON(t *testing.T, what string, got json.RawMessage, want string) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("%s: %q: %v", what, got, err)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatal(err)
	}
	gb, _ := json.Marshal(g)
	wb, _ := json.Marshal(w)
	if string(gb) != string(wb) {
		t.Fatalf("%s = %s, want %s", what, gb, wb)
	}
}

// TestCreateCampaign: a campaign is stored with its defaults and its audit entry,
// its terms go to the grab path, and it reads back; a bad one, or one where the stock
// keeps no campaign, stores nothing.
func TestCreateCampaign(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := newDrop(t)
	by := domain.Author{Actor: "1", RequestID: "req-1"}
	c, err := d.create.Handle(ctx, application.CreateCampaignCmd{Title: "Sneakers", BeginsAt: t0.Add(time.Hour),
		EndsAt: t0.Add(2 * time.Hour), PerUserLimit: 2, Cap: units(3), Challenge: domain.ChallengePow, By: by})
	if err != nil {
		t.Fatal(err)
	}
	if c.ID != 1 || c.Admission != domain.AdmissionFirstCome || c.PowDifficulty != domain.DefaultPowDifficulty ||
		c.State != domain.StateUpcoming || c.Remaining != 0 || c.Warming != nil || *c.Cap != 3 {
		t.Fatalf("created %+v", c)
	}
	got, err := d.get.Handle(ctx, c.ID)
	if err != nil || got.Title != "Sneakers" || got.PerUserLimit != 2 || got.State != domain.StateUpcoming {
		t.Fatalf("get = %+v, %v", got, err)
	}
	es := d.entries(c.ID)
	if len(es) != 1 || es[0].Action != domain.AuditCampaignCreate || es[0].Actor != "1" || es[0].RequestID != "req-1" || es[0].Before != nil {
		t.Fatalf("audit entries %+v, want one campaign.create", es)
	}
	sameJSON(t, "created entry's after", es[0].After, `{"title":"Sneakers","begins_at":"2026-11-29T13:00:00.000Z",
		"ends_at":"2026-11-29T14:00:00.000Z","per_user_limit":2,"cap":3,"challenge":"pow","pow_difficulty":16}`)

	if _, err := d.get.Handle(ctx, 99); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("unknown campaign: %v, want not found", err)
	}
	for name, cmd := range map[string]application.CreateCampaignCmd{
		"no title":     {BeginsAt: t0, EndsAt: t0.Add(time.Hour), PerUserLimit: 1},
		"no limit":     {Title: "x", BeginsAt: t0, EndsAt: t0.Add(time.Hour)},
		"ended":        {Title: "x", BeginsAt: t0.Add(-2 * time.Hour), EndsAt: t0.Add(-time.Hour), PerUserLimit: 1},
		"cap 0":        {Title: "x", BeginsAt: t0, EndsAt: t0.Add(2 * time.Hour), PerUserLimit: 1, Cap: units(0)},
		"draw begun":   {Title: "x", BeginsAt: t0, EndsAt: t0.Add(2 * time.Hour), PerUserLimit: 1, Admission: domain.AdmissionDraw},
		"queue window": {Title: "x", BeginsAt: t0, EndsAt: t0.Add(2 * time.Hour), PerUserLimit: 1, Admission: domain.AdmissionWaitingRoom, QueueWindow: -1},
	} {
		if _, err := d.create.Handle(ctx, cmd); !errors.Is(err, domain.ErrInvalid) {
			t.Errorf("%s: %v, want invalid", name, err)
		}
	}
	if page, _ := d.list.Handle(ctx, 0, ""); len(page.Campaigns) != 1 {
		t.Fatalf("campaigns stored: %d, want the one created", len(page.Campaigns))
	}
}

// TestListCampaignsPages: newest first, a page at a time, the last page without a
// cursor; a cursor of another list, or a malformed one, is refused.
func TestListCampaignsPages(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := newDrop(t)
	for range 5 {
		d.campaign(t, 1, nil)
	}
	var got [][]domain.CampaignID
	cursor := ""
	for {
		page, err := d.list.Handle(ctx, 2, cursor)
		if err != nil {
			t.Fatal(err)
		}
		var ids []domain.CampaignID
		for _, c := range page.Campaigns {
			ids = append(ids, c.ID)
		}
		got = append(got, ids)
		if cursor = page.NextCursor; cursor == "" {
			break
		}
	}
	if want := [][]domain.CampaignID{{5, 4}, {3, 2}, {1}}; !slices.EqualFunc(got, want, slices.Equal) {
		t.Fatalf("pages = %v, want %v", got, want)
	}
	// A cursor of the vouchers' list is not one of this list.
	for _, title := range []string{"a", "b"} {
		if _, err := d.voucher.Handle(ctx, application.CreateVoucherCmd{Title: title, Stock: 1, BeginsAt: t0,
			EndsAt: t0.Add(time.Hour), PerUserLimit: 1}); err != nil {
			t.Fatal(err)
		}
	}
	vouchers, err := application.NewListVouchers(d.vouchers, d.stock, d.clock).Handle(ctx, application.ListVouchersQuery{Limit: 1})
	if err != nil || vouchers.NextCursor == "" {
		t.Fatalf("vouchers' first page: %+v, %v", vouchers, err)
	}
	for _, bad := range []string{vouchers.NextCursor, "not a cursor", "Yw"} {
		if _, err := d.list.Handle(ctx, 2, bad); !errors.Is(err, domain.ErrInvalid) {
			t.Errorf("cursor %q: %v, want invalid", bad, err)
		}
	}
	if _, err := d.list.Handle(ctx, application.MaxPageLimit+1, ""); !errors.Is(err, domain.ErrInvalid) {
		t.Fatalf("limit over the most: %v, want invalid", err)
	}
}

// TestCreateVoucherInACampaign: a campaign's voucher takes the campaign's window,
// admission and challenge, the next id of the campaign's block and, when it asks for
// none, the campaign's per-user limit; the campaign counts it, on the grab path too.
func TestCreateVoucherInACampaign(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := newDrop(t)
	c, err := d.create.Handle(ctx, application.CreateCampaignCmd{Title: "Sneakers", BeginsAt: t0, EndsAt: t0.Add(time.Hour),
		PerUserLimit: 2, Challenge: domain.ChallengePow, PowDifficulty: 4})
	if err != nil {
		t.Fatal(err)
	}
	s, err := d.voucher.Handle(ctx, application.CreateVoucherCmd{Title: "S", Stock: 1, CampaignID: c.ID})
	if err != nil {
		t.Fatal(err)
	}
	if s.ID != c.ID.Variant(1) || s.CampaignID != c.ID || !s.BeginsAt.Equal(c.BeginsAt) || !s.EndsAt.Equal(c.EndsAt) ||
		s.Admission != domain.AdmissionFirstCome || s.Challenge != domain.ChallengePow || s.PowDifficulty != 4 ||
		s.PerUserLimit != 1 || s.State != domain.StateLive {
		t.Fatalf("voucher S = %+v: want the campaign's first, its window and challenge, the limit at most its stock", s.Voucher)
	}
	m := d.variant(t, c.ID, "M", 5)
	if got, _ := d.vouchers.Get(ctx, m); m != c.ID.Variant(2) || got.PerUserLimit != 2 {
		t.Fatalf("voucher M = %+v, want the campaign's second with its limit", got)
	}
	live, err := d.get.Handle(ctx, c.ID)
	if err != nil || !slices.Equal(live.VoucherIDs(), []domain.VoucherID{s.ID, m}) || live.Remaining != 6 {
		t.Fatalf("campaign = %+v, %v: want both vouchers and their 6 units", live, err)
	}
	// Outside the campaign the numbering goes on as before.
	plain, err := d.voucher.Handle(ctx, application.CreateVoucherCmd{Title: "plain", Stock: 1, BeginsAt: t0,
		EndsAt: t0.Add(time.Hour), PerUserLimit: 1})
	if err != nil || plain.ID != 1 || plain.CampaignID != 0 {
		t.Fatalf("a voucher in no campaign: %+v, %v", plain.Voucher, err)
	}

	for name, tc := range map[string]struct {
		cmd   application.CreateVoucherCmd
		field string
	}{
		"a limit above the campaign's": {application.CreateVoucherCmd{Title: "L", Stock: 5, PerUserLimit: 3, CampaignID: c.ID}, "per_user_limit"},
		"an unknown campaign":          {application.CreateVoucherCmd{Title: "L", Stock: 5, CampaignID: 99}, "campaign_id"},
	} {
		_, err := d.voucher.Handle(ctx, tc.cmd)
		if ve, ok := errors.AsType[*domain.ValidationError](err); !ok || ve.Field != tc.field {
			t.Errorf("%s: %v, want invalid %s", name, err, tc.field)
		}
	}
	without := application.NewCreateVoucher(d.vouchers, d.stock, d.clock)
	if _, err := without.Handle(ctx, application.CreateVoucherCmd{Title: "L", Stock: 5, CampaignID: c.ID}); !errors.Is(err, domain.ErrInvalid) {
		t.Errorf("a use case given no campaigns: %v, want invalid (no such campaign)", err)
	}
	if got, _ := d.get.Handle(ctx, c.ID); got.Variants != 2 {
		t.Fatalf("the campaign holds %d vouchers after the refusals, want 2", got.Variants)
	}
}

// TestGrabsOfACampaign: a drop in sizes with a cap of 3 and a limit of 2 a user across
// its vouchers. The limit refuses a third unit with every order the user holds of the
// campaign; the cap refuses a voucher with units left (campaign sold out, not the
// voucher's sold-out flag: units the cap gets back sell again); a voucher with none
// left is sold out.
func TestGrabsOfACampaign(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := newDrop(t)
	c := d.campaign(t, 2, units(3))
	s, m, l := d.variant(t, c.ID, "S", 1), d.variant(t, c.ID, "M", 2), d.variant(t, c.ID, "L", 2)

	first, second := d.mustGrab(t, 1, s, 1), d.mustGrab(t, 1, m, 1)
	_, err := d.grabAs(1, l, 1)
	ap, ok := errors.AsType[*domain.AlreadyPurchasedError](err)
	if !ok || ap.OrderID != first.OrderID || !slices.Equal(ap.Orders, []domain.OrderID{first.OrderID, second.OrderID}) {
		t.Fatalf("a third unit over the campaign's limit: %v (%+v), want already purchased naming both orders", err, ap)
	}
	// Its own voucher again: the order it holds of it, alone.
	if _, err := d.grabAs(1, m, 1); !errors.As(err, &ap) || ap.OrderID != second.OrderID || ap.Orders != nil {
		t.Fatalf("M again: %v, want already purchased naming its order of M", err)
	}
	if _, err := d.grabAs(2, s, 1); !errors.Is(err, domain.ErrSoldOut) {
		t.Fatalf("S, none left: %v, want sold out", err)
	}
	d.mustGrab(t, 2, l, 1)
	before := len(d.stock.Reserved)
	if _, err := d.grabAs(3, m, 1); !errors.Is(err, domain.ErrCampaignSoldOut) || errors.Is(err, domain.ErrSoldOut) {
		t.Fatalf("M with a unit left, the cap reached: %v, want campaign sold out", err)
	}
	if got := len(d.stock.Reserved); got != before {
		t.Fatalf("a refused grab reserved: %d reservations, want %d", got, before)
	}
	live, err := d.get.Handle(ctx, c.ID)
	if err != nil || live.Remaining != 0 || live.State != domain.StateSoldOut {
		t.Fatalf("campaign at its cap: %+v, %v; want 0 remaining, sold out", live, err)
	}
	// User 1's S comes back: the cap has a unit again, and M sells it.
	if ok, err := d.stock.Release(ctx, domain.Order{ID: first.OrderID, VoucherID: s, UserID: 1, Quantity: 1}); !ok || err != nil {
		t.Fatalf("release: %v, %v", ok, err)
	}
	d.mustGrab(t, 3, m, 1)
	if _, err := d.grabAs(4, l, 1); !errors.Is(err, domain.ErrCampaignSoldOut) {
		t.Fatalf("L at the cap again: %v, want campaign sold out", err)
	}
}

// TestGrabOfACampaignWithoutItsTerms: a stock that holds the voucher's sale but not
// its campaign's terms has no sale state for it; the grab's rebuild loads them.
func TestGrabOfACampaignWithoutItsTerms(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := newDrop(t)
	c := d.campaign(t, 1, nil)
	v := d.variant(t, c.ID, "S", 3)
	// Another stock, as Redis restarted empty, given the voucher's sale alone.
	stock := memory.NewStock()
	stock.Clock = d.clock
	vouch, _ := d.vouchers.Get(ctx, v)
	if _, err := stock.Warm(ctx, vouch); err != nil {
		t.Fatal(err)
	}
	gate := application.NewBuyerGate(d.vouchers, d.clock, application.GateOptions{})
	bare := application.NewGrabVoucher(stock, d.clock, &memory.OrderIDs{}, nil, gate, application.GrabOptions{})
	cmd := application.GrabVoucherCmd{VoucherID: v, UserID: 7, Quantity: 1}
	if _, err := bare.Handle(ctx, cmd); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("grab without the campaign's terms: %v, want not found (no sale state)", err)
	}
	recovery := application.NewRecoverVoucher(d.vouchers, stock, stock, d.orders, d.clock).WithCampaigns(d.campaigns, stock)
	healing := application.NewGrabVoucher(stock, d.clock, &memory.OrderIDs{}, recovery, gate, application.GrabOptions{})
	if _, err := healing.Handle(ctx, cmd); err != nil {
		t.Fatalf("grab with the rebuild: %v", err)
	}
}

// TestUpdateCampaign: a change of the cap, the limit, the title and the end, each
// stored with its audit entry and carried to the grab path; a cap below the units the
// grab path holds taken is refused there and changes nothing.
func TestUpdateCampaign(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := newDrop(t)
	c := d.campaign(t, 2, units(2))
	a, b := d.variant(t, c.ID, "A", 5), d.variant(t, c.ID, "B", 5)
	d.mustGrab(t, 1, a, 1)
	r2 := d.mustGrab(t, 2, a, 1)
	if _, err := d.grabAs(3, b, 1); !errors.Is(err, domain.ErrCampaignSoldOut) {
		t.Fatalf("at the cap: %v, want campaign sold out", err)
	}
	by := domain.Author{Actor: "1", RequestID: "req-2"}
	edit := func(e domain.CampaignEdit) (application.LiveCampaign, error) {
		return d.update.Handle(ctx, application.UpdateCampaignCmd{ID: c.ID, Edit: e, By: by})
	}

	raised, err := edit(domain.CampaignEdit{Cap: units(3)})
	if err != nil || *raised.Cap != 3 || raised.Remaining != 1 || raised.State != domain.StateLive || raised.Version != 1 {
		t.Fatalf("raise the cap: %+v, %v; want cap 3, 1 remaining, live", raised, err)
	}
	es := d.entries(c.ID)
	if last := es[len(es)-1]; len(es) != 2 || last.Action != domain.AuditCampaignUpdate || last.RequestID != "req-2" {
		t.Fatalf("audit entries %+v, want the creation and one campaign.update", es)
	}
	sameJSON(t, "update's before", es[1].Before, `{"cap":2}`)
	sameJSON(t, "update's after", es[1].After, `{"cap":3}`)
	r3 := d.mustGrab(t, 3, b, 1)

	// 3 taken: a cap of 2 is refused by the grab path, and nothing changes.
	if _, err := edit(domain.CampaignEdit{Cap: units(2)}); !errors.Is(err, domain.ErrNotEnoughUnits) {
		t.Fatalf("a cap below the units taken: %v, want not enough units", err)
	}
	if got, _ := d.get.Handle(ctx, c.ID); *got.Cap != 3 || len(d.entries(c.ID)) != 2 {
		t.Fatalf("after the refusal: cap %d, %d entries; want 3 and 2", *got.Cap, len(d.entries(c.ID)))
	}
	// The grab path kept 3: with one unit back, it sells one more.
	if _, err := d.stock.Release(ctx, domain.Order{ID: r2.OrderID, VoucherID: a, UserID: 2, Quantity: 1}); err != nil {
		t.Fatal(err)
	}
	d.mustGrab(t, 4, b, 1)
	// A cap down to the units taken is kept, and sells no more.
	if _, err := edit(domain.CampaignEdit{Cap: units(10)}); err != nil {
		t.Fatal(err)
	}
	if low, err := edit(domain.CampaignEdit{Cap: units(3)}); err != nil || low.Remaining != 0 || low.State != domain.StateSoldOut {
		t.Fatalf("a cap equal to the units taken: %+v, %v; want 0 remaining, sold out", low, err)
	}
	if _, err := d.grabAs(5, a, 1); !errors.Is(err, domain.ErrCampaignSoldOut) {
		t.Fatalf("a grab under a cap taken whole: %v, want campaign sold out", err)
	}
	if _, err := edit(domain.CampaignEdit{Cap: units(10)}); err != nil {
		t.Fatal(err)
	}

	// A lower per-user limit judges the grabs from then on, across the campaign.
	limited, err := edit(domain.CampaignEdit{PerUserLimit: units(1)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.grabAs(5, b, 2); !errors.Is(err, domain.ErrInvalid) {
		t.Fatalf("2 units over the campaign's new limit of 1: %v, want invalid", err)
	}
	_, err = d.grabAs(3, a, 1)
	if held, ok := errors.AsType[*domain.AlreadyPurchasedError](err); !ok || !slices.Equal(held.Orders, []domain.OrderID{r3.OrderID}) {
		t.Fatalf("user 3, who holds B, grabs A under a limit of 1: %v, want already purchased naming its order of B", err)
	}

	// A title is no term: the version stays.
	titled, err := edit(domain.CampaignEdit{Title: new("Sneakers, spring")})
	if err != nil || titled.Title != "Sneakers, spring" || titled.Version != limited.Version {
		t.Fatalf("title: %+v, %v; want the version of the terms kept, %d", titled, err, limited.Version)
	}

	// A new end goes to the campaign's vouchers: stored, on the grab path, announced.
	end := t0.Add(30 * time.Minute)
	ended, err := edit(domain.CampaignEdit{EndsAt: &end})
	if err != nil || !ended.EndsAt.Equal(end) || ended.Warming != nil {
		t.Fatalf("ends_at: %+v, %v", ended, err)
	}
	for _, id := range []domain.VoucherID{a, b} {
		if v, _ := d.vouchers.Get(ctx, id); !v.EndsAt.Equal(end) || v.Version != 1 {
			t.Fatalf("voucher %s: ends %v, version %d; want the campaign's end, version 1", id, v.EndsAt, v.Version)
		}
		if !slices.Contains(d.changes.Published(), ports.Change{Voucher: id}) {
			t.Fatalf("the change of voucher %s was not announced: %v", id, d.changes.Published())
		}
	}
	d.clock.Set(end)
	if _, err := d.grabAs(6, a, 1); !errors.Is(err, domain.ErrEnded) {
		t.Fatalf("a grab at the new end: %v, want ended", err)
	}

	for name, tc := range map[string]struct {
		cmd  application.UpdateCampaignCmd
		want error
	}{
		"no change":        {application.UpdateCampaignCmd{ID: c.ID}, domain.ErrInvalid},
		"an unknown one":   {application.UpdateCampaignCmd{ID: 99, Edit: domain.CampaignEdit{Cap: units(1)}}, domain.ErrNotFound},
		"a limit of 0":     {application.UpdateCampaignCmd{ID: c.ID, Edit: domain.CampaignEdit{PerUserLimit: units(0)}}, domain.ErrInvalid},
		"a cap of 0 units": {application.UpdateCampaignCmd{ID: c.ID, Edit: domain.CampaignEdit{Cap: units(0)}}, domain.ErrInvalid},
	} {
		if _, err := d.update.Handle(ctx, tc.cmd); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", name, err, tc.want)
		}
	}
}

// TestUpdateCampaignKeepsTheAnswerItReturns: the answer kept with an Idempotency-Key
// is the campaign the change returns, remaining units and state included, so a retry
// is answered alike.
func TestUpdateCampaignKeepsTheAnswerItReturns(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := newDrop(t)
	c := d.campaign(t, 1, units(2))
	v := d.variant(t, c.ID, "A", 5)
	d.mustGrab(t, 1, v, 1)
	claim, _, err := d.vouchers.Idempotency.Claim(ctx, 1, "raise", "fp", t0, lease)
	if err != nil {
		t.Fatal(err)
	}
	var kept application.LiveCampaign
	got, err := d.update.Handle(ctx, application.UpdateCampaignCmd{ID: c.ID, Edit: domain.CampaignEdit{Cap: units(4)},
		Receipt: &ports.Receipt[application.LiveCampaign]{Claim: claim, Answer: func(c application.LiveCampaign) (int, []byte, error) {
			kept = c
			return 200, []byte("answered"), nil
		}}})
	if err != nil {
		t.Fatal(err)
	}
	if got.Remaining != 3 || got.State != domain.StateLive || kept.Remaining != got.Remaining || kept.State != got.State ||
		*kept.Cap != *got.Cap || kept.Version != got.Version {
		t.Fatalf("returned %+v, kept %+v: want the same campaign, 3 remaining, live", got, kept)
	}
	wantAnswer(t, d.vouchers.Idempotency, 1, "raise", 200)
}

// TestCampaignStatsAddUp: a campaign's stats are its vouchers' summed, and under a
// cap, remaining is the cap's units not taken: cap = remaining + queued +
// awaiting_payment + paid.
func TestCampaignStatsAddUp(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := newDrop(t)
	capped, open := d.campaign(t, 2, units(5)), d.campaign(t, 2, nil)
	// In each: A 1 unit paid, B 2 awaiting payment and 1 queued.
	var paid []domain.Reservation
	var queued []domain.VoucherID
	for _, c := range []application.LiveCampaign{capped, open} {
		a, b := d.variant(t, c.ID, "A", 3), d.variant(t, c.ID, "B", 4)
		paid = append(paid, d.mustGrab(t, 1, a, 1))
		d.mustGrab(t, 2, b, 2)
		queued = append(queued, b)
	}
	if _, err := d.fulfill.Handle(ctx, readAll(t, d.queue)); err != nil {
		t.Fatal(err)
	}
	for _, r := range paid {
		if _, err := d.orders.Transition(ctx, r.OrderID, 1, domain.StatusPaid, nil); err != nil {
			t.Fatal(err)
		}
	}
	for _, b := range queued {
		d.mustGrab(t, 3, b, 1)
	}
	s, err := d.stats.Handle(ctx, capped.ID)
	if err != nil {
		t.Fatal(err)
	}
	if *s.Cap != 5 || s.Stock != 7 || s.Remaining != 1 || s.Queued != 1 || s.AwaitingPayment != 2 || s.Paid != 1 || len(s.Vouchers) != 2 {
		t.Fatalf("capped stats = %+v", s)
	}
	if *s.Cap != s.Remaining+s.Queued+s.AwaitingPayment+s.Paid {
		t.Fatalf("capped stats do not add up to the cap: %+v", s)
	}
	o, err := d.stats.Handle(ctx, open.ID)
	if err != nil {
		t.Fatal(err)
	}
	if o.Cap != nil || o.Remaining != 3 || o.Stock != o.Remaining+o.Queued+o.AwaitingPayment+o.Paid {
		t.Fatalf("stats without a cap = %+v: want the vouchers' remaining, adding up to their stock", o)
	}
	if _, err := d.stats.Handle(ctx, 99); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("unknown campaign: %v", err)
	}
}

// readAll reads every entry the queue holds.
func readAll(t *testing.T, q *memory.Queue) []ports.Delivery {
	t.Helper()
	ds, err := q.Read(context.Background(), 100, 0)
	if err != nil {
		t.Fatal(err)
	}
	return ds
}
