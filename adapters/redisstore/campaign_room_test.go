package redisstore_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/seckill/seckill/domain"
)

// roomDrop returns a campaign of n vouchers sold through one waiting room, as
// drop does, and the room.
func roomDrop(id domain.CampaignID, n, stock, capUnits, limit int) (domain.Campaign, []domain.Voucher, domain.Voucher) {
	c, vs := drop(id, n, stock, capUnits, limit)
	c.Admission, c.QueueWindow, c.QueueOpensAt = domain.AdmissionWaitingRoom, 10, c.BeginsAt.Add(-time.Hour)
	for k := range vs {
		vs[k].Admission = domain.AdmissionWaitingRoom
	}
	return c, vs, c.Room()
}

// passed returns r carrying the pass that expires at expires.
func passed(r domain.Reservation, expires time.Time) domain.Reservation {
	r.Pass = expires
	return r
}

func TestCampaignRoomAdmitsToTheWholeDrop(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := room(t)
	// Two sizes of 3 units, 4 units in all, 2 a user.
	c, vs, r := roomDrop(11, 2, 3, 4, 2)
	warmDrop(t, w.client, w.stock, c, vs)
	if r.ID != c.ID.Variant(0) || r.ID.Room() != r.ID || vs[1].ID.Room() != r.ID {
		t.Fatalf("room %s; the vouchers' rooms %s, %s", r.ID, vs[0].ID.Room(), vs[1].ID.Room())
	}
	*w.at = r.BeginsAt.UnixMilli() - 1000
	for u := domain.UserID(1); u <= 8; u++ {
		if early, err := w.Join(ctx, r, u); err != nil || !early {
			t.Fatalf("Join(%d) = %v, %v", u, early, err)
		}
	}
	*w.at = r.BeginsAt.UnixMilli()
	if _, closed, err := w.Close(ctx, r); err != nil || !closed {
		t.Fatalf("Close = %v, %v", closed, err)
	}
	order := []domain.UserID{1, 2, 3, 4, 5, 6, 7, 8}
	check(t, w.Install(ctx, r, order))
	*w.at += 10
	a, err := w.Admit(ctx, r, 3, 3*time.Hour, nil)
	check(t, err)
	if !slices.Equal(a.Users, order[:3]) || a.Outstanding != 3 {
		t.Fatalf("Admit = %+v; want %v", a, order[:3])
	}
	pass := a.Expires

	// A pass admits one order of any of the drop's vouchers, once.
	first := passed(takeVariant(vs[0].ID, 1, 1), pass)
	check(t, w.stock.Reserve(ctx, first))
	if err := w.stock.Reserve(ctx, passed(takeVariant(vs[1].ID, 1, 1), pass)); !errors.Is(err, domain.ErrQueueRequired) {
		t.Fatalf("the pass used again on the other voucher: %v, want %v", err, domain.ErrQueueRequired)
	}
	if err := w.stock.Reserve(ctx, takeVariant(vs[1].ID, 4, 1)); !errors.Is(err, domain.ErrQueueRequired) {
		t.Fatalf("a grab with no pass: %v, want %v", err, domain.ErrQueueRequired)
	}
	check(t, w.stock.Reserve(ctx, passed(takeVariant(vs[1].ID, 2, 2), pass)))

	// A third size joins the drop: the room learns it, and judges by it.
	third := voucher(c.ID.Variant(3), 3, 2)
	third.CampaignID, third.Admission = c.ID, domain.AdmissionWaitingRoom
	_, err = w.stock.Warm(ctx, third)
	check(t, err)
	c.Variants = 3
	check(t, w.stock.WarmCampaign(ctx, c))

	// Redis forgets the room (its order comes back from the database): the users who
	// hold units of the drop were let in before, and are passed over.
	k := w.keys
	check(t, w.client.Del(ctx, k.Room(r.ID), k.RoomLine(r.ID), k.Passes(r.ID)).Err())
	check(t, w.Install(ctx, r, order))
	a, err = w.Admit(ctx, r, 3, 3*time.Hour, nil)
	check(t, err)
	if want := []domain.UserID{3, 4, 5}; !slices.Equal(a.Users, want) {
		t.Fatalf("Admit after the room was forgotten = %+v; want %v (1 and 2 hold units)", a, want)
	}
	if p, err := w.Place(ctx, r.ID, 6); err != nil || p.SoldOut || p.Admitted != 5 {
		t.Fatalf("Place(6) = %+v, %v; want not sold out, 5 taken from the line", p, err)
	}
	// The cap's last unit: the drop is sold out though its vouchers hold units.
	check(t, w.stock.Reserve(ctx, passed(takeVariant(third.ID, 3, 1), a.Expires)))
	if p, err := w.Place(ctx, r.ID, 6); err != nil || !p.SoldOut {
		t.Fatalf("Place(6) once the cap is reached = %+v, %v; want sold out", p, err)
	}
	check(t, w.client.ZRem(ctx, k.Passes(r.ID), "4", "5").Err())
	if a, err := w.Admit(ctx, r, 3, 3*time.Hour, nil); err != nil || len(a.Users) != 0 {
		t.Fatalf("Admit once the cap is reached = %+v, %v; want nobody", a, err)
	}
}
