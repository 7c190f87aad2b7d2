package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/uptrace/bun"

	"github.com/seckill/seckill/domain"
)

// UnitsByStatus returns the units the voucher's orders hold in each status; statuses
// without units are absent, and so is everything for an unknown voucher. It reads
// the counters the database's triggers keep (table voucher_units, and on PostgreSQL
// the changes not yet folded into it, see FoldUnits) in one statement, so what it
// returns is one moment's, and it costs the same at a million orders as at ten.
//
// With at, that moment is also at's: the read and at run in one transaction holding
// the voucher's row under a share lock (FOR SHARE on PostgreSQL; on SQLite the
// database's write lock), which every transaction that moves the voucher's stock or
// its live units takes in a conflicting mode (they all update the row: sold, stock),
// so none commits from the read until at returns. at is given a context that carries
// the transaction (see Conn), for a reader of this database under it.
func (s *Orders) UnitsByStatus(ctx context.Context, voucher domain.VoucherID, at func(context.Context) error) (map[domain.OrderStatus]int, error) {
	if at == nil {
		out, err := unitsByStatus(ctx, s.db, voucher)
		if err != nil {
			return nil, fmt.Errorf("count units of voucher %s: %w", voucher, Classify(err))
		}
		return out, nil
	}
	var out map[domain.OrderStatus]int
	err := s.db.RunInTx(ctx, ReadCommitted, func(ctx context.Context, tx bun.Tx) error {
		err := tx.NewSelect().Model((*voucherRow)(nil)).Column("id").Where("v.id = ?", int64(voucher)).
			Apply(rowLock("SHARE")).Scan(ctx, new(int64))
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("lock voucher: %w", err)
		}
		if out, err = unitsByStatus(ctx, tx, voucher); err != nil {
			return err
		}
		return at(withConn(ctx, tx))
	})
	if err != nil {
		return nil, fmt.Errorf("count units of voucher %s: %w", voucher, Classify(err))
	}
	return out, nil
}

// unitsByStatus reads the voucher's units per status through db in one statement.
func unitsByStatus(ctx context.Context, db bun.IDB, voucher domain.VoucherID) (map[domain.OrderStatus]int, error) {
	var rows []struct {
		Status string `bun:"status"`
		Units  int    `bun:"units"`
	}
	query := `SELECT status, sum(units) AS units FROM voucher_units WHERE voucher_id = ? GROUP BY status`
	args := []any{int64(voucher)}
	if !IsSQLite(db) {
		query = `SELECT status, sum(units) AS units FROM (
			SELECT status, units FROM voucher_units WHERE voucher_id = ?
			UNION ALL
			SELECT status, units FROM voucher_unit_changes WHERE voucher_id = ?
		) counted GROUP BY status`
		args = append(args, int64(voucher))
	}
	if err := db.NewRaw(query, args...).Scan(ctx, &rows); err != nil {
		return nil, err
	}
	out := make(map[domain.OrderStatus]int, len(rows))
	for _, r := range rows {
		if r.Units != 0 {
			out[domain.OrderStatus(r.Status)] = r.Units
		}
	}
	return out, nil
}

// foldUnitsSQL moves up to ? changes, oldest first, into the counters, in one
// statement. SKIP LOCKED keeps concurrent folds to disjoint changes, and the counters
// are upserted in (voucher, status) order, so two folds never deadlock; the changes
// it deletes are exactly the ones it adds, so none is counted twice or lost.
const foldUnitsSQL = `WITH moved AS (
	DELETE FROM voucher_unit_changes WHERE id IN (
		SELECT id FROM voucher_unit_changes ORDER BY id LIMIT ? FOR UPDATE SKIP LOCKED
	) RETURNING voucher_id, status, units
), summed AS (
	SELECT voucher_id, status, sum(units) AS units, count(*) AS n FROM moved GROUP BY voucher_id, status
), upserted AS (
	INSERT INTO voucher_units (voucher_id, status, units)
	SELECT voucher_id, status, units FROM summed ORDER BY voucher_id, status
	ON CONFLICT (voucher_id, status) DO UPDATE SET units = voucher_units.units + excluded.units
)
SELECT coalesce(sum(n), 0) FROM summed`

// FoldUnits moves up to limit of the unit changes PostgreSQL's triggers appended into
// the per-voucher counters and returns how many it moved; run it often (serve does),
// so that UnitsByStatus reads few changes. On SQLite the triggers move the counters
// themselves, and it moves nothing.
func (s *Orders) FoldUnits(ctx context.Context, limit int) (int, error) {
	if IsSQLite(s.db) {
		return 0, nil
	}
	var n int
	if err := s.db.NewRaw(foldUnitsSQL, limit).Scan(ctx, &n); err != nil {
		return 0, fmt.Errorf("fold unit changes: %w", Classify(err))
	}
	return n, nil
}
