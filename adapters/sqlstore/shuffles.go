package sqlstore

import (
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/uptrace/bun"

	"github.com/seckill/seckill/domain"
	"github.com/seckill/seckill/ports"
)

var _ ports.Shuffles = (*Shuffles)(nil)

// Shuffles is a ports.Shuffles kept in the room_shuffles table: one row per voucher,
// its entrants packed as 8-byte big-endian ids (800 kB for 100,000).
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
	Entrants       []byte    `bun:"entrants"`
	ShuffledAt     time.Time `bun:"shuffled_at"`
}

// Save stores s unless its voucher has a shuffle (ON CONFLICT DO NOTHING) and returns
// the one stored, entrants included.
func (s *Shuffles) Save(ctx context.Context, sh domain.SeededShuffle) (domain.SeededShuffle, error) {
	packed := make([]byte, 8*len(sh.Entrants))
	for i, u := range sh.Entrants {
		binary.BigEndian.PutUint64(packed[8*i:], uint64(u))
	}
	row := shuffleRow{VoucherID: int64(sh.Voucher), Seed: sh.Seed[:], EntrantsCount: len(sh.Entrants), EntrantsDigest: sh.Digest,
		Entrants: packed, ShuffledAt: sh.At.UTC().Truncate(time.Millisecond)}
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
		q = q.ExcludeColumn("entrants")
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
		if len(row.Entrants) != 8*row.EntrantsCount {
			return domain.SeededShuffle{}, fmt.Errorf("the shuffle of voucher %s holds %d bytes of entrants for %d", id, len(row.Entrants), row.EntrantsCount)
		}
		sh.Entrants = make([]domain.UserID, row.EntrantsCount)
		for i := range sh.Entrants {
			sh.Entrants[i] = domain.UserID(binary.BigEndian.Uint64(row.Entrants[8*i:]))
		}
	}
	return sh, nil
}
