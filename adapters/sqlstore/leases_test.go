package sqlstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/seckill/seckill/adapters/sqlstore"
	"github.com/seckill/seckill/adapters/testenv"
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

// TestLeasesAreDatedByTheDatabasesClock: leases are dated by the clock every instance
// shares, PostgreSQL's, not the holder's: a lease taken by a holder whose own clock
// is 61 s behind still excludes another holder, on time, for the whole of its 60 s
// (dated by the holder's clock it had run out before it was taken), and it runs out
// when the database's clock says so.
func TestLeasesAreDatedByTheDatabasesClock(t *testing.T) {
	ctx := context.Background()
	pg, err := sqlstore.Open(ctx, testenv.PostgresURL(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pg.Close() })
	if _, err := sqlstore.MigrateUp(ctx, pg); err != nil {
		t.Fatal(err)
	}
	behind := sqlstore.LeasesOnClock(pg, func() time.Time { return time.Now().Add(-61 * time.Second) })
	onTime := sqlstore.NewLeases(pg)
	const ttl = 60 * time.Second
	if _, ok, err := behind.Acquire(ctx, "reconcile", "behind", ttl); err != nil || !ok {
		t.Fatalf("Acquire by the holder behind = %v, %v", ok, err)
	}
	if _, ok, err := onTime.Acquire(ctx, "reconcile", "on-time", time.Hour); err != nil || ok {
		t.Fatalf("Acquire by another holder while the lease runs = %v, %v; want false", ok, err)
	}
	var ms int64
	if err := pg.NewRaw("SELECT (extract(epoch FROM expires_at - clock_timestamp()) * 1000)::bigint FROM leases WHERE name = 'reconcile'").Scan(ctx, &ms); err != nil {
		t.Fatal(err)
	}
	left := time.Duration(ms) * time.Millisecond
	if left < ttl-10*time.Second || left > ttl {
		t.Fatalf("the lease runs %v more by the database's clock, want about %v", left, ttl)
	}
}
