package sqlstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/seckill/seckill/adapters/sqlstore"
)

func TestLeasesOneHolderAtATime(t *testing.T) {
	ctx := context.Background()
	l := sqlstore.NewLeases(openMigrated(t))
	acquire := func(holder string, want bool, wantState string) {
		t.Helper()
		state, ok, err := l.Acquire(ctx, "job", holder, time.Hour)
		if err != nil {
			t.Fatalf("Acquire(%s): %v", holder, err)
		}
		if ok != want || ok && state != wantState {
			t.Fatalf("Acquire(%s) = %q, %v; want %q, %v", holder, state, ok, wantState, want)
		}
	}
	acquire("a", true, "")
	acquire("b", false, "")
	acquire("a", true, "") // renewed
	if ok, err := l.Save(ctx, "job", "b", "by b"); err != nil || ok {
		t.Fatalf("Save by a non-holder = %v, %v; want false", ok, err)
	}
	if ok, err := l.Save(ctx, "job", "a", "42"); err != nil || !ok {
		t.Fatalf("Save by the holder = %v, %v; want true", ok, err)
	}
	acquire("b", false, "")
	if err := l.Release(ctx, "job", "b"); err != nil {
		t.Fatal(err)
	}
	acquire("b", false, "") // b's release of a's lease changed nothing
	if err := l.Release(ctx, "job", "a"); err != nil {
		t.Fatal(err)
	}
	acquire("b", true, "42") // b carries on where a stopped
	acquire("a", false, "")
	// Another job's lease is its own.
	if _, ok, err := l.Acquire(ctx, "other", "a", time.Hour); err != nil || !ok {
		t.Fatalf("Acquire of another job = %v, %v; want true", ok, err)
	}
	// An expired lease (a holder that died) is taken over.
	if _, ok, err := l.Acquire(ctx, "short", "a", -time.Second); err != nil || !ok {
		t.Fatalf("Acquire(short) = %v, %v", ok, err)
	}
	if _, ok, err := l.Acquire(ctx, "short", "b", time.Hour); err != nil || !ok {
		t.Fatalf("Acquire of an expired lease = %v, %v; want true", ok, err)
	}
}
