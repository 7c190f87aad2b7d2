package sqlstore_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/seckill/seckill/adapters/sqlstore"
	"github.com/seckill/seckill/domain"
)

// TestDrawsRecordOnce records a draw, then another of the same voucher: the first
// stands, read back whole (seed, sorted entrants, digest, winners, time); the draw
// vouchers whose sale runs are pending.
func TestDrawsRecordOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := openMigrated(t)
	at := time.Now().UTC().Truncate(time.Millisecond)
	v := domain.Voucher{Title: "draw", Stock: 2, BeginsAt: at.Add(-time.Minute), EndsAt: at.Add(time.Hour), PerUserLimit: 1,
		Admission: domain.AdmissionDraw, Challenge: domain.ChallengeNone, EntriesOpenAt: at.Add(-time.Hour), Seed: domain.NewSeed()}
	if err := sqlstore.NewVouchers(db).Create(ctx, &v, domain.Author{}, nil); err != nil {
		t.Fatal(err)
	}
	plain := domain.Voucher{Title: "first come", Stock: 2, BeginsAt: v.BeginsAt, EndsAt: v.EndsAt, PerUserLimit: 1}
	if err := sqlstore.NewVouchers(db).Create(ctx, &plain, domain.Author{}, nil); err != nil {
		t.Fatal(err)
	}
	draws := sqlstore.NewDraws(db)
	if _, err := draws.Get(ctx, v.ID); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("Get before the draw: %v, want not found", err)
	}
	pending, err := draws.Pending(ctx, at)
	if err != nil || len(pending) != 1 || pending[0].ID != v.ID || pending[0].Seed != v.Seed {
		t.Fatalf("Pending = %+v, %v; want the draw voucher", pending, err)
	}
	if pending, err := draws.Pending(ctx, v.BeginsAt.Add(-time.Second)); err != nil || len(pending) != 0 {
		t.Fatalf("Pending before the sale = %+v, %v; want none", pending, err)
	}
	entrants := []domain.UserID{900, 3, 1 << 40, 77}
	d := domain.NewDraw(v, entrants, at)
	got, err := draws.Record(ctx, d)
	if err != nil {
		t.Fatal(err)
	}
	other := domain.NewDraw(v, []domain.UserID{5}, at.Add(time.Second))
	again, err := draws.Record(ctx, other)
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range []domain.Draw{got, again} {
		if g.Voucher != v.ID || g.Seed != v.Seed || g.Digest != d.Digest || g.Winners != 2 || !g.At.Equal(at) ||
			!slices.Equal(g.Entrants, []domain.UserID{3, 77, 900, 1 << 40}) {
			t.Fatalf("recorded %+v, want %+v", g, d)
		}
	}
	if read, err := draws.Get(ctx, v.ID); err != nil || !slices.Equal(read.Order(), d.Order()) {
		t.Fatalf("Get = %+v, %v", read, err)
	}
}

// TestDrawsRecordADropOnce records a campaign's draw under its room id, then another:
// the first stands, read back whole — the entrants with their choices, each
// voucher's units and the cap the walk ran against — so the same walk gives the same
// winners; the campaign is pending as its room, its vouchers not on their own.
func TestDrawsRecordADropOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := openMigrated(t)
	at := time.Now().UTC().Truncate(time.Millisecond)
	capUnits := 3
	c := domain.Campaign{Title: "drop", BeginsAt: at.Add(time.Minute), EndsAt: at.Add(time.Hour), PerUserLimit: 2, Cap: &capUnits,
		Admission: domain.AdmissionDraw, EntriesOpenAt: at.Add(-time.Hour)}.WithAdmissionDefaults(at)
	campaigns := sqlstore.NewCampaigns(db)
	if err := campaigns.Create(ctx, &c, domain.Author{}, nil); err != nil {
		t.Fatal(err)
	}
	var vs []domain.Voucher
	for _, stock := range []int{2, 5} {
		v := domain.Voucher{Title: "size", Stock: stock, CampaignID: c.ID}
		if err := sqlstore.NewVouchers(db).Create(ctx, &v, domain.Author{}, nil); err != nil {
			t.Fatal(err)
		}
		vs = append(vs, v)
	}
	c, err := campaigns.Get(ctx, c.ID)
	if err != nil || !c.EntriesOpenAt.Equal(at.Add(-time.Hour)) || vs[0].PerUserLimit != 1 || !vs[0].EntriesOpenAt.Equal(c.EntriesOpenAt) {
		t.Fatalf("the campaign %+v (%v), its voucher %+v: want the entries' opening kept, each voucher 1 a user", c, err, vs[0])
	}
	draws := sqlstore.NewDraws(db)
	pending, err := draws.Pending(ctx, at.Add(2*time.Minute))
	if err != nil || len(pending) != 1 || pending[0].ID != c.ID.Room() || pending[0].Seed != c.Seed {
		t.Fatalf("Pending = %+v, %v; want the campaign's room alone", pending, err)
	}
	if _, err := draws.Get(ctx, c.ID.Room()); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("Get before the draw: %v, want not found", err)
	}
	var entries []domain.DropEntry
	for u := domain.UserID(40); u > 30; u-- {
		entries = append(entries, domain.DropEntry{User: u, Choice: vs[int(u)%2].ID})
	}
	d := domain.NewDropDraw(c, vs, entries, at)
	if _, err := draws.Record(ctx, d); err != nil {
		t.Fatal(err)
	}
	if _, err := draws.Record(ctx, domain.NewDropDraw(c, vs, entries[:3], at.Add(time.Second))); err != nil {
		t.Fatal(err)
	}
	got, err := draws.Get(ctx, c.ID.Room())
	if err != nil || got.Drop == nil {
		t.Fatalf("Get = %+v, %v", got, err)
	}
	if got.Digest != d.Digest || got.Winners != 3 || !got.At.Equal(at) || !slices.Equal(got.Entrants, d.Entrants) ||
		!slices.Equal(got.Drop.Choices, d.Drop.Choices) || !slices.Equal(got.Drop.Units, []int{2, 5}) || got.Drop.Cap != 3 ||
		!slices.Equal(got.WinnerIDs(), d.WinnerIDs()) {
		t.Fatalf("recorded %+v %+v, want %+v %+v", got, got.Drop, d, d.Drop)
	}
}
