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
	// events says to write the webhook event of each change (WithOutbox).
	events bool
}

// WithOutbox returns a Vouchers that also writes voucher.updated to the webhook
// outbox in the transaction of each Update that changes the voucher (an edit, a pause,
// a resume).
func (s *Vouchers) WithOutbox() *Vouchers {
	return &Vouchers{db: s.db, events: true}
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
	Version      int64     `bun:"version"`
	// The admission settings (domain.Voucher documents them); the times are NULL and
	// the seed is NULL where the mode has none.
	Admission     string    `bun:"admission"`
	Challenge     string    `bun:"challenge"`
	PowDifficulty int       `bun:"pow_difficulty"`
	QueueOpensAt  time.Time `bun:"queue_opens_at,nullzero"`
	QueueWindow   int       `bun:"queue_window"`
	EntriesOpenAt time.Time `bun:"entries_open_at,nullzero"`
	Seed          []byte    `bun:"seed"`
	// CampaignID is the campaign the voucher is a variant of; NULL (0) for none.
	CampaignID int64 `bun:"campaign_id,nullzero"`
}

// voucherColumns are the columns of voucherRow, for a RETURNING clause scanned into
// it; unqualified, as SQLite's RETURNING takes no table alias.
const voucherColumns = "id, title, stock, sold, begins_at, ends_at, per_user_limit, paused, created_at, version, " +
	"admission, challenge, pow_difficulty, queue_opens_at, queue_window, entries_open_at, seed, campaign_id"

// admissionColumns are the columns a voucher's admission settings are created in.
var admissionColumns = []string{"admission", "challenge", "pow_difficulty", "queue_opens_at", "queue_window", "entries_open_at", "seed"}

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
		Version:      r.Version,

		Admission:     domain.Admission(r.Admission),
		Challenge:     domain.ChallengeKind(r.Challenge),
		PowDifficulty: r.PowDifficulty,
		QueueOpensAt:  utcOrZero(r.QueueOpensAt),
		QueueWindow:   r.QueueWindow,
		EntriesOpenAt: utcOrZero(r.EntriesOpenAt),
		Seed:          seedOf(r.Seed),
		CampaignID:    domain.CampaignID(r.CampaignID),
	}
}

// seedOf reads a stored seed; NULL is domain.NoSeed.
func seedOf(b []byte) domain.Seed {
	var s domain.Seed
	copy(s[:], b)
	return s
}

// utcOrZero returns t in UTC, or the zero time for a NULL.
func utcOrZero(t time.Time) time.Time {
	if t.IsZero() {
		return t
	}
	return t.UTC()
}

// setAdmission sets the admission settings of r from v: the mode's defaults and
// the seed are the use case's (domain.Voucher.WithAdmissionDefaults).
func (r *voucherRow) setAdmission(v domain.Voucher) {
	r.Admission, r.Challenge, r.PowDifficulty = string(v.Admission), string(v.Challenge), v.PowDifficulty
	if r.Admission == "" {
		r.Admission = string(domain.AdmissionFirstCome)
	}
	if r.Challenge == "" {
		r.Challenge = string(domain.ChallengeNone)
	}
	r.QueueOpensAt, r.QueueWindow, r.EntriesOpenAt = utcOrZero(v.QueueOpensAt), v.QueueWindow, utcOrZero(v.EntriesOpenAt)
	if v.Seed != domain.NoSeed {
		r.Seed = v.Seed[:]
	}
}

// Create inserts v and refreshes it from the stored row: ID, Sold (0) and Version (0)
// come from the database, CreatedAt is now, and the times read back in UTC at the
// databases' microsecond precision. The audit entry of its creation by by is written
// in the same transaction. A value a CHECK constraint rejects returns a
// *domain.ValidationError, though the use case validates before it gets here. With a
// receipt, the receipt's answer is kept in that transaction too: ports.ErrClaimLost
// (nothing stored) when the claim no longer holds its key.
//
// A voucher with a CampaignID becomes that campaign's next variant
// (domain.Campaign.Variant: its id in the campaign's block, the campaign's window,
// admission and challenge), under the campaign's lock, and the campaign counts it in
// the same transaction. A campaign that does not exist is a *domain.ValidationError
// on campaign_id, and so is a full one or a per-user limit above the campaign's.
func (s *Vouchers) Create(ctx context.Context, v *domain.Voucher, by domain.Author, r *ports.Receipt[domain.Voucher]) error {
	var row voucherRow
	err := s.db.RunInTx(ctx, ReadCommitted, func(ctx context.Context, tx bun.Tx) error {
		var err error
		if v.CampaignID != 0 {
			row, err = insertVariantTx(ctx, tx, *v)
		} else {
			row, err = insertVoucherTx(ctx, tx, *v)
		}
		if err != nil {
			return err
		}
		if err := appendTx(ctx, tx, domain.VoucherAudit(domain.AuditVoucherCreate, by, nil, row.voucher())); err != nil {
			return err
		}
		return answerTx(ctx, tx, r, row.voucher())
	})
	if err != nil {
		return fmt.Errorf("insert voucher: %w", Classify(err))
	}
	*v = row.voucher()
	return nil
}

// newVoucherRow returns the row v is created as: what an admin sets, and now.
func newVoucherRow(v domain.Voucher) voucherRow {
	row := voucherRow{
		ID:           int64(v.ID),
		Title:        v.Title,
		Stock:        v.Stock,
		BeginsAt:     v.BeginsAt.UTC(),
		EndsAt:       v.EndsAt.UTC(),
		PerUserLimit: v.PerUserLimit,
		Paused:       v.Paused,
		CreatedAt:    now(),
		CampaignID:   int64(v.CampaignID),
	}
	row.setAdmission(v)
	return row
}

// createColumns are the columns a voucher is created with; id, sold and version are
// the database's to set, but for a variant's id.
var createColumns = append([]string{"title", "stock", "begins_at", "ends_at", "per_user_limit", "paused", "created_at"},
	admissionColumns...)

// firstVariantID is the bottom of the block of ids the campaigns' vouchers take
// (domain.CampaignID.Variant, 2^40): every voucher id from it on is a campaign's, and
// a voucher outside any campaign never gets one.
var firstVariantID = int64(domain.CampaignID(0).Variant(0))

// insertVoucherTx inserts v, a voucher of no campaign, and returns its row as stored.
//
// On PostgreSQL the identity column gives the id, and a variant's explicit id never
// moves its sequence. On SQLite AUTOINCREMENT would give the largest id in the table
// plus one, which once a campaign has a variant lies in the variants' block; so there
// the id is chosen here (nextVoucherID).
func insertVoucherTx(ctx context.Context, tx bun.Tx, v domain.Voucher) (voucherRow, error) {
	row := newVoucherRow(v)
	q := tx.NewInsert().Model(&row).Column(createColumns...).Returning(voucherColumns)
	if IsSQLite(tx) {
		var err error
		if row.ID, err = nextVoucherID(ctx, tx); err != nil {
			return voucherRow{}, err
		}
		q = q.Column("id")
	}
	if _, err := q.Exec(ctx); err != nil {
		return voucherRow{}, voucherCheckError(err)
	}
	return row, nil
}

// nextVoucherID returns, on SQLite, the id the next voucher of no campaign takes: one
// more than every id such a voucher ever had (sqlite_sequence, which insertVariantTx
// keeps below the campaigns' block) or has. The caller's transaction holds the write
// lock, so no other insert takes it first.
func nextVoucherID(ctx context.Context, tx bun.Tx) (int64, error) {
	var id int64
	err := tx.NewRaw(`SELECT max(
		coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'vouchers'), 0),
		coalesce((SELECT max(id) FROM vouchers WHERE id < ?), 0)) + 1`, firstVariantID).Scan(ctx, &id)
	if err != nil {
		return 0, fmt.Errorf("choose the voucher's id: %w", err)
	}
	return id, nil
}

// insertVariantTx inserts v as the next variant of campaign v.CampaignID, holding the
// campaign's row lock (taken before any voucher's, as everywhere), counts it in the
// campaign's variants, and returns its row as stored.
func insertVariantTx(ctx context.Context, tx bun.Tx, v domain.Voucher) (voucherRow, error) {
	c, err := lockCampaign(ctx, tx, v.CampaignID)
	if errors.Is(err, domain.ErrNotFound) {
		return voucherRow{}, domain.Invalid("campaign_id", "no such campaign")
	}
	if err != nil {
		return voucherRow{}, err
	}
	variant, err := c.campaign().Variant(v)
	if err != nil {
		return voucherRow{}, err
	}
	row := newVoucherRow(variant)

	// SQLite's AUTOINCREMENT records the largest id ever inserted, this one included:
	// put back what it held, so the ids of vouchers of no campaign stay below the
	// variants' block (see insertVoucherTx).
	var seq []int64
	if IsSQLite(tx) {
		if err := tx.NewRaw("SELECT seq FROM sqlite_sequence WHERE name = 'vouchers'").Scan(ctx, &seq); err != nil {
			return voucherRow{}, fmt.Errorf("read the vouchers' sequence: %w", err)
		}
	}
	// PostgreSQL takes an explicit value of an identity column only when told to.
	overriding := ""
	if !IsSQLite(tx) {
		overriding = "OVERRIDING SYSTEM VALUE"
	}
	err = tx.NewRaw(`INSERT INTO vouchers (id, campaign_id, title, stock, begins_at, ends_at, per_user_limit, paused,
		created_at, admission, challenge, pow_difficulty, queue_opens_at, queue_window, entries_open_at, seed) ?
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING `+voucherColumns,
		bun.Safe(overriding), row.ID, row.CampaignID, row.Title, row.Stock, row.BeginsAt, row.EndsAt, row.PerUserLimit,
		row.Paused, row.CreatedAt, row.Admission, row.Challenge, row.PowDifficulty, nullTime(row.QueueOpensAt),
		row.QueueWindow, nullTime(row.EntriesOpenAt), row.Seed).Scan(ctx, &row)
	if err != nil {
		return voucherRow{}, voucherCheckError(err)
	}
	if IsSQLite(tx) {
		if len(seq) > 0 {
			_, err = tx.NewUpdate().Table("sqlite_sequence").Set("seq = ?", seq[0]).Where("name = 'vouchers'").Exec(ctx)
		} else {
			_, err = tx.NewDelete().Table("sqlite_sequence").Where("name = 'vouchers'").Exec(ctx)
		}
		if err != nil {
			return voucherRow{}, fmt.Errorf("restore the vouchers' sequence: %w", err)
		}
	}
	_, err = tx.NewUpdate().Model((*campaignRow)(nil)).Set("variants = variants + 1").Where("c.id = ?", c.ID).Exec(ctx)
	if err != nil {
		return voucherRow{}, fmt.Errorf("count the campaign's variant: %w", campaignCheckError(err))
	}
	return row, nil
}

// nullTime returns t, or nil (NULL) for the zero time, for a raw statement's argument
// of a nullzero column.
func nullTime(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t
}

// Update changes voucher id as u says, in one transaction: it locks the voucher's row
// (FOR NO KEY UPDATE on PostgreSQL, the lock its UPDATE takes anyway, so orders
// inserted meanwhile still pass their foreign-key check; on SQLite the transaction
// holds the database's one write lock), reads it, calls u.Change, writes what changed
// with its audit entry, runs u.Commit, keeps u.Receipt's answer and commits. A
// voucher u.Change returns unchanged writes nothing but the receipt's answer. It
// returns the voucher as it now is, domain.ErrNotFound, what u.Change or u.Commit
// returned, ports.ErrClaimLost, domain.ErrNotEnoughUnits when the new stock is below
// the units the voucher's live orders hold (the sold CHECK: the last net under a
// removal of units), or a *domain.ValidationError another CHECK raised.
func (s *Vouchers) Update(ctx context.Context, id domain.VoucherID, u ports.VoucherUpdate) (domain.Voucher, error) {
	var after domain.Voucher
	err := s.db.RunInTx(ctx, ReadCommitted, func(ctx context.Context, tx bun.Tx) error {
		before, err := LockVoucher(ctx, tx, id)
		if err != nil {
			return err
		}
		if after, err = u.Change(before); err != nil {
			return err
		}
		if changed(before, after) {
			if after, err = writeVoucherTx(ctx, tx, id, after); err != nil {
				return err
			}
			if err := appendTx(ctx, tx, domain.VoucherAudit(u.Action, u.By, &before, after)); err != nil {
				return err
			}
			events := newOutbox(s.events)
			if err := events.voucher(domain.EventVoucherUpdated, after); err != nil {
				return err
			}
			if err := events.writeTx(ctx, tx); err != nil {
				return err
			}
		}
		if u.Commit != nil {
			if err := u.Commit(withConn(ctx, tx), before, after); err != nil {
				return err
			}
		}
		return answerTx(ctx, tx, u.Receipt, after)
	})
	if err != nil {
		return domain.Voucher{}, fmt.Errorf("update voucher %s: %w", id, Classify(err))
	}
	return after, nil
}

// Hold calls fn with voucher id read under the lock Update takes, in a transaction
// that writes nothing, and returns fn's error or domain.ErrNotFound. fn's context
// carries the transaction (see Conn), as u.Commit's does in Update.
func (s *Vouchers) Hold(ctx context.Context, id domain.VoucherID, fn func(context.Context, domain.Voucher) error) error {
	err := s.db.RunInTx(ctx, ReadCommitted, func(ctx context.Context, tx bun.Tx) error {
		v, err := LockVoucher(ctx, tx, id)
		if err != nil {
			return err
		}
		return fn(withConn(ctx, tx), v)
	})
	if err != nil {
		return fmt.Errorf("hold voucher %s: %w", id, Classify(err))
	}
	return nil
}

// LockVoucher reads voucher id in tx under the lock of an update (FOR NO KEY UPDATE on
// PostgreSQL, see Update; on SQLite the transaction holds the database's one write
// lock), or returns domain.ErrNotFound. Update and Hold take it, and so does the
// postgres stock strategy's grab (adapters/strategies/sqlstock), so the grabs of a
// voucher and its edits take turns.
func LockVoucher(ctx context.Context, tx bun.Tx, id domain.VoucherID) (domain.Voucher, error) {
	var row voucherRow
	err := tx.NewSelect().Model(&row).Where("v.id = ?", int64(id)).Apply(rowLock("NO KEY UPDATE")).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return domain.Voucher{}, domain.ErrNotFound
	}
	if err != nil {
		return domain.Voucher{}, fmt.Errorf("lock voucher: %w", err)
	}
	return row.voucher(), nil
}

// changed reports whether after differs from before in what an admin sets or in its
// version.
func changed(before, after domain.Voucher) bool {
	return !before.Terms(after) || before.Title != after.Title || before.Paused != after.Paused ||
		before.Version != after.Version
}

// writeVoucherTx writes what an admin sets of v to voucher id (not sold: fulfillment
// moves it, under its guard), and its version, and returns the row as stored.
func writeVoucherTx(ctx context.Context, tx bun.Tx, id domain.VoucherID, v domain.Voucher) (domain.Voucher, error) {
	var row voucherRow
	err := tx.NewUpdate().Model(&row).
		Set("title = ?", v.Title).
		Set("stock = ?", v.Stock).
		Set("begins_at = ?", v.BeginsAt.UTC()).
		Set("ends_at = ?", v.EndsAt.UTC()).
		Set("per_user_limit = ?", v.PerUserLimit).
		Set("paused = ?", v.Paused).
		Set("version = ?", v.Version).
		Where("v.id = ?", int64(id)).
		Returning("*").
		Scan(ctx)
	if kind, name := constraintViolation(err); kind == check && name == "vouchers_sold_check" {
		return domain.Voucher{}, domain.ErrNotEnoughUnits
	}
	if err != nil {
		return domain.Voucher{}, voucherCheckError(err)
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
		return domain.Voucher{}, fmt.Errorf("get voucher %s: %w", id, Classify(err))
	}
	return row.voucher(), nil
}

// List returns one page of vouchers, newest (highest id) first: those q selects, at
// most q.Limit. The page after one is asked for with q.Before, the last id it held,
// and read by the primary key from there (keyset paging: no OFFSET, so a deep page
// costs what the first does). Status is judged at q.Now as domain.Voucher.Window
// judges a grab: upcoming before begins_at, live from begins_at until ends_at, ended
// from ends_at. A campaign's vouchers are a range of the primary key (variantRange).
// A q.Limit below 1 returns a *domain.ValidationError.
func (s *Vouchers) List(ctx context.Context, q ports.VoucherQuery) ([]domain.Voucher, error) {
	if q.Limit < 1 {
		return nil, domain.Invalid("limit", "must be at least 1")
	}
	var rows []voucherRow
	sel := s.db.NewSelect().Model(&rows)
	if q.Before != 0 {
		sel = sel.Where("v.id < ?", int64(q.Before))
	}
	if q.Campaign != 0 {
		first, last := variantRange(q.Campaign)
		sel = sel.Where("v.id BETWEEN ? AND ?", first, last)
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
		return nil, fmt.Errorf("list vouchers: %w", Classify(err))
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
		return nil, fmt.Errorf("list active vouchers: %w", Classify(err))
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
	"vouchers_campaign_check":       {"campaign_id", "does not match the voucher's id"},
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
