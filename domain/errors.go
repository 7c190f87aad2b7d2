package domain

import (
	"errors"
	"fmt"
	"time"
)

// Errors the use cases return. Adapters translate their own failures into these at the
// boundary, and the HTTP adapter maps each to the contract's status and code.
var (
	// ErrSoldOut: not enough units are left for the quantity asked.
	ErrSoldOut = errors.New("voucher sold out")
	// ErrCampaignSoldOut: the voucher has units left, but its campaign's cap has none
	// left for them.
	ErrCampaignSoldOut = errors.New("campaign sold out")
	// ErrAlreadyPurchased: the user already holds a live order for the voucher. It is
	// returned wrapped in an *AlreadyPurchasedError that names the order.
	ErrAlreadyPurchased = errors.New("voucher already purchased by this user")
	// ErrNotStarted: the sale window has not opened yet.
	ErrNotStarted = errors.New("sale not started")
	// ErrEnded: the sale window has closed.
	ErrEnded = errors.New("sale ended")
	// ErrPaused: an operator paused the sale.
	ErrPaused = errors.New("sale paused")
	// ErrNotFound: no such voucher or order (or not one the caller may see).
	ErrNotFound = errors.New("not found")
	// ErrInvalidState: the order is not in a state that allows the transition.
	ErrInvalidState = errors.New("invalid order state")
	// ErrInvalid: the request is malformed or a value is out of range. It is returned
	// wrapped in a *ValidationError that says which field and why.
	ErrInvalid = errors.New("invalid request")
	// ErrDuplicateOrder: the user already has another live order for the voucher
	// (the database's last safety net, the unique index over live orders).
	ErrDuplicateOrder = errors.New("duplicate live order")
	// ErrUnavailable: a dependency is down or overloaded; the caller may retry later.
	ErrUnavailable = errors.New("service unavailable")
	// ErrNotEnoughUnits: an edit removes more units than are still on sale (or every
	// unit of the stock: a sale keeps at least one; to stop it, end or pause it).
	ErrNotEnoughUnits = errors.New("not enough units on sale")
	// ErrAlreadyStarted: an edit moves the start of a sale that has started.
	ErrAlreadyStarted = errors.New("sale already started")
	// ErrDenied: an admin put the user on the deny list; none of its grabs is taken.
	ErrDenied = errors.New("user denied")
	// ErrQueueRequired: the voucher admits through its waiting room, and the grab
	// brought no valid pass of its user for it (none, forged, another's, expired or
	// used).
	ErrQueueRequired = errors.New("a pass from the waiting room is required")
	// ErrChallengeRequired: the voucher asks for a proof of work (or another
	// challenge), and the request brought no valid, unspent one of its user for it.
	ErrChallengeRequired = errors.New("a solved challenge is required")
	// ErrEntriesClosed: the voucher's draw takes no more entries.
	ErrEntriesClosed = errors.New("entries closed")
	// ErrNotSoldOut: a waitlist is joined only while the voucher is sold out.
	ErrNotSoldOut = errors.New("voucher not sold out")
	// ErrWaitlistUnsupported: the voucher has no waitlist: it is not first come (a
	// waiting room or a draw), or the stock strategy keeps none (only the Redis
	// strategies, lua and watch, hand returned units to one).
	ErrWaitlistUnsupported = errors.New("waitlist unsupported by the stock strategy")
)

// ErrRateLimited means the caller sent more requests than its limit allows. It is
// returned wrapped in a *RateLimitedError that says when to retry.
var ErrRateLimited = errors.New("rate limited")

// RateLimitedError says how long the caller should wait before trying again. It
// matches ErrRateLimited with errors.Is.
type RateLimitedError struct {
	RetryAfter time.Duration
}

func (e *RateLimitedError) Error() string {
	return fmt.Sprintf("%v: retry after %v", ErrRateLimited, e.RetryAfter)
}

// Is reports whether target is ErrRateLimited.
func (e *RateLimitedError) Is(target error) bool { return target == ErrRateLimited }

// ValidationError says which field of a request is wrong and why. It matches
// ErrInvalid with errors.Is.
type ValidationError struct {
	Field  string
	Reason string
}

// Invalid returns a *ValidationError for field.
func Invalid(field, reason string) error {
	return &ValidationError{Field: field, Reason: reason}
}

func (e *ValidationError) Error() string {
	return fmt.Sprintf("%s: %s", e.Field, e.Reason)
}

// Is reports whether target is ErrInvalid.
func (e *ValidationError) Is(target error) bool { return target == ErrInvalid }

// AlreadyPurchasedError carries the order the user already holds. It matches
// ErrAlreadyPurchased with errors.Is.
type AlreadyPurchasedError struct {
	OrderID OrderID
	// Orders, for a grab refused by a campaign's per-user limit, are every order the
	// user holds of the campaign (OrderID the first of them); nil otherwise.
	Orders []OrderID
}

func (e *AlreadyPurchasedError) Error() string {
	return fmt.Sprintf("%v: order %s", ErrAlreadyPurchased, e.OrderID)
}

// Is reports whether target is ErrAlreadyPurchased.
func (e *AlreadyPurchasedError) Is(target error) bool { return target == ErrAlreadyPurchased }
