package application

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/seckill/seckill/domain"
)

// RoundCmd asks for one round of the periodic reconciliation: the vouchers whose sale
// has not ended or ended within recentlyEnded, by id, from the one after After, for as long as Budget allows.
type RoundCmd struct {
	// After is Next of the previous round; 0 starts from the first voucher.
	After domain.VoucherID
	// Budget is how long the round may go on checking vouchers; the voucher being
	// checked when it runs out is finished first. At least one voucher is checked.
	Budget time.Duration
	// Repair fixes what the round finds; By is who repairs, for the audit log.
	Repair bool
	By     domain.Author
}

// UncheckedVoucher is a voucher a round could not check, and why.
type UncheckedVoucher struct {
	VoucherID domain.VoucherID
	Err       error
}

// RoundResult is what a round did.
type RoundResult struct {
	// Reports are the findings of the vouchers it checked.
	Reports []VoucherReconciliation
	// Unchecked are the vouchers it could not check; the round went on past them, and
	// the next pass checks them again.
	Unchecked []UncheckedVoucher
	// Next is where the next round carries on (its RoundCmd.After); 0 when this round
	// reached the last voucher, so the next one starts a new pass.
	Next domain.VoucherID
}

// Round runs one round of the periodic reconciliation (see RoundCmd), so that a long
// list of vouchers, or a voucher with many orders, is checked over several rounds of
// bounded length rather than in one that never ends. A voucher that cannot be checked
// (Redis or the database failing for it) is reported in Unchecked and skipped until
// the next pass: it is not retried at once. Round returns an error only when it could
// not list the vouchers.
func (uc *Reconcile) Round(ctx context.Context, cmd RoundCmd) (RoundResult, error) {
	start := uc.clock.Now()
	active, err := uc.vouchers.Active(ctx, start.Add(-recentlyEnded))
	if err != nil {
		return RoundResult{}, fmt.Errorf("active vouchers: %w", err)
	}
	ids := make([]domain.VoucherID, 0, len(active))
	for _, v := range active {
		if v.ID > cmd.After {
			ids = append(ids, v.ID)
		}
	}
	slices.Sort(ids)
	var res RoundResult
	for i, id := range ids {
		if i > 0 && uc.clock.Now().Sub(start) >= cmd.Budget {
			res.Next = ids[i-1]
			break
		}
		if err := ctx.Err(); err != nil {
			return res, err
		}
		r, err := uc.one(ctx, id, cmd.Repair, cmd.By)
		if err != nil {
			res.Unchecked = append(res.Unchecked, UncheckedVoucher{VoucherID: id, Err: err})
			continue
		}
		res.Reports = append(res.Reports, r)
	}
	return res, nil
}
