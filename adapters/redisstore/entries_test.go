package redisstore_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/adapters/redisstore"
	"github.com/seckill/seckill/domain"
)

// drawVoucher returns a draw voucher of stock units judged by the Redis server's clock:
// entries open an hour ago, the sale begins at begins and ends far ahead.
func drawVoucher(id domain.VoucherID, stock int, begins time.Time) domain.Voucher {
	v := voucher(id, stock, 1)
	v.Admission = domain.AdmissionDraw
	v.Challenge = domain.ChallengeNone
	v.Seed = domain.Seed{byte(id), 7}
	v.EntriesOpenAt = time.Now().Add(-time.Hour)
	v.BeginsAt = begins
	v.EndsAt = now
	return v
}

// cleanupEntries deletes voucher id's entries and their closing mark when the test
// ends.
func cleanupEntries(t testing.TB, client redis.UniversalClient, s *redisstore.Stock, id domain.VoucherID) {
	t.Cleanup(func() {
		_ = client.Unlink(context.Background(), s.Keys().Entries(id), s.Keys().EntriesClosed(id)).Err()
	})
}

// carry takes every step of d's draw in batches of batch, as application.RunDraws
// does, each step with order id d<user>; it returns the orders reserved.
func carry(t testing.TB, e *redisstore.Entries, d domain.Draw, batch int) int {
	t.Helper()
	return takeSteps(t, e, d.Voucher, domain.DrawSteps(d.Order(), d.Winners), batch)
}

// takeSteps takes steps on voucher id in batches of batch, each step with order id
// d<user>; it returns the orders reserved.
func takeSteps(t testing.TB, e *redisstore.Entries, id domain.VoucherID, steps []domain.DrawStep, batch int) int {
	t.Helper()
	taken, reserved := 0, 0
	for {
		end := min(taken+batch, len(steps))
		orders := make([]domain.OrderID, end-taken)
		for i, st := range steps[taken:end] {
			orders[i] = domain.OrderID("d" + st.User.String())
		}
		next, n, err := e.Take(context.Background(), id, taken, len(steps), steps[taken:end], orders)
		check(t, err)
		reserved += n
		if next >= len(steps) {
			return reserved
		}
		taken = next
	}
}

func TestEntriesEnterByTheSaleClock(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	client, s := newStock(t, 0)
	e := redisstore.NewEntries(s)
	v := drawVoucher(1, 1, time.Now().Add(time.Hour))
	cleanupEntries(t, client, s, v.ID)
	for _, u := range []domain.UserID{5, 6, 5} {
		if _, err := e.Enter(ctx, v, u); err != nil {
			t.Fatalf("enter %d: %v", u, err)
		}
	}
	if n, err := e.Count(ctx, v.ID); err != nil || n != 2 {
		t.Fatalf("count = %d, %v; want 2 (an entry again is one entry)", n, err)
	}
	early := v
	early.EntriesOpenAt = time.Now().Add(time.Minute)
	if _, err := e.Enter(ctx, early, 7); !errors.Is(err, domain.ErrNotStarted) {
		t.Fatalf("enter before entries open: %v, want not started", err)
	}
	if _, err := e.Close(ctx, v); !errors.Is(err, domain.ErrNotStarted) {
		t.Fatalf("close before the sale begins: %v, want not started", err)
	}
	begun := v
	begun.BeginsAt = time.Now().Add(-time.Second)
	if _, err := e.Enter(ctx, begun, 7); !errors.Is(err, domain.ErrEntriesClosed) {
		t.Fatalf("enter after the sale began: %v, want entries closed", err)
	}
	got, err := e.Close(ctx, begun)
	check(t, err)
	slices.Sort(got)
	if !slices.Equal(got, []domain.UserID{5, 6}) {
		t.Fatalf("entrants = %v, want [5 6]", got)
	}
	// Closed for good, whatever the clock says.
	if _, err := e.Enter(ctx, v, 8); !errors.Is(err, domain.ErrEntriesClosed) {
		t.Fatalf("enter after the draw closed entries: %v, want entries closed", err)
	}
}

// TestDrawReservesTheWinnersAndListsTheBackfill carries out a draw of 50 entrants for 10
// units: the winners hold reservations (stream entries the workers persist), the
// backfill waits on the waitlist in the shuffle's order, grabs are refused until the
// draw is over and take what is left after it; a batch sent again changes nothing; a
// winner's cancelled order passes its unit to the first of the backfill.
func TestDrawReservesTheWinnersAndListsTheBackfill(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	client, s := newStock(t, 0)
	e := redisstore.NewEntries(s)
	w := redisstore.NewWaitlist(s)
	v := drawVoucher(2, 12, time.Now().Add(-time.Second))
	warm(t, client, s, v)
	cleanupEntries(t, client, s, v.ID)
	var ids []any
	for u := 100; u < 150; u++ {
		ids = append(ids, u)
	}
	check(t, client.SAdd(ctx, s.Keys().Entries(v.ID), ids...).Err())
	entrants, err := e.Close(ctx, v)
	check(t, err)
	v.Stock = 10 // two units stay for first come after the draw
	d := domain.NewDraw(v, entrants, time.Now())
	if d.Winners != 10 || len(d.Entrants) != 50 {
		t.Fatalf("draw of %d entrants with %d winners, want 50 and 10", len(d.Entrants), d.Winners)
	}

	before := grab(v.ID, 999, 1)
	before.At = time.Time{}
	if err := s.Reserve(ctx, before); !errors.Is(err, domain.ErrNotStarted) {
		t.Fatalf("grab before the draw: %v, want not started", err)
	}
	steps := domain.DrawSteps(d.Order(), d.Winners)
	// The first batch, then the same batch again: taken once.
	orders := make([]domain.OrderID, 7)
	for i, st := range steps[:7] {
		orders[i] = domain.OrderID("d" + st.User.String())
	}
	for range 2 {
		next, _, err := e.Take(ctx, v.ID, 0, len(steps), steps[:7], orders)
		check(t, err)
		if next != 7 {
			t.Fatalf("steps taken after the first batch = %d, want 7", next)
		}
	}
	if taken, drawn, err := e.Progress(ctx, v.ID); err != nil || taken != 7 || drawn {
		t.Fatalf("progress = %d, %v, %v; want 7, not drawn", taken, drawn, err)
	}
	if err := s.Reserve(ctx, before); !errors.Is(err, domain.ErrNotStarted) {
		t.Fatalf("grab during the draw: %v, want not started", err)
	}
	reserved := carry(t, e, d, 7)
	if reserved != 10 {
		t.Fatalf("reserved %d orders, want 10", reserved)
	}
	if _, drawn, err := e.Progress(ctx, v.ID); err != nil || !drawn {
		t.Fatalf("drawn = %v, %v; want true", drawn, err)
	}
	order := d.Order()
	var want []string
	for _, u := range order[:10] {
		want = append(want, fmt.Sprintf("d%d:%d:1", u, u))
	}
	got := entries(t, client, s, v.ID)
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("stream = %v, want the winners' %v", got, want)
	}
	if n := remaining(t, s, v.ID); n != 2 {
		t.Fatalf("remaining after the draw = %d, want 2", n)
	}
	for i, u := range order[10:] {
		pos, err := w.Position(ctx, v.ID, u)
		if err != nil || pos != i+1 {
			t.Fatalf("backfill position of %d = %d, %v; want %d", u, pos, err, i+1)
		}
	}
	// After the draw: first come for what is left.
	if err := s.Reserve(ctx, before); err != nil {
		t.Fatalf("grab after the draw: %v", err)
	}
	// A winner cancels: its unit goes to the first of the backfill.
	first := order[0]
	released, err := s.Release(ctx, domain.Order{ID: domain.OrderID("d" + first.String()), VoucherID: v.ID, UserID: first,
		Quantity: 1, Status: domain.StatusCancelled})
	check(t, err)
	if !released {
		t.Fatal("the winner's cancel released nothing")
	}
	held, err := client.HGet(ctx, s.Keys().Buyers(v.ID), order[10].String()).Result()
	if err != nil || held != "d"+order[10].String() {
		t.Fatalf("the first of the backfill holds %q, %v; want d%d", held, err, order[10])
	}
	if n := remaining(t, s, v.ID); n != 1 {
		t.Fatalf("remaining after the hand-off = %d, want 1", n)
	}
}

// TestDrawWithoutEntrants: a draw nobody entered is over at once, every unit on
// first-come sale.
func TestDrawWithoutEntrants(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	client, s := newStock(t, 0)
	e := redisstore.NewEntries(s)
	v := drawVoucher(3, 3, time.Now().Add(-time.Second))
	warm(t, client, s, v)
	cleanupEntries(t, client, s, v.ID)
	entrants, err := e.Close(ctx, v)
	check(t, err)
	if carry(t, e, domain.NewDraw(v, entrants, time.Now()), 10) != 0 {
		t.Fatal("a draw without entrants reserved orders")
	}
	r := grab(v.ID, 1, 1)
	r.At = time.Time{}
	check(t, s.Reserve(ctx, r))
	if _, _, err := e.Progress(ctx, 99); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("progress without sale state: %v, want not found", err)
	}
}
