package redisstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/seckill/seckill/adapters/redisstore"
	"github.com/seckill/seckill/adapters/strategies/watchstock"
	"github.com/seckill/seckill/adapters/testenv"
	"github.com/seckill/seckill/domain"
)

// A reservation is recorded with the deadline of the window in force when it was
// taken — a grab by the script, a grab by the WATCH strategy, a unit handed to a
// waitlist — and read back with it, in its record and in its stream entry, by an
// instance running with another window: one restarted with a shorter
// SECKILL_PAYMENT_TIMEOUT before the reservation was persisted keeps the deadline
// it was answered with. A Stock with no window records none (the reader's window
// then stands in, as for a reservation recorded before deadlines were).
func TestReservationsKeepTheDeadlineTheyWereTakenWith(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	client := testenv.Redis(t)
	const before, after = 10 * time.Minute, time.Minute
	opts := func(w time.Duration) redisstore.Options {
		return redisstore.Options{Prefix: "t" + testenv.Unique(), PaymentWindow: w}
	}
	o := opts(before)
	old := redisstore.NewStock(client, o)
	v := liveVoucher(1, 4, 1)
	warm(t, client, old, v)
	taken := take(t, old, v.ID, 1)[0]
	watched := grab(v.ID, 2, 1)
	watched.At = time.Time{}
	check(t, watchstock.New(old, 3).Reserve(ctx, watched))

	// The restart: the same keys, a shorter window.
	o.PaymentWindow = after
	restarted := redisstore.NewStock(client, o)
	fresh := take(t, restarted, v.ID, 3)[0]
	take(t, restarted, v.ID, 4)                         // the last unit
	join(t, redisstore.NewWaitlist(restarted), v.ID, 5) // waits for a unit
	if _, err := restarted.Release(ctx, domain.Order{ID: "o4", VoucherID: v.ID, UserID: 4, Quantity: 1,
		Status: domain.StatusCancelled}); err != nil {
		t.Fatal(err)
	}

	found := map[domain.OrderID]domain.Reservation{}
	for _, d := range read(t, newQueue(client, restarted, "c1"), 10) {
		if d.Malformed != "" {
			t.Fatalf("entry %s: %s", d.ID, d.Malformed)
		}
		found[d.Reservation.OrderID] = d.Reservation
	}
	reservations := redisstore.NewReservations(client, o)
	for _, tc := range []struct {
		order  domain.OrderID
		user   domain.UserID
		window time.Duration
	}{
		{taken.OrderID, 1, before}, {"o2", 2, before}, {fresh.OrderID, 3, after}, {"w5", 5, after},
	} {
		entry, ok := found[tc.order]
		if !ok {
			t.Fatalf("order %s: no stream entry among %v", tc.order, found)
		}
		record, err := reservations.Find(ctx, tc.user, tc.order)
		check(t, err)
		for name, r := range map[string]domain.Reservation{"entry": entry, "record": record} {
			if r.At.IsZero() || !r.Expires.Equal(r.At.Add(tc.window)) {
				t.Errorf("order %s's %s: at %v, expires %v; want %v after", tc.order, name, r.At, r.Expires, tc.window)
			}
		}
	}

	// No window, no deadline recorded.
	o = opts(0)
	plain := redisstore.NewStock(client, o)
	w := liveVoucher(2, 1, 1)
	warm(t, client, plain, w)
	r := take(t, plain, w.ID, 1)[0]
	got, err := redisstore.NewReservations(client, o).Find(ctx, 1, r.OrderID)
	check(t, err)
	if !got.Expires.IsZero() {
		t.Fatalf("a Stock with no window recorded the deadline %v", got.Expires)
	}
}
