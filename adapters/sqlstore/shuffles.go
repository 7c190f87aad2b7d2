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

var _ ports.Shuffles = (*Shuffles)(nil)

// Shuffles is a ports.Shuffles kept in the room_shuffles table: one row per voucher,
// its entrants packed as a draw's are (domain.PackEntrants), so a waiting room's
// shuffle and a draw's are one record in one encoding.
type Shuffles struct {
	db *bun.DB
}

// NewShuffles returns the shuffles kept in db.
func NewShuffles(db *bun.DB) *Shuffles {
	return &Shuffles{db: db}
}

// shuffleRow is a row of the room_shuffles table.
type shuffleRow struct {
	bun.BaseModel `bun:"table:room_shuffles,alias:s"`

	VoucherID      int64     `bun:"voucher_id,pk"`
	Seed           []byte    `bun:"seed"`
	EntrantsCount  int       `bun:"entrants_count"`
	EntrantsDigest string    `bun:"entrants_digest"`
	EntrantIDs     []byte    `bun:"entrant_ids"`
	ShuffledAt     time.Time `bun:"shuffled_at"`
}

// Save stores s unless its voucher has a shuffle (ON CONFLICT DO NOTHING) and returns
// the one stored, entrants included.
func (s *Shuffles) Save(ctx context.Context, sh domain.SeededShuffle) (domain.SeededShuffle, error) {
	row := shuffleRow{VoucherID: int64(sh.Voucher), Seed: sh.Seed[:], EntrantsCount: len(sh.Entrants), EntrantsDigest: sh.Digest,
		EntrantIDs: domain.PackEntrants(sh.Entrants), ShuffledAt: sh.At.UTC().Truncate(time.Millisecond)}
	if _, err := s.db.NewInsert().Model(&row).On("CONFLICT (voucher_id) DO NOTHING").Exec(ctx); err != nil {
		return domain.SeededShuffle{}, fmt.Errorf("save the shuffle of voucher %s: %w", sh.Voucher, Classify(err))
	}
	return s.Get(ctx, sh.Voucher, true)
}

// Get returns voucher id's shuffle, with its entrants when entrants is set, or
// domain.ErrNotFound.
func (s *Shuffles) Get(ctx context.Context, id domain.VoucherID, entrants bool) (domain.SeededShuffle, error) {
	var row shuffleRow
	q := s.db.NewSelect().Model(&row).Where("s.voucher_id = ?", int64(id))
	if !entrants {
		q = q.ExcludeColumn("entrant_ids")
	}
	err := q.Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return domain.SeededShuffle{}, domain.ErrNotFound
	}
	if err != nil {
		return domain.SeededShuffle{}, fmt.Errorf("read the shuffle of voucher %s: %w", id, Classify(err))
	}
	if len(row.Seed) != domain.SeedSize {
		return domain.SeededShuffle{}, fmt.Errorf("the shuffle of voucher %s holds a seed of %d bytes", id, len(row.Seed))
	}
	sh := domain.SeededShuffle{Voucher: id, Seed: domain.Seed(row.Seed), Count: row.EntrantsCount, Digest: row.EntrantsDigest, At: row.ShuffledAt.UTC()}
	if entrants {
		if sh.Entrants, err = unpackEntrants(row.EntrantIDs, row.EntrantsCount); err != nil {
			return domain.SeededShuffle{}, fmt.Errorf("the shuffle of voucher %s: %w", id, err)
		}
	}
	return sh, nil
}

// unpackEntrants decodes the entrant_ids of a shuffle or a draw (domain.PackEntrants)
// and checks they are the count their row says.
func unpackEntrants(packed []byte, count int) ([]domain.UserID, error) {
	ids, err := domain.UnpackEntrants(packed)
	if err != nil {
		return nil, err
	}
	if len(ids) != count {
		return nil, fmt.Errorf("%d entrants stored, %d counted", len(ids), count)
	}
	return ids, nil
}
