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

func TestShufflesKeepTheFirstSaved(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := sqlstore.NewShuffles(openMigrated(t))
	if _, err := s.Get(ctx, 7, false); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("Get before any shuffle: %v, want ErrNotFound", err)
	}
	at := time.Date(2026, 12, 6, 10, 0, 0, 123e6, time.UTC)
	first := domain.SeededShuffle{Voucher: 7, Seed: domain.Seed([]byte("0123456789abcdef0123456789abcdef")),
		Entrants: []domain.UserID{1, 5, 1 << 40}, Digest: "d1", At: at}
	got, err := s.Save(ctx, first)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got.Entrants, first.Entrants) || got.Count != 3 || got.Digest != "d1" || !got.At.Equal(at) ||
		got.Seed != first.Seed {
		t.Fatalf("Save = %+v, want %+v", got, first)
	}
	// A second instance's shuffle, saved later, loses: the first stands.
	second := first
	second.Entrants, second.Digest = []domain.UserID{2}, "d2"
	if got, err = s.Save(ctx, second); err != nil || got.Digest != "d1" || len(got.Entrants) != 3 {
		t.Fatalf("Save of a second shuffle = %+v, %v; want the first", got, err)
	}
	if got, err = s.Get(ctx, 7, false); err != nil || got.Count != 3 || got.Entrants != nil || got.Digest != "d1" {
		t.Fatalf("Get without entrants = %+v, %v", got, err)
	}
	empty := domain.SeededShuffle{Voucher: 8, Seed: first.Seed, Digest: "e", At: at}
	if got, err = s.Save(ctx, empty); err != nil || got.Count != 0 || len(got.Entrants) != 0 {
		t.Fatalf("Save of no entrants = %+v, %v", got, err)
	}
}
