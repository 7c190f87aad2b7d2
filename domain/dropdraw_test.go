package domain_test

import (
	"slices"
	"testing"
	"time"

	"github.com/seckill/seckill/domain"
)

// TestDropDrawWalksTheShuffle: a drop's draw of 12 entrants over two vouchers of 3 and
// 5 units under a cap of 6 gives each entrant, in the shuffle's order, its choice while
// that voucher and the cap have units; its parts list each voucher's backfill, then
// its winners, each step keyed by its entrant's place in the shuffle; the digest is
// over the entrants' "user_id,voucher_id" lines.
func TestDropDrawWalksTheShuffle(t *testing.T) {
	capUnits := 6
	c := domain.Campaign{ID: 4, Variants: 2, Cap: &capUnits, Seed: domain.Seed{1, 2, 3}}
	small, large := domain.Voucher{ID: c.ID.Variant(1), Stock: 3}, domain.Voucher{ID: c.ID.Variant(2), Stock: 5}
	var entries []domain.DropEntry
	for u := domain.UserID(112); u > 100; u-- {
		choice := large.ID
		if u%3 != 0 {
			choice = small.ID // 8 want the small one's 3 units
		}
		entries = append(entries, domain.DropEntry{User: u, Choice: choice})
	}
	d := domain.NewDropDraw(c, []domain.Voucher{large, small}, entries, time.Unix(1, 0))
	if d.Voucher != c.ID.Room() || !slices.IsSorted(d.Entrants) || d.Drop.Cap != 6 || !slices.Equal(d.Drop.Units, []int{3, 5}) {
		t.Fatalf("draw %+v %+v", d.SeededShuffle, d.Drop)
	}
	chose := map[domain.UserID]domain.VoucherID{}
	for _, e := range entries {
		chose[e.User] = e.Choice
	}
	units := map[domain.VoucherID]int{small.ID: 3, large.ID: 5}
	capLeft := 6
	var want []domain.UserID
	for _, u := range domain.Shuffle(c.Seed, d.Entrants) {
		if capLeft > 0 && units[chose[u]] > 0 {
			units[chose[u]]--
			capLeft--
			want = append(want, u)
		}
	}
	// 3 of the 8 who want the small one, and of the 4 who want the large one as many
	// as the cap leaves: 6 in all.
	if got := d.WinnerIDs(); !slices.Equal(got, want) || d.Winners != 6 || len(want) != 6 {
		t.Fatalf("winners %v (%d), want %v", got, d.Winners, want)
	}
	order := d.Order()
	parts := d.DropSteps()
	steps := 0
	for v, p := range parts {
		steps += len(p.Steps)
		backfill := true
		for i, st := range p.Steps {
			if chose[st.User] != v || order[p.Places[i]] != st.User {
				t.Fatalf("voucher %s's step %d: %+v at place %d", v, i, st, p.Places[i])
			}
			if st.Winner && backfill {
				backfill = false
			} else if !st.Winner && !backfill {
				t.Fatalf("voucher %s: a backfill step after its winners", v)
			}
			if i > 0 && st.Winner == p.Steps[i-1].Winner && p.Places[i] < p.Places[i-1] {
				t.Fatalf("voucher %s: steps out of the shuffle's order", v)
			}
		}
	}
	if steps != len(entries) {
		t.Fatalf("%d steps, want one per entrant", steps)
	}
	var lines []byte
	for i, u := range d.Entrants {
		lines = domain.AppendDropEntrant(lines, u, d.Drop.Choices[i])
	}
	if d.Digest != domain.DropEntrantsDigest(d.Entrants, d.Drop.Choices) || string(lines[:4]) != "101," {
		t.Fatalf("digest %s over %q", d.Digest, lines)
	}
}
