package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/uptrace/bun"

	"github.com/seckill/seckill/domain"
	"github.com/seckill/seckill/ports"
)

var _ ports.OrderAudit = (*Orders)(nil)

// LiveStatuses are the statuses whose orders hold units (domain.OrderStatus.HoldsStock),
// the ones the sold counter counts and the live unique index covers. Only
// awaiting_payment and paid are ever stored; queued is listed so that the recount and
// reconciliation, which judges by HoldsStock, agree on any row that says otherwise.
// Exported for the postgres stock strategy (adapters/strategies/sqlstock), whose
// reservations are these orders; read it, never change it.
var LiveStatuses = []string{
	string(domain.StatusQueued), string(domain.StatusAwaitingPayment), string(domain.StatusPaid),
}

// snapshot is the isolation Ledger reads at: every statement of the transaction sees
// the database as of its first one, so the voucher and its orders agree.
var snapshot = &sql.TxOptions{Isolation: sql.LevelRepeatableRead, ReadOnly: true}

// ledgerPage is how many orders Ledger reads per statement.
const ledgerPage = 10000

// ledgerTimeout bounds a Ledger whose context has no deadline of its own.
const ledgerTimeout = 5 * time.Minute

// Ledger returns voucher id and all its orders, oldest (by id) first, read from one
// snapshot, keyset-paged by order id: the voucher's sold counter is the one its orders had at that moment. It
// returns domain.ErrNotFound for an unknown voucher. No orders is an empty, non-nil
// slice.
func (s *Orders) Ledger(ctx context.Context, id domain.VoucherID) (ports.Ledger, error) {
	if _, ok := ctx.Deadline(); !ok {
		// The guarded connector gives a call without a deadline a few seconds, enough
		// for a request; a voucher with a million orders takes longer to read.
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, ledgerTimeout)
		defer cancel()
	}
	var v voucherRow
	var rows []orderRow
	err := s.db.RunInTx(ctx, snapshot, func(ctx context.Context, tx bun.Tx) error {
		err := tx.NewSelect().Model(&v).Where("v.id = ?", int64(id)).Scan(ctx)
		if errors.Is(err, sql.ErrNoRows) {
			return domain.ErrNotFound
		}
		if err != nil {
			return fmt.Errorf("read voucher: %w", err)
		}
		if !IsSQLite(tx) {
			// Each page must be a range of orders_voucher_id_id_idx. When the table's
			// statistics lag (a million orders arrived since the last ANALYZE), the
			// planner expects a few rows and prefers a bitmap scan of the voucher's
			// every order, sorted, for each page: 190 ms a page, 24 s a million.
			if _, err := tx.ExecContext(ctx, "SET LOCAL enable_bitmapscan = off"); err != nil {
				return fmt.Errorf("plan the ledger: %w", err)
			}
		}
		// A page at a time, by (voucher_id, id), so no one statement holds a voucher's
		// every order; the transaction's snapshot keeps the pages one moment's.
		for after := ""; ; {
			var page []orderRow
			err := tx.NewSelect().Model(&page).Where("o.voucher_id = ?", int64(id)).Where("o.id > ?", after).
				Order("o.id").Limit(ledgerPage).Scan(ctx)
			if err != nil {
				return fmt.Errorf("read orders: %w", err)
			}
			rows = append(rows, page...)
			if len(page) < ledgerPage {
				return nil
			}
			after = page[len(page)-1].ID
		}
	})
	if err != nil {
		return ports.Ledger{}, fmt.Errorf("ledger of voucher %s: %w", id, Classify(err))
	}
	l := ports.Ledger{Voucher: v.voucher(), Orders: make([]domain.Order, 0, len(rows))}
	for _, r := range rows {
		l.Orders = append(l.Orders, r.order())
	}
	return l, nil
}

// RecountSold sets voucher id's sold counter to the units its live orders hold and
// returns the new value, or domain.ErrNotFound for an unknown voucher. It is safe to
// run while the sale is live: concurrent fulfillment and transitions never lose an
// update to it, nor it to them. Should the live orders hold more than the stock, the
// CHECK refuses the update and the error says so.
//
// Why the lock comes first. At READ COMMITTED every statement reads its own snapshot,
// taken when it starts. A single UPDATE … SET sold = (SELECT sum …) would take its
// snapshot before waiting for the voucher row: were a Persist to commit meanwhile (it
// inserts its orders, then adds their units to sold), the update would wait for it,
// then overwrite the counter Persist left with a sum that misses Persist's orders —
// a lost update. So the row is locked first (FOR NO KEY UPDATE, the lock an UPDATE
// takes; it lets Persist's foreign-key checks through), and only then is the sum read,
// by a statement whose snapshot starts after the lock is held:
//
//   - a Persist that updated the counter before the lock has committed by the time the
//     lock is granted, so the sum sees its orders;
//   - a Persist that had not has its orders uncommitted, so the sum leaves them out,
//     and its own counter update waits for this transaction, then adds their units to
//     the recounted value.
//
// A Transition or ExpireDue closing an order is the mirror image: it updates the
// order before the counter, so the sum either sees the order closed and the counter
// already lowered, or still live and lowered after the recount. No transaction holds
// the voucher row while waiting for anything but order rows this one never locks (or
// its campaign's row, which every writer, this one too, locks before the voucher's),
// so the lock cannot deadlock. The transaction must be READ COMMITTED (not the server's
// default, whatever it is): at REPEATABLE READ the sum would read the snapshot taken
// before the lock.
func (s *Orders) RecountSold(ctx context.Context, id domain.VoucherID) (int, error) {
	var sold int
	err := s.db.RunInTx(ctx, ReadCommitted, func(ctx context.Context, tx bun.Tx) error {
		// A campaign's voucher: the campaign's row first, whose sold the voucher's
		// trigger moves with the recount, as every writer of both takes them.
		if _, err := lockCampaigns(ctx, tx, campaignsOf(id)); err != nil {
			return err
		}
		var locked int64
		err := tx.NewSelect().Model((*voucherRow)(nil)).
			Column("id").
			Where("v.id = ?", int64(id)).
			Apply(rowLock("NO KEY UPDATE")).
			Scan(ctx, &locked)
		if errors.Is(err, sql.ErrNoRows) {
			return domain.ErrNotFound
		}
		if err != nil {
			return fmt.Errorf("lock voucher: %w", err)
		}
		live := tx.NewSelect().Model((*orderRow)(nil)).
			ColumnExpr("coalesce(sum(o.quantity), 0)").
			Where("o.voucher_id = ?", int64(id)).
			Where("o.status IN (?)", bun.List(LiveStatuses))
		_, err = tx.NewUpdate().Model((*voucherRow)(nil)).
			Set("sold = (?)", live).
			Where("v.id = ?", int64(id)).
			Returning("sold").
			Exec(ctx, &sold)
		if err != nil {
			return fmt.Errorf("set sold: %w", err)
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("recount sold of voucher %s: %w", id, Classify(err))
	}
	return sold, nil
}
