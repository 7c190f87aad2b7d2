package domain

import (
	"strconv"
	"time"
)

// MaxEditUnits bounds the units one edit adds or removes.
const MaxEditUnits = 1_000_000_000

// VoucherEdit is an admin's change of a voucher's sale: each field that is not nil
// is a change, the rest stay as they are.
type VoucherEdit struct {
	// AddUnits puts more units on sale; RemoveUnits takes units still on sale off it.
	AddUnits, RemoveUnits *int
	// BeginsAt moves the start of a sale that has not started; EndsAt moves its end,
	// to the past too (the sale ends at once).
	BeginsAt, EndsAt *time.Time
	PerUserLimit     *int
	Title            *string
}

// Validate checks the edit on its own, before any voucher is read: it names at least
// one change, at most one of AddUnits and RemoveUnits, and units from 1 to
// MaxEditUnits. It returns a *ValidationError naming the first field at fault.
func (e VoucherEdit) Validate() error {
	switch {
	case e.AddUnits == nil && e.RemoveUnits == nil && e.BeginsAt == nil && e.EndsAt == nil &&
		e.PerUserLimit == nil && e.Title == nil:
		return Invalid("body", "names no change: give at least one of add_units, remove_units, begins_at, ends_at, per_user_limit, title")
	case e.AddUnits != nil && e.RemoveUnits != nil:
		return Invalid("remove_units", "cannot be given with add_units")
	}
	for _, u := range []struct {
		field string
		n     *int
	}{{"add_units", e.AddUnits}, {"remove_units", e.RemoveUnits}} {
		if u.n != nil && (*u.n < 1 || *u.n > MaxEditUnits) {
			return Invalid(u.field, "must be an integer from 1 to "+strconv.Itoa(MaxEditUnits))
		}
	}
	return nil
}

// Apply returns v as e leaves it, judged at now (the sale's clock), with Version one
// more when its terms change (see Terms). It returns ErrAlreadyStarted when e moves
// the start of a sale that has started, ErrNotEnoughUnits when e removes every unit of
// the stock or more (a sale keeps one at least; whether as many are still on sale is
// the stock's to judge), and a *ValidationError when the voucher it leaves breaks a
// rule of Validate (ends_at not after begins_at, a stock over MaxStock, a limit over
// the stock, a bad title). v itself is not changed.
func (v Voucher) Apply(e VoucherEdit, now time.Time) (Voucher, error) {
	if err := e.Validate(); err != nil {
		return Voucher{}, err
	}
	if v.CampaignID != 0 && (e.BeginsAt != nil || e.EndsAt != nil) {
		return Voucher{}, Invalid("ends_at", "is the campaign's: edit the campaign's window")
	}
	out := v
	// The window to the millisecond, the precision the stocks judge it at (see
	// Sale.Judge), so the terms stored are the terms judged.
	if e.BeginsAt != nil {
		if !now.Before(v.BeginsAt) {
			return Voucher{}, ErrAlreadyStarted
		}
		out.BeginsAt = toMillis(*e.BeginsAt).UTC()
	}
	if e.EndsAt != nil {
		out.EndsAt = toMillis(*e.EndsAt).UTC()
	}
	if e.AddUnits != nil {
		out.Stock += *e.AddUnits
	}
	if e.RemoveUnits != nil {
		if *e.RemoveUnits >= v.Stock {
			return Voucher{}, ErrNotEnoughUnits
		}
		out.Stock -= *e.RemoveUnits
	}
	if e.PerUserLimit != nil {
		out.PerUserLimit = *e.PerUserLimit
	}
	if e.Title != nil {
		out.Title = *e.Title
	}
	if err := out.Validate(); err != nil {
		return Voucher{}, err
	}
	if !out.Terms(v) {
		out.Version = v.Version + 1
	}
	return out, nil
}
