package domain

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"time"
)

// Admission is how a voucher's buyers are let in to grab.
type Admission string

// The admission modes.
const (
	// AdmissionFirstCome: whoever grabs first, by the sale's clock, gets a unit.
	AdmissionFirstCome Admission = "first_come"
	// AdmissionWaitingRoom: buyers join a queue; those who joined before the sale
	// begins are shuffled by the voucher's seed, later ones follow in arrival order,
	// and each is let in with a pass (Pass) that the grab requires.
	AdmissionWaitingRoom Admission = "waiting_room"
	// AdmissionDraw: buyers enter a draw until the sale begins; the shuffle by the
	// voucher's seed picks the winners, who get an order each.
	AdmissionDraw Admission = "draw"
)

// Shuffled reports whether a mode orders its buyers by the seeded shuffle.
func (a Admission) Shuffled() bool { return a == AdmissionWaitingRoom || a == AdmissionDraw }

// ChallengeKind is what a voucher asks of a client before it may grab, join its queue
// or enter its draw.
type ChallengeKind string

// The challenge kinds.
const (
	// ChallengeNone asks nothing.
	ChallengeNone ChallengeKind = "none"
	// ChallengePow asks for a proof of work: a nonce whose SHA-256 with the
	// challenge starts with PowDifficulty zero bits.
	ChallengePow ChallengeKind = "pow"
)

// Defaults and bounds of the admission settings.
const (
	// DefaultQueueWindow is how many passes may be outstanding at once by default.
	DefaultQueueWindow = 500
	// MaxQueueWindow bounds a voucher's queue window.
	MaxQueueWindow = 1_000_000
	// DefaultQueueLead is how long before the sale a waiting room opens by default.
	DefaultQueueLead = 10 * time.Minute
	// DefaultPowDifficulty is the proof of work's difficulty by default, in bits.
	DefaultPowDifficulty = 16
	// MaxPowDifficulty bounds the difficulty a voucher may set (the service may add
	// a few bits under load).
	MaxPowDifficulty = 32
	// PassLifetime is how long a waiting room's pass stays valid once issued.
	PassLifetime = 120 * time.Second
	// SeedSize is the size of a shuffle's seed, in bytes.
	SeedSize = 32
)

// Seed is the secret a shuffle is drawn by.
type Seed [SeedSize]byte

// NoSeed is the seed of a voucher that has none (first come).
var NoSeed Seed

// NewSeed draws a seed from crypto/rand.
func NewSeed() Seed {
	var s Seed
	_, _ = rand.Read(s[:]) // crypto/rand.Read never fails (it panics if it cannot read)
	return s
}

// OwnRoom reports whether v is sold through a waiting room under its own id: a
// waiting-room voucher outside any campaign, or a campaign's room
// (Campaign.Room). A campaign's voucher is sold through its campaign's room.
func (v Voucher) OwnRoom() bool {
	return v.Admission == AdmissionWaitingRoom && v.ID.Room() == v.ID
}

// Commitment returns the hex SHA-256 of the voucher's seed, published when joining
// opens so that the seed revealed after the shuffle can be checked; "" for a voucher
// without a seed.
func (v Voucher) Commitment() string {
	if v.Seed == NoSeed {
		return ""
	}
	sum := sha256.Sum256(v.Seed[:])
	return hex.EncodeToString(sum[:])
}

// validateAdmission checks the admission settings of v (WithAdmissionDefaults fills
// in those a request leaves out).
func (v Voucher) validateAdmission() error {
	// A voucher built without admission settings (older code, tests) is first come,
	// with no challenge.
	if v.Admission == "" {
		v.Admission = AdmissionFirstCome
	}
	if v.Challenge == "" {
		v.Challenge = ChallengeNone
	}
	switch v.Admission {
	case AdmissionFirstCome, AdmissionWaitingRoom, AdmissionDraw:
	default:
		return Invalid("admission", "must be first_come, waiting_room or draw")
	}
	if err := validateChallenge(v.Challenge, v.PowDifficulty); err != nil {
		return err
	}
	switch v.Admission {
	case AdmissionWaitingRoom:
		switch {
		case v.QueueWindow < 1 || v.QueueWindow > MaxQueueWindow:
			return Invalid("queue_window", "must be between 1 and 1000000")
		case outOfRange(v.QueueOpensAt):
			return Invalid("queue_opens_at", "must be between 1970 and 9999")
		case !v.QueueOpensAt.Before(v.BeginsAt):
			return Invalid("queue_opens_at", "must be before begins_at")
		}
	case AdmissionDraw:
		switch {
		case outOfRange(v.EntriesOpenAt):
			return Invalid("entries_open_at", "must be between 1970 and 9999")
		case !v.EntriesOpenAt.Before(v.BeginsAt):
			return Invalid("entries_open_at", "must be before begins_at")
		case v.PerUserLimit != 1:
			return Invalid("per_user_limit", "must be 1 in a draw (one unit per winner)")
		}
	}
	if v.Admission.Shuffled() != (v.Seed != NoSeed) {
		return Invalid("seed", "is drawn for a waiting room or a draw, and only for them")
	}
	return nil
}

// WithAdmissionDefaults returns v with the admission settings it leaves unset filled
// in, as a voucher created at now gets them: first_come, no challenge, a difficulty of
// DefaultPowDifficulty for a proof of work, and for a waiting room a window of
// DefaultQueueWindow opening DefaultQueueLead before the sale, for a draw entries
// open from now. Settings a mode does not use are cleared.
func (v Voucher) WithAdmissionDefaults(now time.Time) Voucher {
	if v.Admission == "" {
		v.Admission = AdmissionFirstCome
	}
	if v.Challenge == "" {
		v.Challenge = ChallengeNone
	}
	if v.Challenge != ChallengePow {
		v.PowDifficulty = 0
	} else if v.PowDifficulty == 0 {
		v.PowDifficulty = DefaultPowDifficulty
	}
	if v.Admission != AdmissionWaitingRoom {
		v.QueueOpensAt, v.QueueWindow = time.Time{}, 0
	} else {
		if v.QueueWindow == 0 {
			v.QueueWindow = DefaultQueueWindow
		}
		if v.QueueOpensAt.IsZero() {
			v.QueueOpensAt = v.BeginsAt.Add(-DefaultQueueLead)
		}
	}
	if v.Admission != AdmissionDraw {
		v.EntriesOpenAt = time.Time{}
	} else if v.EntriesOpenAt.IsZero() {
		v.EntriesOpenAt = now
	}
	return v
}

// validateChallenge checks a challenge and its difficulty ("" reads as none).
func validateChallenge(kind ChallengeKind, difficulty int) error {
	switch kind {
	case "", ChallengeNone, ChallengePow:
	default:
		return Invalid("challenge", "must be none or pow")
	}
	if kind == ChallengePow && (difficulty < 1 || difficulty > MaxPowDifficulty) {
		return Invalid("pow_difficulty", "must be between 1 and 32")
	}
	return nil
}
