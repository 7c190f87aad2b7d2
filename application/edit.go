package application

import (
	"context"
	"errors"
	"fmt"

	"github.com/seckill/seckill/domain"
	"github.com/seckill/seckill/ports"
)

// EditVoucherCmd is an admin's change of a voucher's sale.
type EditVoucherCmd struct {
	Voucher domain.VoucherID
	Edit    domain.VoucherEdit
	// EndNow ends the sale at the use case's clock's now, as Edit.EndsAt given that
	// time would (it replaces Edit.EndsAt): a script ends a sale without reading the
	// service's time first.
	EndNow bool
	// By is who makes the change, for the audit log.
	By domain.Author
	// Receipt, when set, is the request's idempotency key: the change and the
	// request's answer are stored together, or neither.
	Receipt *ports.Receipt[LiveVoucher]
}

// The actions of an edit, as EditVoucher reports them (Observe): one per kind of
// change it made.
const (
	EditAddUnits     = "add_units"
	EditRemoveUnits  = "remove_units"
	EditBeginsAt     = "begins_at"
	EditEndsAt       = "ends_at"
	EditPerUserLimit = "per_user_limit"
	EditTitle        = "title"
)

// EditActions lists every action of an edit, for those who report each one.
var EditActions = []string{EditAddUnits, EditRemoveUnits, EditBeginsAt, EditEndsAt, EditPerUserLimit, EditTitle}

// EditVoucher changes a live (or upcoming, or ended) sale: units added or removed, its
// window moved, its per-user limit or title changed. The database and the grab path's
// sale state change together, and every instance sells by the new terms at once (they
// read them from Redis, and units added clear their sold-out flags).
//
// How they change together. The change is one database transaction holding the
// voucher's lock (ports.Vouchers.Update), which writes the voucher, its version (one
// more when its terms change) and the audit entry, and keeps the request's answer.
//   - Units removed are taken from the stock inside it, as its last step before the
//     commit (Stock.Edit, EditHeldStrict): only the stock knows how many units are
//     still on sale, and it refuses, changing nothing, when fewer remain than asked
//     (domain.ErrNotEnoughUnits, and the transaction rolls back). Should the commit
//     then fail, the voucher is recovered at once (RecoverVoucher, RecoverStale): the
//     stock takes the database's terms again.
//   - Any other change is carried to the stock after the commit (Stock.Edit,
//     EditIfNewer: a late write of older terms changes nothing), so the sale never
//     sells units the database has not stored.
//
// A crash between the two leaves the sale state holding an older version of the terms
// than the database (or, for a removal whose commit failed, a newer one); the periodic
// warm-up sees the version differ and recovers the voucher (WarmVouchers,
// RecoverStale): the one heal, never a second path.
type EditVoucher struct {
	vouchers ports.Vouchers
	stock    ports.Stock
	recover  *RecoverVoucher
	clock    ports.Clock
	changes  ports.Changes
	observe  func(actions []string)
}

// NewEditVoucher returns the use case; clock judges whether a sale has started, and
// every edit that changed something is announced on changes.
func NewEditVoucher(vouchers ports.Vouchers, stock ports.Stock, recovery *RecoverVoucher, clock ports.Clock, changes ports.Changes) *EditVoucher {
	return &EditVoucher{vouchers: vouchers, stock: stock, recover: recovery, clock: clock, changes: changes, observe: func([]string) {}}
}

// Observe makes every edit that changed something report its actions (EditActions)
// to fn. Call it before the use case is in use.
func (uc *EditVoucher) Observe(fn func(actions []string)) {
	uc.observe = fn
}

// Handle applies cmd.Edit to the voucher (domain.Voucher.Apply) and returns the voucher
// as it left it, with the units on sale then: those on sale just before, moved by the
// change of stock. An edit that changes nothing writes nothing (no audit entry) and
// answers the voucher. It returns a *domain.ValidationError for a bad edit,
// domain.ErrNotFound, domain.ErrAlreadyStarted (begins_at of a sale that has started),
// domain.ErrNotEnoughUnits (more units removed than remain on sale, or every unit),
// ports.ErrClaimLost, or an error wrapping domain.ErrUnavailable; on any error nothing
// changed. Once the change is stored the edit has succeeded: if the stock could not be
// told after the commit, the voucher is returned all the same, Warming says why, and
// the periodic warm-up carries the terms to the stock.
func (uc *EditVoucher) Handle(ctx context.Context, cmd EditVoucherCmd) (LiveVoucher, error) {
	if cmd.EndNow {
		end := uc.clock.Now()
		cmd.Edit.EndsAt = &end
	}
	if err := cmd.Edit.Validate(); err != nil {
		return LiveVoucher{}, err
	}
	left, err := uc.stock.Remaining(ctx, cmd.Voucher)
	if err != nil {
		return LiveVoucher{}, fmt.Errorf("remaining stock: %w", err)
	}
	now := uc.clock.Now()
	var (
		before   domain.Voucher
		answered LiveVoucher
		taken    bool
	)
	// The voucher is answered as the change left it at now, by its state then: the
	// answer the receipt keeps and the one returned are the same.
	live := func(v domain.Voucher) LiveVoucher {
		r, ok := left[v.ID]
		if ok {
			r = max(r+v.Stock-before.Stock, 0)
		} else {
			r = v.Stock - v.Sold
		}
		return LiveVoucher{Voucher: v, Remaining: r, State: v.State(now, r)}
	}
	u := ports.VoucherUpdate{Action: domain.AuditVoucherUpdate, By: cmd.By,
		Change: func(v domain.Voucher) (domain.Voucher, error) {
			before = v
			return v.Apply(cmd.Edit, now)
		}}
	if cmd.Edit.RemoveUnits != nil {
		u.Commit = func(ctx context.Context, _, after domain.Voucher) error {
			taken = true
			_, err := uc.stock.Edit(ctx, after, ports.EditHeldStrict)
			if errors.Is(err, domain.ErrNotEnoughUnits) || errors.Is(err, domain.ErrUnavailable) {
				taken = false // refused: nothing changed
			}
			return err
		}
	}
	if cmd.Receipt != nil {
		u.Receipt = &ports.Receipt[domain.Voucher]{Claim: cmd.Receipt.Claim, Answer: func(v domain.Voucher) (int, []byte, error) {
			return cmd.Receipt.Answer(live(v))
		}}
	}
	v, err := uc.vouchers.Update(ctx, cmd.Voucher, u)
	if err != nil {
		if taken {
			// The stock took the units but the commit failed, or its outcome is
			// unknown: the stock takes the database's terms again. Should that fail
			// too, the warm-up finds the versions apart and does it.
			_ = uc.recover.Handle(context.WithoutCancel(ctx), RecoverCmd{Voucher: cmd.Voucher, Reason: RecoverStale})
		}
		return LiveVoucher{}, err
	}
	answered = live(v)
	if cmd.Edit.RemoveUnits == nil && v.Version != before.Version {
		if _, err := uc.stock.Edit(ctx, v, ports.EditIfNewer); err != nil {
			answered.Warming = fmt.Errorf("carry the terms of voucher %s to the stock: %w", v.ID, err)
		}
	}
	if actions := editActions(cmd.Edit, before, v); len(actions) > 0 {
		publish(ctx, uc.changes, ports.Change{Voucher: v.ID})
		uc.observe(actions)
	}
	return answered, nil
}

// editActions names the kinds of change an edit made, going from before to after.
func editActions(e domain.VoucherEdit, before, after domain.Voucher) []string {
	var out []string
	for _, c := range []struct {
		action string
		made   bool
	}{
		{EditAddUnits, e.AddUnits != nil},
		{EditRemoveUnits, e.RemoveUnits != nil},
		{EditBeginsAt, !after.BeginsAt.Equal(before.BeginsAt)},
		{EditEndsAt, !after.EndsAt.Equal(before.EndsAt)},
		{EditPerUserLimit, after.PerUserLimit != before.PerUserLimit},
		{EditTitle, after.Title != before.Title},
	} {
		if c.made {
			out = append(out, c.action)
		}
	}
	return out
}
