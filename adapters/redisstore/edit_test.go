package redisstore_test

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/adapters/redisstore"
	"github.com/seckill/seckill/domain"
	"github.com/seckill/seckill/ports"
)

// edit calls s.Edit and returns whether it changed anything, stopping the test on an
// error.
func edit(t *testing.T, s *redisstore.Stock, v domain.Voucher, mode ports.EditMode) bool {
	t.Helper()
	changed, err := s.Edit(context.Background(), v, mode)
	check(t, err)
	return changed
}

// meta returns the fields of voucher id's sale state ("" where absent).
func meta(t *testing.T, client redis.UniversalClient, s *redisstore.Stock, id domain.VoucherID, fields ...string) []string {
	t.Helper()
	vals, err := client.HMGet(context.Background(), s.Keys().Meta(id), fields...).Result()
	check(t, err)
	out := make([]string, len(vals))
	for i, v := range vals {
		out[i], _ = v.(string)
	}
	return out
}

// TestEditCarriesTheTermsByVersion: units added go on sale at once (the remaining
// units move by the change of stock, the reservations keep theirs, a restock is
// announced), and a late write of older terms changes nothing in EditIfNewer.
func TestEditCarriesTheTermsByVersion(t *testing.T) {
	ctx := context.Background()
	client, s := newStock(t, 0)
	v := voucher(1, 10, 2)
	warm(t, client, s, v)
	check(t, s.Reserve(ctx, grab(v.ID, 1, 2)))
	check(t, s.Reserve(ctx, grab(v.ID, 2, 1)))
	sub := subscribe(t, s)
	waitSubscribed(t, client, s.RestockChannel(v.ID))

	added := v
	added.Stock, added.PerUserLimit, added.Version = 15, 3, 1
	if !edit(t, s, added, ports.EditIfNewer) {
		t.Fatal("Edit of newer terms changed nothing")
	}
	if got, want := remaining(t, s, v.ID), 12; got != want {
		t.Fatalf("remaining after adding 5 units to 7 = %d, want %d", got, want)
	}
	if id := sub.next(t); id != v.ID {
		t.Fatalf("restock announced voucher %d, want %d", id, v.ID)
	}
	got := meta(t, client, s, v.ID, "stock", "limit", "version")
	if want := []string{"15", "3", "1"}; got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Fatalf("stock, limit, version = %v, want %v", got, want)
	}
	// The new limit judges the next grab.
	check(t, s.Reserve(ctx, grab(v.ID, 3, 3)))

	// The same terms again, and older ones, change nothing.
	if edit(t, s, added, ports.EditIfNewer) {
		t.Fatal("Edit of the same version changed the state")
	}
	older := v
	older.Stock = 100
	if edit(t, s, older, ports.EditIfNewer) {
		t.Fatal("Edit of an older version changed the state")
	}
	if got, want := remaining(t, s, v.ID), 9; got != want {
		t.Fatalf("remaining after a late older write = %d, want %d", got, want)
	}

	// EditHeld carries them whatever the version: the database's truth, under its
	// lock. Fewer units than are held leaves none on sale, never fewer than none.
	if !edit(t, s, older, ports.EditHeld) {
		t.Fatal("EditHeld changed nothing")
	}
	if got, want := remaining(t, s, v.ID), 94; got != want {
		t.Fatalf("remaining after EditHeld to 100 = %d, want %d", got, want)
	}
	older.Stock = 4
	edit(t, s, older, ports.EditHeld)
	if got, want := remaining(t, s, v.ID), 0; got != want {
		t.Fatalf("remaining after EditHeld below the held units = %d, want %d", got, want)
	}
}

// TestEditStrictRefusesMoreThanRemain: a removal takes only units still on sale, all
// or nothing.
func TestEditStrictRefusesMoreThanRemain(t *testing.T) {
	ctx := context.Background()
	client, s := newStock(t, 0)
	v := voucher(1, 10, 1)
	warm(t, client, s, v)
	for u := domain.UserID(1); u <= 4; u++ {
		check(t, s.Reserve(ctx, grab(v.ID, u, 1)))
	}
	removed := v
	removed.Stock, removed.Version = 3, 1 // 7 removed, 6 remain
	if _, err := s.Edit(ctx, removed, ports.EditHeldStrict); !errors.Is(err, domain.ErrNotEnoughUnits) {
		t.Fatalf("removing 7 of 6 remaining: %v, want %v", err, domain.ErrNotEnoughUnits)
	}
	if got := meta(t, client, s, v.ID, "stock", "remaining", "version"); got[0] != "10" || got[1] != "6" || got[2] != "0" {
		t.Fatalf("a refused removal changed the state: stock, remaining, version = %v", got)
	}
	removed.Stock = 4 // 6 removed: every unit on sale
	if !edit(t, s, removed, ports.EditHeldStrict) {
		t.Fatal("removing the 6 units on sale changed nothing")
	}
	if got, want := remaining(t, s, v.ID), 0; got != want {
		t.Fatalf("remaining = %d, want %d", got, want)
	}
	if err := s.Reserve(ctx, grab(v.ID, 9, 1)); !errors.Is(err, domain.ErrSoldOut) {
		t.Fatalf("grab after every unit was removed: %v, want %v", err, domain.ErrSoldOut)
	}

	// A state being restored does not know its remaining units: a removal waits.
	check(t, redisstore.NewAudit(client, redisstore.Options{Prefix: s.Keys().Prefix}).Restoring(ctx, v.ID))
	removed.Stock, removed.Version = 4, 2
	if _, err := s.Edit(ctx, removed, ports.EditHeldStrict); !errors.Is(err, domain.ErrUnavailable) {
		t.Fatalf("removal while restoring: %v, want %v", err, domain.ErrUnavailable)
	}

	// Without sale state nothing is written.
	if changed, err := s.Edit(ctx, voucher(2, 5, 1), ports.EditHeld); changed || err != nil {
		t.Fatalf("Edit without sale state = %v, %v; want false, nil", changed, err)
	}
	if n, err := client.Exists(ctx, s.Keys().Meta(2)).Result(); err != nil || n != 0 {
		t.Fatalf("Edit without sale state wrote it: %d, %v", n, err)
	}
}

// TestEditMovesTheWindow: a sale ended early answers ended at once; moved later again,
// a sale the queue had settled sells again, and its keys expire at the new end plus
// the grace.
func TestEditMovesTheWindow(t *testing.T) {
	ctx := context.Background()
	client, s := newStock(t, time.Hour)
	// This sale's window is judged by the sale's clock, Redis's TIME: grabs carry no
	// time of their own.
	wall := time.Now().Truncate(time.Millisecond)
	v := voucher(1, 10, 1)
	v.BeginsAt, v.EndsAt = wall.Add(-time.Hour), wall.Add(time.Hour)
	warm(t, client, s, v)
	grabNow := func(user domain.UserID) error {
		r := grab(v.ID, user, 1)
		r.At = time.Time{}
		return s.Reserve(ctx, r)
	}
	check(t, grabNow(1))

	ended := v
	ended.EndsAt, ended.Version = wall.Add(-time.Minute), 1
	edit(t, s, ended, ports.EditIfNewer)
	if err := grabNow(2); !errors.Is(err, domain.ErrEnded) {
		t.Fatalf("grab after the sale was ended: %v, want %v", err, domain.ErrEnded)
	}
	// The keys outlive an end moved to the past by the grace from now, not from then.
	exp, err := client.PExpireTime(ctx, s.Keys().Meta(v.ID)).Result()
	check(t, err)
	if soon := wall.Add(50 * time.Minute).UnixMilli(); exp.Milliseconds() < soon {
		t.Fatalf("meta expires at %v, want an hour from now", time.UnixMilli(exp.Milliseconds()))
	}
	check(t, client.HSet(ctx, s.Keys().Meta(v.ID), "settled", "1").Err()) // as the queue settles it

	later := v
	later.EndsAt, later.Version = wall.Add(48*time.Hour), 2
	edit(t, s, later, ports.EditIfNewer)
	if got := meta(t, client, s, v.ID, "settled", "ends", "expire"); got[0] != "" ||
		got[1] != strconv.FormatInt(later.EndsAt.UnixMilli(), 10) ||
		got[2] != strconv.FormatInt(later.EndsAt.Add(time.Hour).UnixMilli(), 10) {
		t.Fatalf("settled, ends, expire = %v after the end moved later", got)
	}
	check(t, grabNow(2))
	for _, key := range []string{s.Keys().Meta(v.ID), s.Keys().Buyers(v.ID), s.Keys().Orders(v.ID), s.Keys().Stream(v.ID)} {
		exp, err := client.PExpireTime(ctx, key).Result()
		check(t, err)
		if want := later.EndsAt.Add(time.Hour).UnixMilli(); exp.Milliseconds() != want {
			t.Fatalf("%s expires at %d, want %d", key, exp.Milliseconds(), want)
		}
	}
	// Back in the set of active vouchers, scored by the new end.
	score, err := client.ZScore(ctx, s.Keys().Active(), v.ID.String()).Result()
	check(t, err)
	if int64(score) != later.EndsAt.UnixMilli() {
		t.Fatalf("active score %v, want %d", score, later.EndsAt.UnixMilli())
	}
}

// TestWarmReportsStaleTerms: a sale state holding another version of the terms than
// the voucher's is reported stale, and left as it is.
func TestWarmReportsStaleTerms(t *testing.T) {
	ctx := context.Background()
	client, s := newStock(t, 0)
	v := voucher(1, 10, 1)
	warm(t, client, s, v)
	newer := v
	newer.Stock, newer.Version = 12, 1
	got, err := s.Warm(ctx, newer)
	check(t, err)
	if got != ports.WarmStale {
		t.Fatalf("Warm of a newer version = %v, want WarmStale", got)
	}
	if r := remaining(t, s, v.ID); r != 10 {
		t.Fatalf("Warm changed a stale state: remaining %d", r)
	}
	edit(t, s, newer, ports.EditIfNewer)
	if got, err = s.Warm(ctx, newer); err != nil || got != ports.WarmPresent {
		t.Fatalf("Warm after the terms were carried = %v, %v; want WarmPresent", got, err)
	}
}
