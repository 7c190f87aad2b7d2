package application

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/seckill/seckill/domain"
	"github.com/seckill/seckill/ports"
)

// VoucherStats is where a voucher's units are.
type VoucherStats struct {
	Stock           int
	Remaining       int
	Queued          int
	AwaitingPayment int
	Paid            int
	Cancelled       int
	Expired         int
	Failed          int
	// Waitlist counts the users on the voucher's waitlist (0 where the stock strategy
	// keeps none).
	Waitlist int
	// Pending counts queue entries not yet acknowledged.
	Pending int64
	// OldestQueued is how long the oldest reservation not yet persisted has waited
	// since it was taken; 0 when none waits.
	OldestQueued time.Duration
}

// GetVoucherStats reads a voucher's stats.
type GetVoucherStats struct {
	vouchers ports.Vouchers
	orders   ports.Orders
	audit    ports.StockAudit
	clock    ports.Clock
	waitlist ports.Waitlist
}

// NewGetVoucherStats returns the use case; waitlist (nil: none) tells the length of
// the voucher's waitlist.
func NewGetVoucherStats(vouchers ports.Vouchers, orders ports.Orders, audit ports.StockAudit, clock ports.Clock, waitlist ports.Waitlist) *GetVoucherStats {
	return &GetVoucherStats{vouchers: vouchers, orders: orders, audit: audit, clock: clock, waitlist: waitlist}
}

// Handle returns the stats, or domain.ErrNotFound. Each figure is read from counters
// kept as the sale goes, so its cost does not grow with the voucher's orders, and all
// of them are one moment's: stock = remaining + queued + awaiting_payment + paid holds
// in every answer, while grabs, payments, cancellations, expiries and edits race.
//
// How. The units in orders are the database's (awaiting_payment, paid, cancelled,
// expired, failed: ports.Orders.UnitsByStatus); the stock, the remaining units and the
// queue are Redis's (ports.StockAudit.Tally). The two are read at one moment:
// UnitsByStatus reads the database's units and, in the same transaction, runs the
// Redis read, while no change of the voucher's stock or live units can commit (every
// one of them — persisting a reservation, closing an order, an edit — updates the
// voucher's row, which the read holds under a share lock). So at the moment Redis is
// read, the live units (awaiting_payment + paid) are exactly the database's figure,
// and queued is what Redis holds out of its remaining units (stock − remaining) that
// no live order holds at that moment: reservations not yet persisted, and units of
// orders closed in the database on their way back to remaining (the release follows
// the commit by a moment). Counting queued from the queue's own tally instead (the
// entries not yet acknowledged) counts a reservation twice between its order's commit
// and its acknowledgement, and misses a closed order's units between its commit and
// its release: the sum was off under load. The share lock makes those commits wait for
// one Redis call; a Redis read that fails answers the error (nothing is guessed).
//
// A voucher without sale state in Redis (its keys expired after the sale) reads its
// remaining units as stock − sold, and nothing as queued.
func (uc *GetVoucherStats) Handle(ctx context.Context, id domain.VoucherID) (VoucherStats, error) {
	v, err := uc.vouchers.Get(ctx, id)
	if err != nil {
		return VoucherStats{}, err
	}
	var tally ports.StockTally
	units, err := uc.orders.UnitsByStatus(ctx, id, func(ctx context.Context) error {
		var err error
		if tally, err = uc.audit.Tally(ctx, id); err != nil {
			return fmt.Errorf("sale state: %w", err)
		}
		return nil
	})
	if err != nil {
		return VoucherStats{}, fmt.Errorf("order units: %w", err)
	}
	s := VoucherStats{
		Stock:           v.Stock,
		Remaining:       v.Stock - v.Sold,
		AwaitingPayment: units[domain.StatusAwaitingPayment],
		Paid:            units[domain.StatusPaid],
		Cancelled:       units[domain.StatusCancelled],
		Expired:         units[domain.StatusExpired],
		Failed:          units[domain.StatusFailed],
		Pending:         tally.Pending,
	}
	if tally.Present {
		s.Stock, s.Remaining = tally.Stock, tally.Remaining
		s.Queued = tally.Stock - tally.Remaining - s.AwaitingPayment - s.Paid
	}
	if !tally.Oldest.IsZero() {
		s.OldestQueued = max(uc.clock.Now().Sub(tally.Oldest), 0)
	}
	if uc.waitlist != nil {
		n, err := uc.waitlist.Length(ctx, id)
		switch {
		case err == nil:
			s.Waitlist = n
		case !errors.Is(err, domain.ErrWaitlistUnsupported):
			return VoucherStats{}, fmt.Errorf("waitlist: %w", err)
		}
	}
	return s, nil
}
