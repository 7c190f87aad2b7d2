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

var _ ports.Draws = (*Draws)(nil)

// Draws is a ports.Draws kept in the draws table, a campaign's (a drop's, by its room
// id) in drop_draws.
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
	if d.Drop != nil {
		return s.recordDrop(ctx, d)
	}
	row := drawRow{VoucherID: int64(d.Voucher), Seed: d.Seed[:], Entrants: len(d.Entrants), Digest: d.Digest,
		EntrantIDs: domain.PackEntrants(d.Entrants), Winners: d.Winners, DrawnAt: d.At.UTC()}
	if _, err := s.db.NewInsert().Model(&row).On("CONFLICT (voucher_id) DO NOTHING").Exec(ctx); err != nil {
		return domain.Draw{}, fmt.Errorf("record the draw of voucher %s: %w", d.Voucher, Classify(err))
	}
	return s.Get(ctx, d.Voucher)
}

// Get reads voucher id's draw, or a campaign's by its room id.
func (s *Draws) Get(ctx context.Context, id domain.VoucherID) (domain.Draw, error) {
	if c, drop := id.CampaignRoom(); drop {
		return s.getDrop(ctx, c)
	}
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

// Pending reads the draw vouchers outside campaigns whose sale runs at now, then the
// draw campaigns' whose does, each as its room (domain.Campaign.Room).
func (s *Draws) Pending(ctx context.Context, now time.Time) ([]domain.Voucher, error) {
	var rows []voucherRow
	err := s.db.NewSelect().Model(&rows).
		Where("v.admission = ?", string(domain.AdmissionDraw)).
		Where("v.campaign_id IS NULL").
		Where("v.begins_at <= ?", now.UTC()).
		Where("v.ends_at > ?", now.UTC()).
		Order("v.id").
		Scan(ctx)
	if err != nil {
		return nil, fmt.Errorf("list the draws to run: %w", Classify(err))
	}
	var camps []campaignRow
	err = s.db.NewSelect().Model(&camps).
		Where("c.admission = ?", string(domain.AdmissionDraw)).
		Where("c.begins_at <= ?", now.UTC()).
		Where("c.ends_at > ?", now.UTC()).
		Order("c.id").
		Scan(ctx)
	if err != nil {
		return nil, fmt.Errorf("list the drops' draws to run: %w", Classify(err))
	}
	out := vouchers(rows)
	for _, c := range camps {
		out = append(out, c.campaign().Room())
	}
	return out, nil
}

// dropDrawRow is a row of the drop_draws table.
type dropDrawRow struct {
	bun.BaseModel `bun:"table:drop_draws,alias:dd"`

	CampaignID int64     `bun:"campaign_id,pk"`
	Seed       []byte    `bun:"seed"`
	Entrants   int       `bun:"entrants"`
	Digest     string    `bun:"entrants_digest"`
	EntrantIDs []byte    `bun:"entrant_ids"`
	Choices    []byte    `bun:"choices"`
	Units      []byte    `bun:"units"`
	Cap        int64     `bun:"cap"`
	Winners    int       `bun:"winners"`
	DrawnAt    time.Time `bun:"drawn_at"`
}

// recordDrop inserts the row of d, a campaign's draw, unless the campaign has one,
// then reads the row back.
func (s *Draws) recordDrop(ctx context.Context, d domain.Draw) (domain.Draw, error) {
	c, _ := d.Voucher.Campaign()
	choices := make([]byte, 0, len(d.Drop.Choices)*2)
	for _, v := range d.Drop.Choices {
		_, k := v.Campaign()
		choices = binary.AppendUvarint(choices, uint64(k))
	}
	units := make([]byte, 0, len(d.Drop.Units)*3)
	for _, n := range d.Drop.Units {
		units = binary.AppendUvarint(units, uint64(n))
	}
	row := dropDrawRow{CampaignID: int64(c), Seed: d.Seed[:], Entrants: len(d.Entrants), Digest: d.Digest,
		EntrantIDs: domain.PackEntrants(d.Entrants), Choices: choices, Units: units, Cap: int64(d.Drop.Cap),
		Winners: d.Winners, DrawnAt: d.At.UTC()}
	if _, err := s.db.NewInsert().Model(&row).On("CONFLICT (campaign_id) DO NOTHING").Exec(ctx); err != nil {
		return domain.Draw{}, fmt.Errorf("record the draw of campaign %s: %w", c, Classify(err))
	}
	return s.getDrop(ctx, c)
}

// getDrop reads campaign c's draw.
func (s *Draws) getDrop(ctx context.Context, c domain.CampaignID) (domain.Draw, error) {
	var row dropDrawRow
	err := s.db.NewSelect().Model(&row).Where("dd.campaign_id = ?", int64(c)).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return domain.Draw{}, domain.ErrNotFound
	}
	if err != nil {
		return domain.Draw{}, fmt.Errorf("read the draw of campaign %s: %w", c, Classify(err))
	}
	ids, err := unpackEntrants(row.EntrantIDs, row.Entrants)
	if err != nil {
		return domain.Draw{}, fmt.Errorf("draw of campaign %s: %w", c, err)
	}
	numbers, err := unpackUvarints(row.Choices)
	if err != nil || len(numbers) != len(ids) {
		return domain.Draw{}, fmt.Errorf("draw of campaign %s: %d choices stored for %d entrants (%v)", c, len(numbers), len(ids), err)
	}
	drop := &domain.Drop{Choices: make([]domain.VoucherID, len(numbers)), Cap: int(row.Cap)}
	for i, k := range numbers {
		drop.Choices[i] = c.Variant(k)
	}
	if drop.Units, err = unpackUvarints(row.Units); err != nil {
		return domain.Draw{}, fmt.Errorf("draw of campaign %s: units: %w", c, err)
	}
	return domain.Draw{SeededShuffle: domain.SeededShuffle{Voucher: c.Room(), Seed: seedOf(row.Seed),
		Entrants: ids, Count: len(ids), Digest: row.Digest, At: row.DrawnAt.UTC()}, Winners: row.Winners, Drop: drop}, nil
}

// unpackUvarints decodes a run of uvarints.
func unpackUvarints(b []byte) ([]int, error) {
	var out []int
	for len(b) > 0 {
		n, size := binary.Uvarint(b)
		if size <= 0 {
			return nil, errors.New("malformed uvarint")
		}
		out = append(out, int(n))
		b = b[size:]
	}
	return out, nil
}
