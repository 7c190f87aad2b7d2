package sqlstore_test

import (
	"testing"
	"time"

	"github.com/seckill/seckill/adapters/sqlstore"
)

// TestIdempotencyKeys: the first claim of a key wins, a repeat sees the request in
// progress and then its answer; another caller's same key is its own; a released key
// may be claimed again; a day later the key is new; purge forgets old answers.
func TestIdempotencyKeys(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	store := sqlstore.NewIdempotency(openMigrated(t))
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

	if _, first, err := store.Claim(ctx, 7, "k1", "fp-a", now); err != nil || !first {
		t.Fatalf("first claim = %v, %v; want claimed", first, err)
	}
	kept, first, err := store.Claim(ctx, 7, "k1", "fp-a", now)
	if err != nil || first || kept.Status != 0 || kept.Fingerprint != "fp-a" {
		t.Fatalf("repeat while in progress = %+v, %v, %v", kept, first, err)
	}
	if _, first, err := store.Claim(ctx, 8, "k1", "fp-b", now); err != nil || !first {
		t.Fatalf("another caller's same key = %v, %v; want claimed", first, err)
	}
	if err := store.Complete(ctx, 7, "k1", 201, []byte(`{"id":"1"}`)); err != nil {
		t.Fatal(err)
	}
	kept, first, err = store.Claim(ctx, 7, "k1", "fp-a", now.Add(time.Hour))
	if err != nil || first || kept.Status != 201 || string(kept.Body) != `{"id":"1"}` {
		t.Fatalf("repeat after the answer = %+v, %v, %v", kept, first, err)
	}
	if err := store.Release(ctx, 8, "k1"); err != nil {
		t.Fatal(err)
	}
	if _, first, err := store.Claim(ctx, 8, "k1", "fp-c", now); err != nil || !first {
		t.Fatalf("claim of a released key = %v, %v; want claimed", first, err)
	}
	if _, first, err := store.Claim(ctx, 7, "k1", "fp-d", now.Add(sqlstore.IdempotencyTTL+time.Second)); err != nil || !first {
		t.Fatalf("claim a day later = %v, %v; want claimed anew", first, err)
	}
	n, err := store.Purge(ctx, now.Add(time.Minute))
	if err != nil || n != 1 {
		t.Fatalf("purge = %d, %v; want user 8's key forgotten", n, err)
	}
}
