package sqlstore

import (
	"context"
	"fmt"

	"github.com/uptrace/bun"

	"github.com/seckill/seckill/domain"
)

// Import stores generated vouchers as they are — sold included — in one multi-row
// INSERT, and returns them with the ids and creation times the database gave them,
// in the same order. It is for generated data (`seckill-lab seed`), not for the API: it
// checks nothing the schema does not.
func (s *Vouchers) Import(ctx context.Context, vs []domain.Voucher) ([]domain.Voucher, error) {
	if len(vs) == 0 {
		return nil, nil
	}
	rows := make([]voucherRow, len(vs))
	for i, v := range vs {
		rows[i] = voucherRow{Title: v.Title, Stock: v.Stock, Sold: v.Sold, BeginsAt: v.BeginsAt.UTC(),
			EndsAt: v.EndsAt.UTC(), PerUserLimit: v.PerUserLimit, Paused: v.Paused, CreatedAt: now()}
	}
	err := s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		q := tx.NewInsert().Model(&rows).
			Column("title", "stock", "sold", "begins_at", "ends_at", "per_user_limit", "paused", "created_at")
		if IsSQLite(tx) {
			// The ids below the campaigns' block, as insertVoucherTx chooses them.
			next, err := nextVoucherID(ctx, tx)
			if err != nil {
				return err
			}
			for i := range rows {
				rows[i].ID = next + int64(i)
			}
			q = q.Column("id")
		}
		_, err := q.Returning("id").Exec(ctx)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("import vouchers: %w", Classify(err))
	}
	out := make([]domain.Voucher, len(rows))
	for i, r := range rows {
		out[i] = r.voucher()
	}
	return out, nil
}

// Import stores generated orders as they are, in one multi-row INSERT; closed ones
// are stored released (their units are back on sale already). The vouchers' sold
// counters are not moved: Vouchers.Import stores them as generated. It is for
// generated data (`seckill-lab seed`), not for the API.
func (s *Orders) Import(ctx context.Context, os []domain.Order) error {
	if len(os) == 0 {
		return nil
	}
	rows := make([]orderRow, len(os))
	var closed []string
	for i, o := range os {
		rows[i] = orderRow{ID: string(o.ID), VoucherID: int64(o.VoucherID), UserID: int64(o.UserID),
			Quantity: o.Quantity, Status: string(o.Status), CreatedAt: o.CreatedAt.UTC(), ExpiresAt: o.ExpiresAt.UTC(), UpdatedAt: now()}
		if !o.Status.HoldsStock() {
			closed = append(closed, string(o.ID))
		}
	}
	err := s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		if _, err := tx.NewInsert().Model(&rows).Exec(ctx); err != nil {
			return err
		}
		if len(closed) > 0 {
			_, err := tx.NewUpdate().Model((*orderRow)(nil)).Set("released_at = updated_at").
				Where("o.id IN (?)", bun.List(closed)).Exec(ctx)
			return err
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("import orders: %w", Classify(err))
	}
	return nil
}
