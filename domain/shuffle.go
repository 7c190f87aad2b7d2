package domain

import (
	"crypto/sha256"
	"encoding/hex"
	"math/rand/v2"
	"slices"
	"strconv"
	"time"
)

// SeededShuffle is the published record of a seeded shuffle — a waiting room's early
// joiners, a draw's entrants — kept before anyone is let in or drawn, so it outlives
// any instance and Redis: the voucher's seed, the entrants sorted ascending
// (SortEntrants), how many they are, their digest (EntrantsDigest) and when it ran.
// The order it stands for is Order(); anyone holding the seed and the entrants
// computes it, and checks the entrants against the digest.
type SeededShuffle struct {
	Voucher VoucherID
	Seed    Seed
	// Entrants are the users shuffled, ascending; empty when a summary was read
	// (seed, count and digest).
	Entrants []UserID
	// Count is how many entrants there are (len(Entrants) when they are read).
	Count int
	// Digest is EntrantsDigest(Entrants).
	Digest string
	// At is when the shuffle ran, to the millisecond, in UTC.
	At time.Time
}

// NewSeededShuffle records the shuffle of entrants (in any order, each once) by seed,
// for voucher, at: the one way a room's or a draw's record is made.
func NewSeededShuffle(voucher VoucherID, seed Seed, entrants []UserID, at time.Time) SeededShuffle {
	sorted := SortEntrants(entrants)
	return SeededShuffle{Voucher: voucher, Seed: seed, Entrants: sorted, Count: len(sorted),
		Digest: EntrantsDigest(sorted), At: at.UTC().Truncate(time.Millisecond)}
}

// Order returns the shuffle's permutation of its entrants (Shuffle by its seed).
func (s SeededShuffle) Order() []UserID { return Shuffle(s.Seed, s.Entrants) }

// SortEntrants returns a copy of ids sorted ascending, as numbers: the order the
// seeded shuffle starts from.
func SortEntrants(ids []UserID) []UserID {
	sorted := slices.Clone(ids)
	slices.Sort(sorted)
	return sorted
}

// EntrantsDigest returns the hex SHA-256 of sorted (ascending, as SortEntrants
// returns them), one decimal id per line, each line ending in "\n": what the shuffle
// publishes so anyone can check they hold the same entrants.
func EntrantsDigest(sorted []UserID) string {
	h := sha256.New()
	buf := make([]byte, 0, 24)
	for _, id := range sorted {
		buf = strconv.AppendInt(buf[:0], int64(id), 10)
		buf = append(buf, '\n')
		h.Write(buf)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// Shuffle returns the contract's permutation of entrants by seed:
// the entrants sorted ascending (SortEntrants), then permuted by
// rand.New(rand.NewChaCha8(seed)).Shuffle of math/rand/v2. Anyone holding the seed
// and the entrants computes the same order; the first of the result comes first.
func Shuffle(seed Seed, entrants []UserID) []UserID {
	order := SortEntrants(entrants)
	r := rand.New(rand.NewChaCha8(seed))
	r.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
	return order
}
