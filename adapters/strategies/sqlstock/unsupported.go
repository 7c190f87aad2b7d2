package sqlstock

import (
	"context"

	"github.com/seckill/seckill/domain"
	"github.com/seckill/seckill/ports"
)

// What the postgres stock strategy does not do: its waitlist and its draws' entries
// answer that they are unsupported.

// NoWaitlist is the ports.Waitlist of the postgres stock strategy, which keeps no
// waitlist: a unit that comes back goes straight back on sale (Stock.Release), so
// there is nothing to hand to one. Every method but Drop answers
// domain.ErrWaitlistUnsupported; Drop has nothing to drop.
type NoWaitlist struct{}

var _ ports.Waitlist = NoWaitlist{}

// Join answers domain.ErrWaitlistUnsupported.
func (NoWaitlist) Join(context.Context, domain.VoucherID, domain.UserID, domain.OrderID) (int, error) {
	return 0, domain.ErrWaitlistUnsupported
}

// Position answers domain.ErrWaitlistUnsupported.
func (NoWaitlist) Position(context.Context, domain.VoucherID, domain.UserID) (int, error) {
	return 0, domain.ErrWaitlistUnsupported
}

// Leave answers domain.ErrWaitlistUnsupported.
func (NoWaitlist) Leave(context.Context, domain.VoucherID, domain.UserID) error {
	return domain.ErrWaitlistUnsupported
}

// Drop has nothing to drop.
func (NoWaitlist) Drop(context.Context, domain.UserID) error { return nil }

// Length answers domain.ErrWaitlistUnsupported.
func (NoWaitlist) Length(context.Context, domain.VoucherID) (int, error) {
	return 0, domain.ErrWaitlistUnsupported
}

// NoEntries is the ports.Entries of the postgres stock strategy, which runs no draws:
// every method answers domain.ErrDrawUnsupported.
type NoEntries struct{}

var _ ports.Entries = NoEntries{}

// Enter answers domain.ErrDrawUnsupported.
func (NoEntries) Enter(context.Context, domain.Voucher, domain.UserID) (int, error) {
	return 0, domain.ErrDrawUnsupported
}

// EnterDrop answers domain.ErrDrawUnsupported.
func (NoEntries) EnterDrop(context.Context, domain.Voucher, domain.UserID, domain.VoucherID) (int, error) {
	return 0, domain.ErrDrawUnsupported
}

// CloseDrop answers domain.ErrDrawUnsupported.
func (NoEntries) CloseDrop(context.Context, domain.Voucher) ([]domain.DropEntry, error) {
	return nil, domain.ErrDrawUnsupported
}

// Count answers domain.ErrDrawUnsupported.
func (NoEntries) Count(context.Context, domain.VoucherID) (int, error) {
	return 0, domain.ErrDrawUnsupported
}

// Close answers domain.ErrDrawUnsupported.
func (NoEntries) Close(context.Context, domain.Voucher) ([]domain.UserID, error) {
	return nil, domain.ErrDrawUnsupported
}

// Progress answers domain.ErrDrawUnsupported.
func (NoEntries) Progress(context.Context, domain.VoucherID) (int, bool, error) {
	return 0, false, domain.ErrDrawUnsupported
}

// Take answers domain.ErrDrawUnsupported.
func (NoEntries) Take(context.Context, domain.VoucherID, int, int, []domain.DrawStep, []domain.OrderID) (int, int, error) {
	return 0, 0, domain.ErrDrawUnsupported
}
