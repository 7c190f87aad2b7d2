package application

import (
	"context"
	"errors"
	"fmt"

	"github.com/seckill/seckill/domain"
	"github.com/seckill/seckill/ports"
)

// The waitlist of a first-come voucher: a user joins it while the voucher is sold out
// (JoinWaitlist), reads its position (WaitlistPosition), or leaves it (LeaveWaitlist).
// The units that come back are handed to it by the stock itself (ports.Waitlist), in
// the step that returns them, so nothing here is on that path.
//
// The stock cannot see the deny list (each instance keeps it in memory), so a denied
// user is kept off the waitlists here: the gate refuses its joins, and DenyUser takes
// it off every waitlist it joined when it is denied.

// WaitlistCmd names a user and a voucher's waitlist.
type WaitlistCmd struct {
	VoucherID domain.VoucherID
	UserID    domain.UserID
}

// valid returns a *domain.ValidationError for ids that cannot name a voucher or a
// user.
func (cmd WaitlistCmd) valid() error {
	return BuyerCommand{VoucherID: cmd.VoucherID, UserID: cmd.UserID}.valid()
}

// JoinWaitlist puts a user on a sold-out first-come voucher's waitlist.
type JoinWaitlist struct {
	list  ports.Waitlist
	ids   ports.OrderIDs
	clock ports.Clock
	gate  *BuyerGate
}

// NewJoinWaitlist returns the use case: list keeps the waitlists, ids mints the order
// id a unit handed to a joiner becomes, clock tells a voucher whose sale state is gone
// after its end, and gate checks each joiner (DoorWaitlist).
func NewJoinWaitlist(list ports.Waitlist, ids ports.OrderIDs, clock ports.Clock, gate *BuyerGate) *JoinWaitlist {
	return &JoinWaitlist{list: list, ids: ids, clock: clock, gate: gate}
}

// Handle puts the user on the voucher's waitlist, or finds it there, and returns its
// position (from 1). A fresh order id is minted for the join: a unit handed to the
// user becomes the order of that id, so however often the step that hands it runs, it
// is one order. The gate refuses first (BuyerGate, DoorWaitlist): a
// *domain.ValidationError, domain.ErrDenied, domain.ErrNotFound (no such voucher),
// domain.ErrWaitlistUnsupported (a voucher that is not first come); then the
// waitlist: domain.ErrNotSoldOut, an *domain.AlreadyPurchasedError naming the order
// the user holds (the orders, for a user at a campaign's per-user limit), domain.ErrEnded, domain.ErrWaitlistUnsupported (a stock strategy
// without waitlists), or an error wrapping domain.ErrUnavailable.
func (uc *JoinWaitlist) Handle(ctx context.Context, cmd WaitlistCmd) (int, error) {
	b, err := uc.gate.Check(ctx, BuyerCommand{Door: DoorWaitlist, VoucherID: cmd.VoucherID, UserID: cmd.UserID})
	if err != nil {
		return 0, err
	}
	pos, err := uc.list.Join(ctx, cmd.VoucherID, cmd.UserID, uc.ids.NewOrderID())
	if !errors.Is(err, domain.ErrNotFound) {
		return pos, err
	}
	// No sale state: its keys expired after its sale, or Redis lost it (the next grab
	// rebuilds it; see GrabVoucher).
	if !uc.clock.Now().Before(b.Voucher.EndsAt) {
		return 0, domain.ErrEnded
	}
	return 0, fmt.Errorf("voucher %s: %w: its sale state is missing", b.Voucher.ID, domain.ErrUnavailable)
}

// WaitlistPosition reads a user's position on a voucher's waitlist.
type WaitlistPosition struct {
	list ports.Waitlist
}

// NewWaitlistPosition returns the use case.
func NewWaitlistPosition(list ports.Waitlist) *WaitlistPosition {
	return &WaitlistPosition{list: list}
}

// Handle returns the user's position on the voucher's waitlist (from 1), or
// domain.ErrNotFound when it is not on it (also: a *domain.ValidationError,
// domain.ErrWaitlistUnsupported, or an error wrapping domain.ErrUnavailable).
func (uc *WaitlistPosition) Handle(ctx context.Context, cmd WaitlistCmd) (int, error) {
	if err := cmd.valid(); err != nil {
		return 0, err
	}
	return uc.list.Position(ctx, cmd.VoucherID, cmd.UserID)
}

// LeaveWaitlist takes a user off a voucher's waitlist.
type LeaveWaitlist struct {
	list ports.Waitlist
}

// NewLeaveWaitlist returns the use case.
func NewLeaveWaitlist(list ports.Waitlist) *LeaveWaitlist {
	return &LeaveWaitlist{list: list}
}

// Handle takes the user off the voucher's waitlist; a user not on it is no error
// (also: a *domain.ValidationError, domain.ErrWaitlistUnsupported, or an error
// wrapping domain.ErrUnavailable).
func (uc *LeaveWaitlist) Handle(ctx context.Context, cmd WaitlistCmd) error {
	if err := cmd.valid(); err != nil {
		return err
	}
	return uc.list.Leave(ctx, cmd.VoucherID, cmd.UserID)
}
