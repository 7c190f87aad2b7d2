package domain

import (
	"crypto/sha256"
	"encoding/hex"
	"math/rand/v2"
	"slices"
	"strconv"
)

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
