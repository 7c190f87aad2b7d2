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

var _ ports.Vouchers = (*Vouchers)(nil)

// Vouchers is a ports.Vouchers kept in the vouchers table.
type Vouchers struct {
	db *bun.DB
}

// NewVouchers returns a Vouchers that stores through db.
func NewVouchers(db *bun.DB) *Vouchers {
	return &Vouchers{db: db}
}

// voucherRow is a row of the vouchers table.
type voucherRow struct {
	bun.BaseModel `bun:"table:vouchers,alias:v"`

	ID           int64     `bun:"id,pk,autoincrement"`
	Title        string    `bun:"title"`
	Stock        int       `bun:"stock"`
	Sold         int       `bun:"sold"`
	BeginsAt     time.Time `bun:"begins_at"`
	EndsAt       time.Time `bun:"ends_at"`
	PerUserLimit int       `bun:"per_user_limit"`
	Paused       bool      `bun:"paused"`
	CreatedAt    time.Time `bun:"created_at"`
}

func (r voucherRow) voucher() domain.Voucher {
	return domain.Voucher{
		ID:           domain.VoucherID(r.ID),
		Title:        r.Title,
		Stock:        r.Stock,
		BeginsAt:     r.BeginsAt.UTC(),
		EndsAt:       r.EndsAt.UTC(),
		PerUserLimit: r.PerUserLimit,
		Sold:         r.Sold,
		Paused:       r.Paused,
		CreatedAt:    r.CreatedAt.UTC(),
	}
}

// Create inserts v and refreshes it from the stored row: ID and Sold (0) come from the
// database, CreatedAt is now, and the times read back in UTC at the databases'
// microsecond precision. A value a CHECK constraint rejects returns a
// *domain.ValidationError, though the use case validates before it gets here. With a
// receipt, the insert and the receipt's answer are one transaction: ports.ErrClaimLost
// (nothing stored) when the claim no longer holds its key.
func (s *Vouchers) Create(ctx context.Context, v *domain.Voucher, r *ports.Receipt[domain.Voucher]) error {
	row := voucherRow{
		Title:        v.Title,
		Stock:        v.Stock,
		BeginsAt:     v.BeginsAt.UTC(),
		EndsAt:       v.EndsAt.UTC(),
		PerUserLimit: v.PerUserLimit,
		Paused:       v.Paused,
		CreatedAt:    now(),
	}
	insert := func(ctx context.Context, db bun.IDB) error {
		// id and sold are the database's to set.
		_, err := db.NewInsert().
			Model(&row).
			Column("title", "stock", "begins_at", "ends_at", "per_user_limit", "paused", "created_at").
			Returning("id, title, stock, sold, begins_at, ends_at, per_user_limit, paused, created_at").
			Exec(ctx)
		return voucherCheckError(err)
	}
	var err error
	if r == nil {
		err = insert(ctx, s.db)
	} else {
		err = s.db.RunInTx(ctx, readCommitted, func(ctx context.Context, tx bun.Tx) error {
			if err := insert(ctx, tx); err != nil {
				return err
			}
			return answerTx(ctx, tx, r, row.voucher())
		})
	}
	if err != nil {
		return fmt.Errorf("insert voucher: %w", classify(err))
	}
	*v = row.voucher()
	return nil
}

// SetPaused records whether the voucher's sale is paused and returns the voucher, or
// domain.ErrNotFound.
func (s *Vouchers) SetPaused(ctx context.Context, id domain.VoucherID, paused bool) (domain.Voucher, error) {
	var row voucherRow
	err := s.db.NewUpdate().Model(&row).Set("paused = ?", paused).Where("v.id = ?", int64(id)).
		Returning("*").Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return domain.Voucher{}, fmt.Errorf("pause voucher %s: %w", id, domain.ErrNotFound)
	}
	if err != nil {
		return domain.Voucher{}, fmt.Errorf("pause voucher %s: %w", id, classify(err))
	}
	return row.voucher(), nil
}

// Get returns the voucher with id, or domain.ErrNotFound.
func (s *Vouchers) Get(ctx context.Context, id domain.VoucherID) (domain.Voucher, error) {
	var row voucherRow
	err := s.db.NewSelect().Model(&row).Where("v.id = ?", int64(id)).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return domain.Voucher{}, fmt.Errorf("get voucher %s: %w", id, domain.ErrNotFound)
	}
	if err != nil {
		return domain.Voucher{}, fmt.Errorf("get voucher %s: %w", id, classify(err))
	}
	return row.voucher(), nil
}

// List returns one page of vouchers, newest (highest id) first: those q selects, at
// most q.Limit. The page after one is asked for with q.Before, the last id it held,
// and read by the primary key from there (keyset paging: no OFFSET, so a deep page
// costs what the first does). Status is judged at q.Now as domain.Voucher.Window
// judges a grab: upcoming before begins_at, live from begins_at until ends_at, ended
// from ends_at. A q.Limit below 1 returns a *domain.ValidationError.
func (s *Vouchers) List(ctx context.Context, q ports.VoucherQuery) ([]domain.Voucher, error) {
	if q.Limit < 1 {
		return nil, domain.Invalid("limit", "must be at least 1")
	}
	var rows []voucherRow
	sel := s.db.NewSelect().Model(&rows)
	if q.Before != 0 {
		sel = sel.Where("v.id < ?", int64(q.Before))
	}
	now := q.Now.UTC()
	switch q.Status {
	case "":
	case ports.SaleUpcoming:
		sel = sel.Where("v.begins_at > ?", now)
	case ports.SaleLive:
		sel = sel.Where("v.begins_at <= ?", now).Where("v.ends_at > ?", now)
	case ports.SaleEnded:
		sel = sel.Where("v.ends_at <= ?", now)
	default:
		return nil, domain.Invalid("status", "must be live, upcoming or ended")
	}
	if err := sel.Order("v.id DESC").Limit(int64(q.Limit)).Scan(ctx); err != nil {
		return nil, fmt.Errorf("list vouchers: %w", classify(err))
	}
	return vouchers(rows), nil
}

// Active returns the vouchers whose sale has not ended at now (ends_at > now, as
// domain.Voucher.Window judges it), newest first.
func (s *Vouchers) Active(ctx context.Context, now time.Time) ([]domain.Voucher, error) {
	var rows []voucherRow
	err := s.db.NewSelect().Model(&rows).
		Where("v.ends_at > ?", now.UTC()).
		Order("v.id DESC").
		Scan(ctx)
	if err != nil {
		return nil, fmt.Errorf("list active vouchers: %w", classify(err))
	}
	return vouchers(rows), nil
}

func vouchers(rows []voucherRow) []domain.Voucher {
	out := make([]domain.Voucher, 0, len(rows))
	for _, r := range rows {
		out = append(out, r.voucher())
	}
	return out
}

// voucherChecks names the field each CHECK constraint of the vouchers table guards,
// in the words of domain.Voucher.Validate.
var voucherChecks = map[string]struct{ field, reason string }{
	"vouchers_stock_check":          {"stock", "must be greater than 0"},
	"vouchers_sold_check":           {"stock", "must be greater than 0"},
	"vouchers_window_check":         {"ends_at", "must be after begins_at"},
	"vouchers_per_user_limit_check": {"per_user_limit", "must be at least 1"},
}

// voucherCheckError translates a CHECK violation on vouchers into a
// *domain.ValidationError and returns any other error as it is.
func voucherCheckError(err error) error {
	kind, name := constraintViolation(err)
	if kind != check {
		return err
	}
	if c, ok := voucherChecks[name]; ok {
		return domain.Invalid(c.field, c.reason)
	}
	return domain.Invalid("voucher", "violates "+name)
}
