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

var _ ports.Draws = (*Draws)(nil)

// Draws is a ports.Draws kept in the draws table.
type Draws struct {
	db *bun.DB
}

// NewDraws returns the draws kept in db.
func NewDraws(db *bun.DB) *Draws { return &Draws{db: db} }

// drawRow is a row of the draws table.
type drawRow struct {
	bun.BaseModel `bun:"table:draws,alias:d"`

	VoucherID  int64     `bun:"voucher_id,pk"`
	Seed       []byte    `bun:"seed"`
	Entrants   int       `bun:"entrants"`
	Digest     string    `bun:"entrants_digest"`
	EntrantIDs []byte    `bun:"entrant_ids"`
	Winners    int       `bun:"winners"`
	DrawnAt    time.Time `bun:"drawn_at"`
}

func (r drawRow) draw() (domain.Draw, error) {
	ids, err := unpackEntrants(r.EntrantIDs, r.Entrants)
	if err != nil {
		return domain.Draw{}, fmt.Errorf("draw of voucher %d: %w", r.VoucherID, err)
	}
	return domain.Draw{SeededShuffle: domain.SeededShuffle{Voucher: domain.VoucherID(r.VoucherID), Seed: seedOf(r.Seed),
		Entrants: ids, Count: len(ids), Digest: r.Digest, At: r.DrawnAt.UTC()}, Winners: r.Winners}, nil
}

// Record inserts d's row unless its voucher has one (ON CONFLICT DO NOTHING), then
// reads the row back.
func (s *Draws) Record(ctx context.Context, d domain.Draw) (domain.Draw, error) {
	row := drawRow{VoucherID: int64(d.Voucher), Seed: d.Seed[:], Entrants: len(d.Entrants), Digest: d.Digest,
		EntrantIDs: domain.PackEntrants(d.Entrants), Winners: d.Winners, DrawnAt: d.At.UTC()}
	if _, err := s.db.NewInsert().Model(&row).On("CONFLICT (voucher_id) DO NOTHING").Exec(ctx); err != nil {
		return domain.Draw{}, fmt.Errorf("record the draw of voucher %s: %w", d.Voucher, Classify(err))
	}
	return s.Get(ctx, d.Voucher)
}

// Get reads voucher id's draw.
func (s *Draws) Get(ctx context.Context, id domain.VoucherID) (domain.Draw, error) {
	var row drawRow
	err := s.db.NewSelect().Model(&row).Where("d.voucher_id = ?", int64(id)).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return domain.Draw{}, domain.ErrNotFound
	}
	if err != nil {
		return domain.Draw{}, fmt.Errorf("read the draw of voucher %s: %w", id, Classify(err))
	}
	return row.draw()
}

// Pending reads the draw vouchers whose sale runs at now.
func (s *Draws) Pending(ctx context.Context, now time.Time) ([]domain.Voucher, error) {
	var rows []voucherRow
	err := s.db.NewSelect().Model(&rows).
		Where("v.admission = ?", string(domain.AdmissionDraw)).
		Where("v.begins_at <= ?", now.UTC()).
		Where("v.ends_at > ?", now.UTC()).
		Order("v.id").
		Scan(ctx)
	if err != nil {
		return nil, fmt.Errorf("list the draws to run: %w", Classify(err))
	}
	return vouchers(rows), nil
}
