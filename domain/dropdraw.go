package domain

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"time"
)

// Drop is what a campaign's draw (a drop's) adds to a draw: each entrant's choice and
// the units the walk of the shuffle hands out. The draw goes by the campaign's room id
// (CampaignID.Room); its entrants are shuffled as a voucher's draw's are (by user id
// alone), and walking the shuffle each entrant wins the voucher it chose while that
// voucher and the campaign's cap have units (Won). Those who do not win join their
// choice's backfill, as a voucher draw's losers do.
type Drop struct {
	// Choices[i] is the voucher Entrants[i] chose.
	Choices []VoucherID
	// Units is each voucher's stock when the draw ran, by its number in the campaign
	// (Units[k-1] for Variant(k)): what the walk hands out.
	Units []int
	// Cap is the campaign's cap when the draw ran, -1 for none.
	Cap int
}

// DropEntry is one entrant of a campaign's draw and the voucher it chose.
type DropEntry struct {
	User   UserID
	Choice VoucherID
}

// NewDropDraw draws campaign c's drop at at: entries (in any order, one per user)
// shuffled by c's seed under c's room id, walked against variants' stocks (c's
// vouchers, each once, in any order) and c's cap. An entry naming a voucher not among
// variants never wins.
func NewDropDraw(c Campaign, variants []Voucher, entries []DropEntry, at time.Time) Draw {
	users := make([]UserID, len(entries))
	chose := make(map[UserID]VoucherID, len(entries))
	for i, e := range entries {
		users[i], chose[e.User] = e.User, e.Choice
	}
	sh := NewSeededShuffle(c.ID.Room(), c.Seed, users, at)
	drop := &Drop{Choices: make([]VoucherID, len(sh.Entrants)), Units: make([]int, c.Variants), Cap: -1}
	for i, u := range sh.Entrants {
		drop.Choices[i] = chose[u]
	}
	for _, v := range variants {
		if camp, k := v.ID.Campaign(); camp == c.ID && k >= 1 && k <= len(drop.Units) {
			drop.Units[k-1] = v.Stock
		}
	}
	if c.Cap != nil {
		drop.Cap = *c.Cap
	}
	sh.Digest = DropEntrantsDigest(sh.Entrants, drop.Choices)
	d := Draw{SeededShuffle: sh, Drop: drop}
	for _, won := range d.Won() {
		if won {
			d.Winners++
		}
	}
	return d
}

// DropEntrantsDigest returns the hex SHA-256 of a drop's entrants, sorted ascending,
// one line each, "user_id,voucher_id\n", choices[i] being sorted[i]'s: what a
// campaign's draw publishes as entrants_digest.
func DropEntrantsDigest(sorted []UserID, choices []VoucherID) string {
	h := sha256.New()
	var buf []byte
	for i, u := range sorted {
		buf = AppendDropEntrant(buf[:0], u, choices[i])
		h.Write(buf)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// AppendDropEntrant appends the line of a drop's entrant, "user_id,voucher_id\n".
func AppendDropEntrant(buf []byte, user UserID, choice VoucherID) []byte {
	buf = strconv.AppendInt(buf, int64(user), 10)
	buf = append(buf, ',')
	buf = strconv.AppendInt(buf, int64(choice), 10)
	return append(buf, '\n')
}

// Won walks a drop's draw: for each place of Order(), whether its entrant wins the
// voucher it chose — while that voucher has units and the cap has units, one each. It
// returns nil for a voucher's draw.
func (d Draw) Won() []bool {
	if d.Drop == nil {
		return nil
	}
	choice := make(map[UserID]VoucherID, len(d.Entrants))
	for i, u := range d.Entrants {
		choice[u] = d.Drop.Choices[i]
	}
	units := append([]int(nil), d.Drop.Units...)
	capLeft := d.Drop.Cap
	order := d.Order()
	won := make([]bool, len(order))
	for i, u := range order {
		_, k := choice[u].Campaign()
		if capLeft == 0 || k < 1 || k > len(units) || units[k-1] == 0 {
			continue
		}
		units[k-1]--
		if capLeft > 0 {
			capLeft--
		}
		won[i] = true
	}
	return won
}

// DropSteps splits a drop's draw into its vouchers' steps: for each voucher chosen,
// the steps that carry its part out (as DrawSteps orders a voucher's: its backfill —
// those who chose it and did not win, in the shuffle's order — then its winners) and,
// for each step, its entrant's place in Order(), which keys the step (StepKey) among
// all of the drop's.
func (d Draw) DropSteps() map[VoucherID]DropPart {
	order, won := d.Order(), d.Won()
	choice := make(map[UserID]VoucherID, len(d.Entrants))
	for i, u := range d.Entrants {
		choice[u] = d.Drop.Choices[i]
	}
	parts := map[VoucherID]DropPart{}
	for pass := range 2 {
		for i, u := range order {
			if won[i] != (pass == 1) {
				continue
			}
			v := choice[u]
			p := parts[v]
			p.Steps = append(p.Steps, DrawStep{User: u, Winner: won[i]})
			p.Places = append(p.Places, i)
			parts[v] = p
		}
	}
	return parts
}

// DropPart is one voucher's part of a drop's draw: its steps, and each one's place in
// the draw's Order().
type DropPart struct {
	Steps  []DrawStep
	Places []int
}
