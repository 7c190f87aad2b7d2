package domain

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"slices"
	"time"
)

// The errors of a draw.
var (
	// ErrNotDraw: the voucher admits first come or through a waiting room, so it
	// takes no entries and has no draw (409 not_a_draw).
	ErrNotDraw = errors.New("voucher is not a draw")
	// ErrDrawUnsupported: the stock strategy keeps no entries (only the Redis
	// strategies, lua and watch, run draws) (409 draw_unsupported).
	ErrDrawUnsupported = errors.New("draw unsupported by the stock strategy")
)

// Draw is a voucher's drawn result, recorded before any winner's order exists: its
// shuffle (the seed, the entrants, their digest, and when it was drawn, At) and how
// many of the shuffled entrants win an order: the first Winners of Order(). The rest
// of Order(), in order, is the backfill: each unit a winner's order gives back goes
// to the next of them. A campaign's draw (Drop set, NewDropDraw) has Winners winners
// too, those Won marks, each of the voucher it chose.
type Draw struct {
	SeededShuffle
	Winners int
	// Drop is nil for a voucher's draw.
	Drop *Drop
}

// WinnerIDs returns the draw's winners in the order of the shuffle.
func (d Draw) WinnerIDs() []UserID {
	order := d.Order()
	if d.Drop == nil {
		return order[:d.Winners]
	}
	winners := make([]UserID, 0, d.Winners)
	for i, won := range d.Won() {
		if won {
			winners = append(winners, order[i])
		}
	}
	return winners
}

// NewDraw draws v: entrants (in any order, each once) shuffled by v's seed
// (NewSeededShuffle), the first min(v.Stock, len(entrants)) of the shuffle winning,
// at.
func NewDraw(v Voucher, entrants []UserID, at time.Time) Draw {
	sh := NewSeededShuffle(v.ID, v.Seed, entrants, at)
	return Draw{SeededShuffle: sh, Winners: min(v.Stock, sh.Count)}
}

// StepKey names step i of the draw (DrawSteps) among every step of every draw: the
// voucher, the seed and i. The order id of the step is derived from it, so a step
// carried out again is known by its order.
func (d Draw) StepKey(i int) []byte {
	key := make([]byte, 0, 8+len(d.Seed)+8)
	key = binary.BigEndian.AppendUint64(key, uint64(d.Voucher))
	key = append(key, d.Seed[:]...)
	return binary.BigEndian.AppendUint64(key, uint64(i))
}

// DrawSteps returns the steps that carry out a draw of order (its permutation) with
// winners winners, in the order they are taken: first the backfill (order[winners:],
// each to the end of the voucher's waitlist), then the winners (order[:winners], each
// an order of one unit), so a unit a winner gives back always finds the backfill in
// place. Step i of the result is order[(winners+i) % len(order)]; Winner reports
// which of them are winners.
func DrawSteps(order []UserID, winners int) []DrawStep {
	steps := make([]DrawStep, 0, len(order))
	for _, u := range order[winners:] {
		steps = append(steps, DrawStep{User: u})
	}
	for _, u := range order[:winners] {
		steps = append(steps, DrawStep{User: u, Winner: true})
	}
	return steps
}

// DrawStep is one user's place in a draw being carried out: a winner gets an order,
// anyone else joins the backfill.
type DrawStep struct {
	User   UserID
	Winner bool
}

// PackEntrants encodes sorted entrants (ascending) compactly: each id's difference to
// the one before it (the first's to 0) as a uvarint. UnpackEntrants reverses it.
func PackEntrants(sorted []UserID) []byte {
	buf := make([]byte, 0, len(sorted)*3)
	var prev UserID
	for _, id := range sorted {
		buf = binary.AppendUvarint(buf, uint64(id-prev))
		prev = id
	}
	return buf
}

// UnpackEntrants decodes what PackEntrants encoded.
func UnpackEntrants(b []byte) ([]UserID, error) {
	var ids []UserID
	var prev UserID
	for len(b) > 0 {
		d, n := binary.Uvarint(b)
		if n <= 0 {
			return nil, errors.New("entrants: malformed encoding")
		}
		prev += UserID(d)
		ids = append(ids, prev)
		b = b[n:]
	}
	if !slices.IsSorted(ids) {
		return nil, errors.New("entrants: not sorted")
	}
	return ids, nil
}

// SeedHex returns the seed in hex, as a draw publishes it.
func SeedHex(s Seed) string { return hex.EncodeToString(s[:]) }
