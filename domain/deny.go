package domain

import (
	"time"
	"unicode"
	"unicode/utf8"
)

// Denial is a user on the deny list: its grabs are refused with ErrDenied.
type Denial struct {
	User   UserID
	Reason string
	// At is when the user was listed, or its reason last changed.
	At time.Time
}

// MaxDenyReason bounds a denial's reason, in characters.
const MaxDenyReason = 500

// ValidateDenial checks a denial an admin asks for: a positive user id and a reason of
// at most MaxDenyReason characters of valid UTF-8 with no control character. It returns
// a *ValidationError.
func ValidateDenial(d Denial) error {
	switch {
	case d.User <= 0:
		return Invalid("user_id", "must be a positive integer")
	case !utf8.ValidString(d.Reason) || utf8.RuneCountInString(d.Reason) > MaxDenyReason:
		return Invalid("reason", "must be at most 500 characters of UTF-8")
	}
	for _, r := range d.Reason {
		if unicode.IsControl(r) {
			return Invalid("reason", "must not hold control characters")
		}
	}
	return nil
}

// DenialAudit returns the entry of a change of the deny list by author: before is the
// user's denial the change replaced (nil: it was not listed), after the one it left
// (nil: removed). Each side holds user_id and reason; VoucherID is 0 (no voucher). At
// and ID are the log's to set.
func DenialAudit(action AuditAction, by Author, before, after *Denial) AuditEntry {
	e := AuditEntry{Actor: by.Actor, Action: action, RequestID: by.RequestID}
	side := func(d *Denial) []byte {
		if d == nil {
			return nil
		}
		return mustJSON(map[string]any{"user_id": d.User.String(), "reason": d.Reason})
	}
	e.Before, e.After = side(before), side(after)
	return e
}
