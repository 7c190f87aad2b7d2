package sqlstock

import (
	"context"

	"github.com/seckill/seckill/domain"
	"github.com/seckill/seckill/ports"
)

// What the postgres stock strategy does not do: its waitlist and its draws' entries
// answer that they are unsupported, and so does anything of a campaign's voucher.

// campaignUnsupported returns domain.ErrCampaignUnsupported for a voucher of a
// campaign (its id tells: domain.VoucherID.Campaign), nil for any other. This strategy
// does not sell campaigns: it keeps no campaign's cap nor per-user limit across its
// vouchers to judge a grab by.
func campaignUnsupported(v domain.VoucherID) error {
	if c, _ := v.Campaign(); c != 0 {
		return domain.ErrCampaignUnsupported
	}
	return nil
}

// NoWaitlist is the ports.Waitlist of the postgres stock strategy, which keeps no
// waitlist: a unit that comes back goes straight back on sale (Stock.Release), so
// there is nothing to hand to one. Every method but Drop answers
// domain.ErrWaitlistUnsupported (Join of a campaign's voucher
// domain.ErrCampaignUnsupported); Drop has nothing to drop.
type NoWaitlist struct{}

var _ ports.Waitlist = NoWaitlist{}

// Join answers domain.ErrWaitlistUnsupported, or domain.ErrCampaignUnsupported for a
// campaign's voucher.
func (NoWaitlist) Join(_ context.Context, v domain.VoucherID, _ domain.UserID, _ domain.OrderID) (int, error) {
	if err := campaignUnsupported(v); err != nil {
		return 0, err
	}
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
// every method answers domain.ErrDrawUnsupported (Enter of a campaign's voucher
// domain.ErrCampaignUnsupported).
type NoEntries struct{}

var _ ports.Entries = NoEntries{}

// Enter answers domain.ErrDrawUnsupported, or domain.ErrCampaignUnsupported for a
// campaign's voucher.
func (NoEntries) Enter(_ context.Context, v domain.Voucher, _ domain.UserID) (int, error) {
	if err := campaignUnsupported(v.ID); err != nil {
		return 0, err
	}
	return 0, domain.ErrDrawUnsupported
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
