package domain_test

import (
	"crypto/sha256"
	"strconv"
	"testing"

	"github.com/seckill/seckill/domain"
)

// SolvePow finds the first nonce whose SHA-256 starts with the difficulty's zero bits,
// and PowSolves agrees with the hash, bit by bit.
func TestPowSolvesByLeadingZeroBits(t *testing.T) {
	t.Parallel()
	const challenge = "AAAAAAAAAAAAAAAAAAAAAAE"
	for _, difficulty := range []int{1, 4, 8, 12, 13} {
		nonce := domain.SolvePow(challenge, difficulty)
		if !domain.PowSolves(challenge, nonce, difficulty) {
			t.Fatalf("SolvePow(%d) = %s, which PowSolves refuses", difficulty, nonce)
		}
		n, _ := strconv.Atoi(nonce)
		for earlier := range n {
			if domain.PowSolves(challenge, strconv.Itoa(earlier), difficulty) {
				t.Fatalf("SolvePow(%d) = %s, but %d solves it too", difficulty, nonce, earlier)
			}
		}
		sum := sha256.Sum256([]byte(challenge + ":" + nonce))
		if zeros := leadingZeroBits(sum[:]); zeros < difficulty {
			t.Fatalf("SHA-256 of the solution starts with %d zero bits, want %d", zeros, difficulty)
		} else if domain.PowSolves(challenge, nonce, zeros+1) {
			t.Fatalf("PowSolves accepts %d bits for a hash with %d", zeros+1, zeros)
		}
	}
	for _, d := range []int{0, -1, 257} {
		if domain.PowSolves(challenge, "0", d) {
			t.Errorf("PowSolves at difficulty %d: true, want false", d)
		}
	}
}

func leadingZeroBits(b []byte) int {
	n := 0
	for _, c := range b {
		for bit := 7; bit >= 0; bit-- {
			if c>>bit&1 != 0 {
				return n
			}
			n++
		}
	}
	return n
}

// BenchmarkPowSolves is the service's share of checking a proof: one SHA-256.
func BenchmarkPowSolves(b *testing.B) {
	const challenge = "AAAAAAAAAAAAAAAAAAAAABA"
	nonce := domain.SolvePow(challenge, 16)
	for b.Loop() {
		if !domain.PowSolves(challenge, nonce, 16) {
			b.Fatal("refused")
		}
	}
}

// BenchmarkSolvePow16 is a client's share at the default difficulty (16 bits): about
// 65,536 hashes on average, here for one fixed challenge.
func BenchmarkSolvePow16(b *testing.B) {
	for b.Loop() {
		domain.SolvePow("AAAAAAAAAAAAAAAAAAAAABA", 16)
	}
}
