package domain

import (
	"crypto/sha256"
	"strconv"
)

// MaxPowNonce is the longest nonce a proof of work may carry, in decimal digits: every
// uint64 fits, and a longer one is no answer to a challenge of at most 32 bits.
const MaxPowNonce = 20

// PowSolves reports whether nonce answers challenge at difficulty, as the contract
// defines the proof of work: SHA-256(challenge + ":" + nonce) starts with difficulty
// zero bits. It costs one SHA-256. A difficulty below 1 or above 256 never solves.
func PowSolves(challenge, nonce string, difficulty int) bool {
	if difficulty < 1 || difficulty > 256 {
		return false
	}
	buf := make([]byte, 0, len(challenge)+1+len(nonce))
	buf = append(append(append(buf, challenge...), ':'), nonce...)
	return leadingZeros(sha256.Sum256(buf), difficulty)
}

// SolvePow returns the smallest decimal nonce that answers challenge at difficulty:
// what a client does before it grabs (2^difficulty hashes on average; the live page
// does the same in the browser). A difficulty below 1 is answered by "0".
func SolvePow(challenge string, difficulty int) string {
	prefix := append([]byte(challenge), ':')
	buf := make([]byte, 0, len(prefix)+MaxPowNonce)
	for n := uint64(0); ; n++ {
		buf = strconv.AppendUint(append(buf[:0], prefix...), n, 10)
		if difficulty < 1 || leadingZeros(sha256.Sum256(buf), difficulty) {
			return strconv.FormatUint(n, 10)
		}
	}
}

// leadingZeros reports whether sum starts with at least bits zero bits (bits at most
// 256).
func leadingZeros(sum [sha256.Size]byte, bits int) bool {
	for i := 0; i < bits/8; i++ {
		if sum[i] != 0 {
			return false
		}
	}
	if rest := bits % 8; rest != 0 {
		return sum[bits/8]>>(8-rest) == 0
	}
	return true
}
