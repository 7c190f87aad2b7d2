package migrations

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"github.com/uptrace/bun"

	"github.com/seckill/seckill/domain"
)

// The waiting rooms' shuffles take the draws' encoding of their entrants: room_shuffles'
// entrants, the sorted ids as 8-byte big-endian integers one after another, become
// entrant_ids, the same ids packed by domain.PackEntrants as draws.entrant_ids are.
// The column is renamed so that a binary still writing the old encoding fails instead
// of mixing the two. The bytes are converted in Go, one row at a time, all in one
// transaction: a row that cannot be read fails the migration, naming its voucher, and
// leaves every row as it was.
func init() {
	Migrations.MustRegister(packRoomShuffles, widenRoomShuffles)
}

// packRoomShuffles renames room_shuffles.entrants to entrant_ids and packs each row's.
func packRoomShuffles(ctx context.Context, db *bun.DB) error {
	return db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		if _, err := tx.ExecContext(ctx, "ALTER TABLE room_shuffles RENAME COLUMN entrants TO entrant_ids"); err != nil {
			return fmt.Errorf("rename room_shuffles.entrants: %w", err)
		}
		return convertShuffles(ctx, tx, func(wide []byte, count int) ([]byte, error) {
			if len(wide) != 8*count {
				return nil, fmt.Errorf("%d bytes of entrants for %d", len(wide), count)
			}
			ids := make([]domain.UserID, count)
			for i := range ids {
				ids[i] = domain.UserID(binary.BigEndian.Uint64(wide[8*i:]))
			}
			if !slices.IsSorted(ids) {
				return nil, errors.New("entrants not sorted")
			}
			return domain.PackEntrants(ids), nil
		})
	})
}

// widenRoomShuffles undoes packRoomShuffles: each row's entrant_ids back to 8-byte
// big-endian ids, the column renamed entrants again.
func widenRoomShuffles(ctx context.Context, db *bun.DB) error {
	return db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		err := convertShuffles(ctx, tx, func(packed []byte, count int) ([]byte, error) {
			ids, err := domain.UnpackEntrants(packed)
			if err != nil {
				return nil, err
			}
			if len(ids) != count {
				return nil, fmt.Errorf("%d entrants stored, %d counted", len(ids), count)
			}
			wide := make([]byte, 0, 8*len(ids))
			for _, id := range ids {
				wide = binary.BigEndian.AppendUint64(wide, uint64(id))
			}
			return wide, nil
		})
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, "ALTER TABLE room_shuffles RENAME COLUMN entrant_ids TO entrants"); err != nil {
			return fmt.Errorf("rename room_shuffles.entrant_ids: %w", err)
		}
		return nil
	})
}

// convertShuffles replaces each room_shuffles row's entrant_ids by convert of them and
// the row's entrants_count, one row at a time (a row's entrants run to megabytes).
func convertShuffles(ctx context.Context, tx bun.Tx, convert func(entrants []byte, count int) ([]byte, error)) error {
	var vouchers []int64
	if err := tx.NewRaw("SELECT voucher_id FROM room_shuffles ORDER BY voucher_id").Scan(ctx, &vouchers); err != nil {
		return fmt.Errorf("list room_shuffles: %w", err)
	}
	for _, v := range vouchers {
		var count int
		var entrants []byte
		err := tx.QueryRowContext(ctx, "SELECT entrants_count, entrant_ids FROM room_shuffles WHERE voucher_id = ?", v).
			Scan(&count, &entrants)
		if err != nil {
			return fmt.Errorf("read the shuffle of voucher %d: %w", v, err)
		}
		converted, err := convert(entrants, count)
		if err != nil {
			return fmt.Errorf("convert the shuffle of voucher %d: %w", v, err)
		}
		if _, err := tx.ExecContext(ctx, "UPDATE room_shuffles SET entrant_ids = ? WHERE voucher_id = ?", converted, v); err != nil {
			return fmt.Errorf("write the shuffle of voucher %d: %w", v, err)
		}
	}
	return nil
}
