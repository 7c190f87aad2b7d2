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
