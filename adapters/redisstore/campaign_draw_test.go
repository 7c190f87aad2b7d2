package redisstore_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/seckill/seckill/adapters/redisstore"
	"github.com/seckill/seckill/domain"
)

// drawDrop is drop sold by one draw whose sale began a second ago by the sale's clock:
// its vouchers draw vouchers of one unit a user, the campaign's room taking entries
// from an hour ago.
func drawDrop(id domain.CampaignID, n, stock, capUnits, limit int) (domain.Campaign, []domain.Voucher) {
	c, vs := drop(id, n, stock, capUnits, limit)
	c.Admission, c.Seed = domain.AdmissionDraw, domain.Seed{byte(id), 3}
	c.BeginsAt, c.EntriesOpenAt = time.Now().Add(-time.Second), time.Now().Add(-time.Hour)
	for k := range vs {
		vs[k].Admission, vs[k].Seed, vs[k].PerUserLimit = c.Admission, c.Seed, 1
		vs[k].BeginsAt, vs[k].EntriesOpenAt = c.BeginsAt, c.EntriesOpenAt
	}
	return c, vs
}

// takePart takes every step of voucher id's part of d (takeSteps); it returns the
// orders reserved.
func takePart(t testing.TB, e *redisstore.Entries, d domain.Draw, id domain.VoucherID, batch int) int {
	t.Helper()
	return takeSteps(t, e, id, d.DropSteps()[id].Steps, batch)
}

// TestDropEntriesKeepTheLatestChoice: a campaign's entries are one per user under its
// room id, the latest choice standing; closed, they are read with their choices, and
// no entry is taken after.
func TestDropEntriesKeepTheLatestChoice(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	client, s := newStock(t, 0)
	e := redisstore.NewEntries(s)
	c, vs := drawDrop(21, 2, 1, 0, 1)
	open := c.Room()
	open.BeginsAt = time.Now().Add(time.Hour)
	cleanupEntries(t, client, s, open.ID)
	for _, entry := range []domain.DropEntry{{User: 5, Choice: vs[0].ID}, {User: 6, Choice: vs[0].ID}, {User: 5, Choice: vs[1].ID}} {
		if _, err := e.EnterDrop(ctx, open, entry.User, entry.Choice); err != nil {
			t.Fatalf("enter %+v: %v", entry, err)
		}
	}
	if n, err := e.Count(ctx, open.ID); err != nil || n != 2 {
		t.Fatalf("count = %d, %v; want 2", n, err)
	}
	if _, err := e.CloseDrop(ctx, open); !errors.Is(err, domain.ErrNotStarted) {
		t.Fatalf("close before the start: %v, want not started", err)
	}
	got, err := e.CloseDrop(ctx, c.Room())
	check(t, err)
	slices.SortFunc(got, func(a, b domain.DropEntry) int { return int(a.User - b.User) })
	if want := []domain.DropEntry{{User: 5, Choice: vs[1].ID}, {User: 6, Choice: vs[0].ID}}; !slices.Equal(got, want) {
		t.Fatalf("entries %v, want %v", got, want)
	}
	if _, err := e.EnterDrop(ctx, open, 7, vs[0].ID); !errors.Is(err, domain.ErrEntriesClosed) {
		t.Fatalf("an entry after the close: %v, want entries closed", err)
	}
}

// TestDropDrawOpensItsVouchersTogether: a campaign's draw is carried out one voucher's
// part at a time; no voucher takes a grab until every part is taken, then all do at
// once. The winners become the campaign's holders, and the cap the campaign holds in
// Redis bounds the winners reserved even when the draw was walked against a higher
// one: never a unit past the cap.
func TestDropDrawOpensItsVouchersTogether(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	client, s := newStock(t, time.Hour)
	e := redisstore.NewEntries(s)
	c, vs := drawDrop(22, 2, 3, 4, 2)
	warmDrop(t, client, s, c, vs)
	var entries []domain.DropEntry
	for u := domain.UserID(100); u < 110; u++ {
		entries = append(entries, domain.DropEntry{User: u, Choice: vs[int(u)%2].ID})
	}
	walked := c
	walked.Cap = nil // as if walked against no cap: Redis's cap of 4 still holds
	d := domain.NewDropDraw(walked, vs, entries, time.Now())
	if d.Winners != 6 {
		t.Fatalf("walked winners = %d, want 6 (3 of each voucher)", d.Winners)
	}
	first := liveTake(vs[0].ID, 999, 1)
	reserved := takePart(t, e, d, vs[0].ID, 2)
	if _, drawn, err := e.Progress(ctx, vs[0].ID); err != nil || !drawn {
		t.Fatalf("the first voucher's part: drawn %v, %v", drawn, err)
	}
	if err := s.Reserve(ctx, first); !errors.Is(err, domain.ErrNotStarted) {
		t.Fatalf("a grab while another voucher's part is to come: %v, want not started", err)
	}
	reserved += takePart(t, e, d, vs[1].ID, 2)
	if reserved != 4 {
		t.Fatalf("reserved %d winners, want the cap's 4", reserved)
	}
	for _, w := range d.WinnerIDs() {
		var held int
		for _, v := range vs {
			if ok, _ := client.HExists(ctx, s.Keys().Buyers(v.ID), w.String()).Result(); ok {
				held++
			}
		}
		member, err := client.SIsMember(ctx, s.Keys().CampaignHolders(c.ID), w.String()).Result()
		check(t, err)
		if held == 1 && !member {
			t.Fatalf("winner %d holds a unit but is not among the campaign's holders", w)
		}
	}
	// The first voucher's part came first: its 3 winners took its stock; the
	// second's reached 1 of its 3 before the cap.
	if err := s.Reserve(ctx, liveTake(vs[1].ID, 999, 1)); !errors.Is(err, domain.ErrCampaignSoldOut) {
		t.Fatalf("a grab once the draw took the cap: %v, want the campaign sold out", err)
	}
}
