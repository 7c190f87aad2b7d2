package redisstore_test

import (
	"context"
	"errors"
	"testing"

	"github.com/seckill/seckill/adapters/redisstore"
	"github.com/seckill/seckill/domain"
)

func TestFindReservation(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	client, s := newStock(t, 0)
	warm(t, client, s, voucher(1, 10, 3))
	warm(t, client, s, voucher(2, 10, 3))
	check(t, s.Reserve(ctx, grab(1, 1, 1)))
	want := grab(2, 2, 3)
	check(t, s.Reserve(ctx, want))
	res := redisstore.NewReservations(client, redisstore.Options{Prefix: s.Keys().Prefix})

	got, err := res.Find(ctx, want.UserID, want.OrderID)
	check(t, err)
	if !sameReservation(got, want) {
		t.Fatalf("Find = %+v, want %+v", got, want)
	}
	if _, err := res.Find(ctx, 2, "unknown"); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("Find of an unknown order = %v, want %v", err, domain.ErrNotFound)
	}
	if _, err := s.Release(ctx, order(want)); err != nil {
		t.Fatal(err)
	}
	if _, err := res.Find(ctx, want.UserID, want.OrderID); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("Find of a released order = %v, want %v", err, domain.ErrNotFound)
	}

	check(t, client.HSet(ctx, s.Keys().Orders(1), "broken", "1:x:2").Err())
	if _, err := res.Find(ctx, 0, "broken"); err == nil || errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("Find of a malformed record = %v, want an error naming it", err)
	}

	_, other := newStock(t, 0)
	empty := redisstore.NewReservations(client, redisstore.Options{Prefix: other.Keys().Prefix})
	if _, err := empty.Find(ctx, want.UserID, want.OrderID); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("Find with no voucher registered = %v, want %v", err, domain.ErrNotFound)
	}
}

// An admin's Find reads the vouchers on sale a page of the active set at a time and
// finds an order on any page. (Not parallel: it sets the package's page size.)
func TestAdminFindReadsTheActiveSetAPageAtATime(t *testing.T) {
	redisstore.SetActivePage(t, 2)
	ctx := context.Background()
	client, s := newStock(t, 0)
	var grabs []domain.Reservation
	for id := domain.VoucherID(1); id <= 5; id++ {
		warm(t, client, s, voucher(id, 10, 1))
		g := grab(id, domain.UserID(10+id), 1)
		check(t, s.Reserve(ctx, g))
		grabs = append(grabs, g)
	}
	res := redisstore.NewReservations(client, redisstore.Options{Prefix: s.Keys().Prefix})
	for _, want := range grabs {
		got, err := res.Find(ctx, 0, want.OrderID)
		check(t, err)
		if !sameReservation(got, want) {
			t.Fatalf("admin Find = %+v, want %+v", got, want)
		}
	}
	if _, err := res.Find(ctx, 0, "unknown"); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("admin Find of an unknown order = %v, want %v", err, domain.ErrNotFound)
	}
}

func TestReservationsForUser(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	client, s := newStock(t, 0)
	for id := domain.VoucherID(1); id <= 3; id++ {
		warm(t, client, s, voucher(id, 10, 3))
	}
	res := redisstore.NewReservations(client, redisstore.Options{Prefix: s.Keys().Prefix})
	// Order ids are unique across vouchers, as the application mints them.
	a, b := grab(1, 7, 1), grab(3, 7, 2)
	a.OrderID, b.OrderID = "o7-a", "o7-b"
	check(t, s.Reserve(ctx, a))
	check(t, s.Reserve(ctx, b))
	check(t, s.Reserve(ctx, grab(2, 8, 1))) // another user's

	got, err := res.ForUser(ctx, 7)
	check(t, err)
	if len(got) != 2 || !sameReservation(got[0], a) || !sameReservation(got[1], b) {
		t.Fatalf("ForUser = %+v, want %+v and %+v", got, a, b)
	}
	if _, err := s.Release(ctx, order(a)); err != nil {
		t.Fatal(err)
	}
	got, err = res.ForUser(ctx, 7)
	check(t, err)
	if len(got) != 1 || !sameReservation(got[0], b) {
		t.Fatalf("ForUser after a release = %+v, want only %+v", got, b)
	}
	if got, err := res.ForUser(ctx, 99); err != nil || len(got) != 0 {
		t.Fatalf("ForUser of a user without reservations = %+v, %v", got, err)
	}
}
