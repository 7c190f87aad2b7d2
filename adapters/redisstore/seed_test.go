package redisstore_test

import (
	"context"
	"errors"
	"testing"

	"github.com/seckill/seckill/domain"
)

func TestImportRecordsReservationsAsAWarmUpWould(t *testing.T) {
	ctx := context.Background()
	client, s := newStock(t, 0)
	v := voucher(1, 10, 2)
	v.Sold = 3
	cleanup(t, client, s, v.ID)
	if _, err := s.Warm(ctx, v); err != nil {
		t.Fatal(err)
	}
	a := newAudit(client, s)
	rs := []domain.Reservation{grab(v.ID, 1, 2), grab(v.ID, 2, 1)}
	check(t, a.Import(ctx, rs))
	check(t, a.Restored(ctx, v.ID))
	snap := snapshot(t, a, v.ID)
	if !sameReservations(snap.Reservations, rs) || snap.Remaining != 7 {
		t.Fatalf("Snapshot = %+v, want reservations %v and 7 remaining", snap, rs)
	}
	var held *domain.AlreadyPurchasedError
	if err := s.Reserve(ctx, grab(v.ID, 1, 1)); !errors.As(err, &held) || held.OrderID != rs[0].OrderID {
		t.Fatalf("grab of an imported buyer = %v, want already purchased %s", err, rs[0].OrderID)
	}
	if err := a.Import(ctx, []domain.Reservation{grab(v.ID+1, 1, 1)}); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("Import into a voucher without sale state = %v, want not found", err)
	}
}
