package application_test

import (
	"math/rand/v2"
	"testing"

	"github.com/seckill/seckill/domain"
)

// BenchmarkShuffle100000 measures what the shuffle of a waiting room of 100,000 early
// joiners computes, on the instance holding its lease, before anything is saved: the
// entrants sorted, their digest, and the seeded permutation (domain.Shuffle, which
// sorts its own copy).
func BenchmarkShuffle100000(b *testing.B) {
	const n = 100000
	rng := rand.New(rand.NewPCG(1, 2))
	early := make([]domain.UserID, n)
	for i := range early {
		early[i] = domain.UserID(rng.Int64N(1 << 40))
	}
	seed := domain.NewSeed()
	b.ResetTimer()
	for range b.N {
		sorted := domain.SortEntrants(early)
		_ = domain.EntrantsDigest(sorted)
		if order := domain.Shuffle(seed, sorted); len(order) != n {
			b.Fatal(len(order))
		}
	}
}
