package application

import (
	"context"
	"errors"
	"fmt"

	"github.com/seckill/seckill/domain"
	"github.com/seckill/seckill/ports"
)

// Waitlist is the use case of a first-come voucher's waitlist: a user joins it while
// the voucher is sold out, reads its position, or leaves it. The units that come back
// are handed to it by the stock itself (ports.Waitlist), in the step that returns
// them, so nothing here is on that path.
//
// The stock cannot see the deny list (each instance keeps it in memory), so a denied
// user is kept off the waitlists here: its joins are refused, and DenyUser takes it
// off every waitlist it joined when it is denied.
type Waitlist struct {
	list     ports.Waitlist
	vouchers ports.Vouchers
	ids      ports.OrderIDs
	clock    ports.Clock
	denied   *DeniedUsers
}

// NewWaitlist returns the use case: list keeps the waitlists, vouchers tells an unknown
// voucher from one whose sale state is gone (judged by clock), ids mints the order id
// a unit handed to a joiner becomes, and denied (nil: none) is this instance's deny
// list.
func NewWaitlist(list ports.Waitlist, vouchers ports.Vouchers, ids ports.OrderIDs, clock ports.Clock, denied *DeniedUsers) *Waitlist {
	return &Waitlist{list: list, vouchers: vouchers, ids: ids, clock: clock, denied: denied}
}

// validWaitlistCall returns a *domain.ValidationError for ids that cannot name a
// voucher or a user.
func validWaitlistCall(voucher domain.VoucherID, user domain.UserID) error {
	switch {
	case voucher <= 0:
		return domain.Invalid("id", "must be a positive integer")
	case user <= 0:
		return domain.Invalid("user", "must be a positive integer")
	}
	return nil
}

// Join puts user on voucher's waitlist, or finds it there, and returns its position
// (from 1). A fresh order id is minted for the join: a unit handed to the user becomes
// the order of that id, so however often the step that hands it runs, it is one order.
// It returns a *domain.ValidationError, domain.ErrDenied, domain.ErrNotSoldOut, an
// *domain.AlreadyPurchasedError naming the order the user holds, domain.ErrEnded,
// domain.ErrNotFound (no such voucher), domain.ErrWaitlistUnsupported (a voucher that
// is not first come, or a stock strategy without waitlists), or an error wrapping
// domain.ErrUnavailable.
func (uc *Waitlist) Join(ctx context.Context, voucher domain.VoucherID, user domain.UserID) (int, error) {
	if err := validWaitlistCall(voucher, user); err != nil {
		return 0, err
	}
	if uc.denied != nil && uc.denied.Denied(user) {
		return 0, domain.ErrDenied
	}
	v, err := uc.vouchers.Get(ctx, voucher)
	if err != nil {
		return 0, err
	}
	if v.Admission != "" && v.Admission != domain.AdmissionFirstCome {
		return 0, fmt.Errorf("voucher %s admits by %s: %w", v.ID, v.Admission, domain.ErrWaitlistUnsupported)
	}
	pos, err := uc.list.Join(ctx, voucher, user, uc.ids.NewOrderID())
	if !errors.Is(err, domain.ErrNotFound) {
		return pos, err
	}
	// No sale state: its keys expired after its sale, or Redis lost it (the next grab
	// rebuilds it; see GrabVoucher).
	if !uc.clock.Now().Before(v.EndsAt) {
		return 0, domain.ErrEnded
	}
	return 0, fmt.Errorf("voucher %s: %w: its sale state is missing", v.ID, domain.ErrUnavailable)
}

// Position returns user's position on voucher's waitlist (from 1), or
// domain.ErrNotFound when it is not on it (also: a *domain.ValidationError,
// domain.ErrWaitlistUnsupported, or an error wrapping domain.ErrUnavailable).
func (uc *Waitlist) Position(ctx context.Context, voucher domain.VoucherID, user domain.UserID) (int, error) {
	if err := validWaitlistCall(voucher, user); err != nil {
		return 0, err
	}
	return uc.list.Position(ctx, voucher, user)
}

// Leave takes user off voucher's waitlist; a user not on it is no error (also: a
// *domain.ValidationError, domain.ErrWaitlistUnsupported, or an error wrapping
// domain.ErrUnavailable).
func (uc *Waitlist) Leave(ctx context.Context, voucher domain.VoucherID, user domain.UserID) error {
	if err := validWaitlistCall(voucher, user); err != nil {
		return err
	}
	return uc.list.Leave(ctx, voucher, user)
}
