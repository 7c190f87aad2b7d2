package domain

import (
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// VoucherID identifies a voucher. Valid ids are positive.
type VoucherID int64

// String returns the id in decimal, as the API and the Redis keys spell it.
func (id VoucherID) String() string { return strconv.FormatInt(int64(id), 10) }

// ParseVoucherID reads a decimal, positive voucher id. It returns a *ValidationError
// for anything else.
func ParseVoucherID(s string) (VoucherID, error) {
	n, err := parsePositive(s)
	if err != nil {
		return 0, Invalid("id", "must be a positive integer")
	}
	return VoucherID(n), nil
}

// UserID identifies a buyer; it is the JWT subject. Valid ids are positive.
type UserID int64

// String returns the id in decimal.
func (id UserID) String() string { return strconv.FormatInt(int64(id), 10) }

// ParseUserID reads a decimal, positive user id. It returns a *ValidationError for
// anything else.
func ParseUserID(s string) (UserID, error) {
	n, err := parsePositive(s)
	if err != nil {
		return 0, Invalid("user", "must be a positive integer")
	}
	return UserID(n), nil
}

// parsePositive reads a canonical positive decimal: digits only, no sign, no leading
// zero, so one id has exactly one spelling.
func parsePositive(s string) (int64, error) {
	// ParseInt accepts a leading sign and leading zeros; ids are plain digits.
	if s == "" || s[0] == '0' || strings.IndexFunc(s, func(r rune) bool { return r < '0' || r > '9' }) >= 0 {
		return 0, ErrInvalid
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 {
		return 0, ErrInvalid
	}
	return n, nil
}

// Limits on what a voucher may hold; they keep a typo from creating an absurd sale.
const (
	MaxTitleLength = 200
	MaxStock       = 10_000_000
)

// Voucher is something put on sale: Stock units sold between BeginsAt (inclusive) and
// EndsAt (exclusive), at most PerUserLimit units to one user, in one order.
type Voucher struct {
	ID           VoucherID
	Title        string
	Stock        int
	BeginsAt     time.Time
	EndsAt       time.Time
	PerUserLimit int
	// Sold is the database's count of units held by live orders.
	Sold int
	// Paused is set while an operator has stopped the sale; grabs answer ErrPaused.
	Paused    bool
	CreatedAt time.Time
	// Version counts the changes of the sale's terms (stock, window, per-user limit)
	// since the voucher was created: 0 at creation, one more with each edit that
	// changes them (Apply). The grab path keeps the version its terms came from, so a
	// late write of older terms is told from a newer one.
	Version int64
	// Admission is how buyers are let in (first come when empty); Challenge what
	// they must solve first (none when empty). Neither changes after creation.
	Admission Admission
	Challenge ChallengeKind
	// QueueOpensAt and QueueWindow are a waiting room's: when joining opens, and how
	// many passes may be outstanding at once.
	QueueOpensAt time.Time
	QueueWindow  int
	// EntriesOpenAt is when a draw starts taking entries.
	EntriesOpenAt time.Time
	// PowDifficulty is the proof of work's difficulty in bits, with ChallengePow.
	PowDifficulty int
	// CampaignID is the campaign the voucher is a variant of (0: none); it never
	// changes, and the voucher's id tells it too (VoucherID.Campaign). The campaign's
	// window, admission and challenge are the voucher's.
	CampaignID CampaignID
	// Seed is the secret of a waiting room's or a draw's shuffle (SeedSize bytes),
	// drawn from crypto/rand when the voucher is created; only its Commitment is
	// shown until the shuffle has run. All zero (NoSeed) for first come.
	Seed Seed
}

// Terms reports whether v and w sell on the same terms: stock, window and per-user
// limit (what the grab path holds of a voucher beside its units).
func (v Voucher) Terms(w Voucher) bool {
	return v.Stock == w.Stock && v.BeginsAt.Equal(w.BeginsAt) && v.EndsAt.Equal(w.EndsAt) && v.PerUserLimit == w.PerUserLimit
}

// ValidateNew checks the rules a voucher must meet to be created at now: those of
// Validate, a sale that has not ended yet, and a draw that has not been drawn yet. It returns a *ValidationError naming
// the first field that breaks one.
func (v Voucher) ValidateNew(now time.Time) error {
	if err := v.Validate(); err != nil {
		return err
	}
	if !v.EndsAt.After(now) {
		return Invalid("ends_at", "must be in the future")
	}
	if v.Admission == AdmissionDraw && !v.BeginsAt.After(now) {
		return Invalid("begins_at", "must be in the future for a draw (it is drawn then)")
	}
	return nil
}

// Validate checks the rules a voucher must meet before it is stored. It returns a
// *ValidationError naming the first field that breaks one.
func (v Voucher) Validate() error {
	if err := validateTitle(v.Title); err != nil {
		return err
	}
	switch {
	case v.Stock <= 0:
		return Invalid("stock", "must be greater than 0")
	case v.Stock > MaxStock:
		return Invalid("stock", "must be at most 10000000")
	case v.BeginsAt.IsZero():
		return Invalid("begins_at", "is required")
	case v.EndsAt.IsZero():
		return Invalid("ends_at", "is required")
	case outOfRange(v.BeginsAt):
		return Invalid("begins_at", "must be between 1970 and 9999")
	case outOfRange(v.EndsAt):
		return Invalid("ends_at", "must be between 1970 and 9999")
	case !v.BeginsAt.Before(v.EndsAt):
		return Invalid("ends_at", "must be after begins_at")
	case v.PerUserLimit < 1:
		return Invalid("per_user_limit", "must be at least 1")
	case v.PerUserLimit > v.Stock:
		return Invalid("per_user_limit", "must not exceed stock")
	}
	return v.validateAdmission()
}

// The range of sale times: what every store holds exactly (PostgreSQL has no year 0,
// Redis keys expire at a Unix time, the grab script compares Unix milliseconds).
var (
	minSaleTime = time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC)
	maxSaleTime = time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC)
)

func outOfRange(t time.Time) bool { return t.Before(minSaleTime) || t.After(maxSaleTime) }

// validateTitle accepts 1 to MaxTitleLength characters of valid UTF-8, not all
// spaces, with no control character (NUL included: PostgreSQL refuses it in text),
// line or paragraph separator, or private-use character: text a shop shows, which
// every database stores as given. Format characters stay allowed (the zero-width
// joiner builds emoji), and so do characters newer than Go's Unicode tables.
func validateTitle(title string) error {
	switch {
	case strings.TrimSpace(title) == "":
		return Invalid("title", "must not be empty")
	case !utf8.ValidString(title):
		return Invalid("title", "must be valid UTF-8")
	case utf8.RuneCountInString(title) > MaxTitleLength:
		return Invalid("title", "must be at most 200 characters")
	case strings.IndexFunc(title, unprintable) >= 0:
		return Invalid("title", "must hold printable characters only (no control characters)")
	}
	return nil
}

// unprintable reports the characters a title may not hold.
func unprintable(r rune) bool {
	return unicode.In(r, unicode.Cc, unicode.Zl, unicode.Zp, unicode.Co)
}

// Window reports where now falls in the sale window: ErrNotStarted, ErrEnded or nil.
func (v Voucher) Window(now time.Time) error {
	return window(v.BeginsAt, v.EndsAt, now)
}

// window reports where now falls in the window from begins (inclusive) to ends
// (exclusive): ErrNotStarted, ErrEnded or nil.
func window(begins, ends, now time.Time) error {
	switch {
	case now.Before(begins):
		return ErrNotStarted
	case !now.Before(ends):
		return ErrEnded
	}
	return nil
}
