package domain

import (
	"strconv"
	"strings"
	"time"
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

func parsePositive(s string) (int64, error) {
	// ParseInt accepts a leading sign; ids are plain digits.
	if s == "" || strings.IndexFunc(s, func(r rune) bool { return r < '0' || r > '9' }) >= 0 {
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
}

// Validate checks the rules a voucher must meet before it is stored. It returns a
// *ValidationError naming the first field that breaks one.
func (v Voucher) Validate() error {
	title := strings.TrimSpace(v.Title)
	switch {
	case title == "":
		return Invalid("title", "must not be empty")
	case utf8.RuneCountInString(v.Title) > MaxTitleLength:
		return Invalid("title", "must be at most 200 characters")
	case v.Stock <= 0:
		return Invalid("stock", "must be greater than 0")
	case v.Stock > MaxStock:
		return Invalid("stock", "must be at most 10000000")
	case v.BeginsAt.IsZero():
		return Invalid("begins_at", "is required")
	case v.EndsAt.IsZero():
		return Invalid("ends_at", "is required")
	case !v.BeginsAt.Before(v.EndsAt):
		return Invalid("ends_at", "must be after begins_at")
	case v.PerUserLimit < 1:
		return Invalid("per_user_limit", "must be at least 1")
	case v.PerUserLimit > v.Stock:
		return Invalid("per_user_limit", "must not exceed stock")
	}
	return nil
}

// Window reports where now falls in the sale window: ErrNotStarted, ErrEnded or nil.
func (v Voucher) Window(now time.Time) error {
	switch {
	case now.Before(v.BeginsAt):
		return ErrNotStarted
	case !now.Before(v.EndsAt):
		return ErrEnded
	}
	return nil
}
