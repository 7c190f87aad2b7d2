package sqlstore

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/uptrace/bun"

	"github.com/seckill/seckill/domain"
	"github.com/seckill/seckill/ports"
)

var (
	_ ports.OrderLifecycle = (*Orders)(nil)
	_ ports.Releases       = (*Orders)(nil)
)

// orderColumns are the columns of orderRow, for the RETURNING clause of an update
// scanned into it (RETURNING * would bring released_at, which the row does not have).
// They are unqualified: SQLite's RETURNING takes no table alias.
const orderColumns = "id, voucher_id, user_id, quantity, status, created_at, expires_at, updated_at"

// ClosedStatuses are the statuses whose units went (or must go) back on sale: the
// orders Unreleased finds. The list matches the partial index
// orders_closed_unreleased_updated_at_idx. Exported for the postgres stock strategy
// (adapters/strategies/sqlstock), whose Release reports these orders; read it, never
// change it.
var ClosedStatuses = []string{
	string(domain.StatusCancelled), string(domain.StatusExpired), string(domain.StatusFailed),
}

// becoming returns the condition, for Where, that an order's status is one from which
// it may become to, so the domain's state machine (domain.OrderStatus.ReachableFrom)
// decides the conditional updates of the lifecycle. A single status is compared with
// =, which SQLite needs to match the partial index on awaiting_payment orders (it does
// not match o.status IN ('awaiting_payment')). to must be reachable from some status.
func becoming(to domain.OrderStatus) (string, any) {
	from := to.ReachableFrom()
	if len(from) == 1 {
		return "o.status = ?", string(from[0])
	}
	list := make([]string, len(from))
	for i, s := range from {
		list[i] = string(s)
	}
	return "o.status IN (?)", bun.List(list)
}

// Transition moves order id, of user (0: of any user), to to, which must be paid,
// cancelled or expired (anything else is a *domain.ValidationError and touches
// nothing), from a status the domain's state machine lets become to (awaiting_payment;
// see becoming). Closing the order (cancelled, expired) takes its units off its
// voucher's sold counter in the same transaction. It returns the order as it now is;
// domain.ErrNotFound when there is no such order of user (another user's order is not
// found, whatever its state); domain.ErrInvalidState when it is not awaiting payment.
//
// The change is one conditional update on the status, so of two racing transitions
// (a payment and the expiry sweeper, a payment and a cancellation) exactly one wins
// and the other finds the order no longer awaiting payment. With a receipt, its answer
// is kept in the same transaction, after the change: ports.ErrClaimLost (nothing
// changed) when the claim no longer holds its key.
func (s *Orders) Transition(ctx context.Context, id domain.OrderID, user domain.UserID, to domain.OrderStatus, r *ports.Receipt[domain.Order]) (domain.Order, error) {
	switch to {
	case domain.StatusPaid, domain.StatusCancelled, domain.StatusExpired:
	default:
		return domain.Order{}, fmt.Errorf("transition order %s: %w", id, domain.Invalid("status", "must be paid, cancelled or expired"))
	}
	var o domain.Order
	err := s.db.RunInTx(ctx, ReadCommitted, func(ctx context.Context, tx bun.Tx) error {
		var err error
		if o, err = transitionTx(ctx, tx, id, user, to); err != nil {
			return err
		}
		events := newOutbox(s.events)
		if err := events.order(o); err != nil {
			return err
		}
		if err := events.writeTx(ctx, tx); err != nil {
			return err
		}
		return answerTx(ctx, tx, r, o)
	})
	if err != nil {
		return domain.Order{}, fmt.Errorf("transition order %s to %s: %w", id, to, Classify(err))
	}
	return o, nil
}

// transitionTx is Transition's transaction. It locks the order row (the update) and,
// for an order of a campaign's voucher, the user's campaign_units row (its trigger),
// then the campaign's row and its voucher's row (the counters): the order every
// writer of them follows.
func transitionTx(ctx context.Context, tx bun.Tx, id domain.OrderID, user domain.UserID, to domain.OrderStatus) (domain.Order, error) {
	// A second attempt is needed only when the order was committed by Persist between
	// the update's snapshot and the look-up's: the update missed a row the look-up
	// then finds in a status that may become to. An order never returns to a status it
	// left (the state machine has no cycle), so the second attempt either moves it or
	// finds it moved.
	for attempt := 1; ; attempt++ {
		var rows []orderRow
		q := tx.NewUpdate().Model((*orderRow)(nil)).
			Set("status = ?", string(to)).
			Set("updated_at = ?", now()).
			Where("o.id = ?", string(id)).
			Where(becoming(to))
		if user != 0 {
			q = q.Where("o.user_id = ?", int64(user))
		}
		if _, err := q.Returning(orderColumns).Exec(ctx, &rows); err != nil {
			return domain.Order{}, fmt.Errorf("update order: %w", err)
		}
		if len(rows) == 1 {
			o := rows[0].order()
			if !to.HoldsStock() {
				// A campaign's row before its voucher's, as every writer takes them: the
				// voucher's sold trigger moves the campaign's.
				if _, err := lockCampaigns(ctx, tx, campaignsOf(o.VoucherID)); err != nil {
					return domain.Order{}, err
				}
				if err := takeSold(ctx, tx, o.VoucherID, o.Quantity); err != nil {
					return domain.Order{}, err
				}
			}
			return o, nil
		}

		var status string
		sel := tx.NewSelect().Model((*orderRow)(nil)).Column("status").Where("o.id = ?", string(id))
		if user != 0 {
			sel = sel.Where("o.user_id = ?", int64(user))
		}
		err := sel.Scan(ctx, &status)
		if errors.Is(err, sql.ErrNoRows) {
			return domain.Order{}, domain.ErrNotFound
		}
		if err != nil {
			return domain.Order{}, fmt.Errorf("look up order: %w", err)
		}
		if !domain.OrderStatus(status).CanBecome(to) || attempt == 2 {
			return domain.Order{}, fmt.Errorf("order is %s: %w", status, domain.ErrInvalidState)
		}
	}
}

// takeSold takes units of a closed order off voucher v's sold counter.
//
// The counter holds the units of v's live orders, so it cannot fall below a live
// order's units unless something outside the repositories corrupted it. The CHECK
// then refuses the update and the order stays open rather than hide the drift; the
// error says to recount (OrderAudit.RecountSold, run by reconciliation).
func takeSold(ctx context.Context, tx bun.Tx, v domain.VoucherID, units int) error {
	res, err := tx.NewUpdate().Model((*voucherRow)(nil)).
		Set("sold = sold - ?", units).
		Where("v.id = ?", int64(v)).
		Exec(ctx)
	if kind, _ := constraintViolation(err); kind == check {
		return fmt.Errorf("voucher %s: sold counter is below the %d units of a live order, recount it: %w", v, units, err)
	}
	if err != nil {
		return fmt.Errorf("take %d units off sold of voucher %s: %w", units, v, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("take %d units off sold of voucher %s: %w", units, v, err)
	}
	if n != 1 {
		// The foreign key makes this impossible; refuse to commit rather than guess.
		return fmt.Errorf("take %d units off sold of voucher %s: voucher not found", units, v)
	}
	return nil
}

// ExpireDue expires up to limit orders awaiting payment whose window lapsed at now —
// their recorded deadline is before now (expires_at < now), or, for an order stored
// without one (NULL: stored before deadlines were, or by an older instance), it was
// created before w.DueBefore(now) — those with a deadline first, by deadline, then
// those without one, by creation — in one transaction: each becomes expired and its
// units leave its voucher's sold counter. It returns them as they now are, oldest
// first; none when nothing is due. A limit below 1 is a *domain.ValidationError.
//
// Instances may sweep at once: each locks the orders it picks and skips those locked
// by another sweeper or by a Transition in progress, so every order is expired by
// exactly one of them, and an order being paid is left to the payment (if that fails,
// the next sweep expires it).
func (s *Orders) ExpireDue(ctx context.Context, now time.Time, w domain.PaymentWindow, limit int) ([]domain.Order, error) {
	if limit < 1 {
		return nil, fmt.Errorf("expire due orders: %w", domain.Invalid("limit", "must be at least 1"))
	}
	var rows []orderRow
	err := s.db.RunInTx(ctx, ReadCommitted, func(ctx context.Context, tx bun.Tx) error {
		if err := expireTx(ctx, tx, now, w, limit, &rows); err != nil {
			return err
		}
		events := newOutbox(s.events)
		for _, r := range rows {
			if err := events.order(r.order()); err != nil {
				return err
			}
		}
		return events.writeTx(ctx, tx)
	})
	if err != nil {
		return nil, fmt.Errorf("expire due orders: %w", Classify(err))
	}
	out := make([]domain.Order, 0, len(rows))
	for _, r := range rows {
		out = append(out, r.order())
	}
	// RETURNING promises no order.
	slices.SortFunc(out, func(a, b domain.Order) int {
		return cmp.Or(a.CreatedAt.Compare(b.CreatedAt), cmp.Compare(a.ID, b.ID))
	})
	return out, nil
}

// expireTx is ExpireDue's transaction: the due order rows first, then the
// campaign_units rows of those of a campaign's voucher by (campaign, user), then the
// campaign rows by id, then the voucher rows by id: the lock order of every writer.
func expireTx(ctx context.Context, tx bun.Tx, at time.Time, w domain.PaymentWindow, limit int, expired *[]orderRow) error {
	// FOR NO KEY UPDATE is the lock the update below takes anyway (no key changes);
	// taking it here, with SKIP LOCKED, is what keeps concurrent sweepers apart. The
	// orders with a recorded deadline first, by the index on it; then, if the batch has
	// room, those stored without one, by the index on created_at: one condition with
	// an OR would read every order awaiting payment.
	var due []orderRow
	err := tx.NewSelect().Model(&due).
		Column("id", "voucher_id", "user_id").
		Where(becoming(domain.StatusExpired)).
		Where("o.expires_at < ?", at.UTC()).
		OrderExpr("o.expires_at, o.id").
		Limit(int64(limit)).
		Apply(rowLock("NO KEY UPDATE SKIP LOCKED")).
		Scan(ctx)
	if err != nil {
		return fmt.Errorf("lock due orders: %w", err)
	}
	if len(due) < limit {
		var legacy []orderRow
		err := tx.NewSelect().Model(&legacy).
			Column("id", "voucher_id", "user_id").
			Where(becoming(domain.StatusExpired)).
			Where("o.created_at < ?", w.DueBefore(at).UTC()).
			Where("o.expires_at IS NULL").
			OrderExpr("o.created_at, o.id").
			Limit(int64(limit - len(due))).
			Apply(rowLock("NO KEY UPDATE SKIP LOCKED")).
			Scan(ctx)
		if err != nil {
			return fmt.Errorf("lock due orders stored without a deadline: %w", err)
		}
		due = append(due, legacy...)
	}
	if len(due) == 0 {
		return nil
	}
	if err := lockCampaignUnits(ctx, tx, due); err != nil {
		return err
	}
	ids := make([]string, len(due))
	for i, r := range due {
		ids[i] = r.ID
	}

	// The rows are locked and were re-checked awaiting payment when locked; the status
	// condition only restates it.
	_, err = tx.NewUpdate().Model((*orderRow)(nil)).
		Set("status = ?", string(domain.StatusExpired)).
		Set("updated_at = ?", now()).
		Where("o.id IN (?)", bun.List(ids)).
		Where(becoming(domain.StatusExpired)).
		Returning(orderColumns).
		Exec(ctx, expired)
	if err != nil {
		return fmt.Errorf("expire orders: %w", err)
	}

	units := make(map[domain.VoucherID]int)
	for _, r := range *expired {
		units[domain.VoucherID(r.VoucherID)] += r.Quantity
	}
	vouchers := make([]domain.VoucherID, 0, len(units))
	for v := range units {
		vouchers = append(vouchers, v)
	}
	slices.Sort(vouchers)
	if _, err := lockCampaigns(ctx, tx, campaignsOf(vouchers...)); err != nil {
		return err
	}
	for _, v := range vouchers {
		if err := takeSold(ctx, tx, v, units[v]); err != nil {
			return err
		}
	}
	return nil
}

// lockCampaignUnits locks, on PostgreSQL, the campaign_units rows of the users of
// orders of a campaign's voucher among rows, by (campaign, user), before a statement
// closes those orders: its trigger would lock them in the order it meets the orders,
// and Persist locks them by (campaign, user), so two such statements could each hold
// a row the other waits for. Orders of no campaign lock nothing and cost no statement.
// On SQLite the transaction runs alone and it does nothing.
func lockCampaignUnits(ctx context.Context, tx bun.Tx, rows []orderRow) error {
	if IsSQLite(tx) {
		return nil
	}
	var keys []any
	for _, r := range rows {
		if c, _ := domain.VoucherID(r.VoucherID).Campaign(); c != 0 {
			keys = append(keys, bun.Tuple([]int64{int64(c), r.UserID}))
		}
	}
	if len(keys) == 0 {
		return nil
	}
	var locked []int64
	err := tx.NewRaw(`SELECT campaign_id FROM campaign_units WHERE (campaign_id, user_id) IN (?)
		ORDER BY campaign_id, user_id FOR UPDATE`, bun.List(keys)).Scan(ctx, &locked)
	if err != nil {
		return fmt.Errorf("lock the users' campaign units: %w", err)
	}
	return nil
}

// Unreleased returns up to limit closed orders (cancelled, expired, failed) whose
// units are not yet marked released, oldest closing (updated_at) first, then by id. A
// limit below 1 is a *domain.ValidationError. No orders is an empty, non-nil slice.
func (s *Orders) Unreleased(ctx context.Context, limit int) ([]domain.Order, error) {
	if limit < 1 {
		return nil, fmt.Errorf("list unreleased orders: %w", domain.Invalid("limit", "must be at least 1"))
	}
	var rows []orderRow
	err := s.db.NewSelect().Model(&rows).
		Where("o.status IN (?)", bun.List(ClosedStatuses)).
		Where("o.released_at IS NULL").
		OrderExpr("o.updated_at, o.id").
		Limit(int64(limit)).
		Scan(ctx)
	if err != nil {
		return nil, fmt.Errorf("list unreleased orders: %w", Classify(err))
	}
	out := make([]domain.Order, 0, len(rows))
	for _, r := range rows {
		out = append(out, r.order())
	}
	return out, nil
}

// MarkReleased records that the units of the closed orders ids are back on sale, so
// Unreleased stops returning them. It is idempotent: an order marked before keeps its
// first released_at. Ids of unknown orders are ignored, and so are ids of orders still
// live (awaiting payment, paid): marking one would let it close later without its
// units ever going back. No ids touches nothing.
func (s *Orders) MarkReleased(ctx context.Context, ids ...domain.OrderID) error {
	if len(ids) == 0 {
		return nil
	}
	// Sorted and distinct, so concurrent calls meet the rows in one order.
	list := make([]string, 0, len(ids))
	for _, id := range ids {
		list = append(list, string(id))
	}
	slices.Sort(list)
	list = slices.Compact(list)
	_, err := s.db.NewUpdate().Model((*orderRow)(nil)).
		Set("released_at = ?", now()).
		Where("o.id IN (?)", bun.List(list)).
		Where("o.status IN (?)", bun.List(ClosedStatuses)).
		Where("o.released_at IS NULL").
		Exec(ctx)
	if err != nil {
		return fmt.Errorf("mark %d orders released: %w", len(list), Classify(err))
	}
	return nil
}

// deadlineBatch bounds one transaction of RecordDeadlines.
const deadlineBatch = 500

// RecordDeadlines records the payment deadline of every order awaiting payment stored
// without one (before the expires_at column was, or by an older instance during a
// rolling upgrade): its created_at plus w, the window in force. From then on the
// deadline is kept, whatever window later instances run with; until then such an
// order's deadline is its created_at plus the reader's window, as it always was. It
// returns how many orders it recorded a deadline for. Instances may run it at once:
// each row is written only while its deadline is still NULL.
func (s *Orders) RecordDeadlines(ctx context.Context, w domain.PaymentWindow) (int, error) {
	total := 0
	for {
		var rows []orderRow
		err := s.db.NewSelect().Model(&rows).Column("id", "created_at").
			Where("o.status = ?", string(domain.StatusAwaitingPayment)).
			Where("o.expires_at IS NULL").
			OrderExpr("o.created_at, o.id").
			Limit(deadlineBatch).
			Scan(ctx)
		if err != nil {
			return total, fmt.Errorf("read orders without a deadline: %w", Classify(err))
		}
		err = s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
			for _, r := range rows {
				_, err := tx.NewUpdate().Model((*orderRow)(nil)).
					Set("expires_at = ?", w.Deadline(r.CreatedAt).UTC()).
					Where("o.id = ?", r.ID).
					Where("o.expires_at IS NULL").
					Exec(ctx)
				if err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return total, fmt.Errorf("record the deadlines of %d orders: %w", len(rows), Classify(err))
		}
		total += len(rows)
		if len(rows) < deadlineBatch {
			return total, nil
		}
	}
}
