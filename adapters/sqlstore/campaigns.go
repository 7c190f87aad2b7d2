package sqlstore

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/uptrace/bun"

	"github.com/seckill/seckill/domain"
	"github.com/seckill/seckill/ports"
)

var _ ports.Campaigns = (*Campaigns)(nil)

// Campaigns is a ports.Campaigns kept in the campaigns table. Its vouchers are rows of
// vouchers with the campaign's id in campaign_id, created by Vouchers.Create.
//
// The schema guards a campaign's sale by itself (migration 20261210000000_campaigns):
// campaigns.sold follows its vouchers' sold counters and its CHECK refuses to pass the
// cap; campaign_units follows each user's live orders of its vouchers and its trigger
// refuses to pass the per-user limit. Persist keeps to both without tripping them.
//
// Every transaction that locks a campaign's row and a voucher's row takes the
// campaign's first (Update, Vouchers.Create, Persist, the lifecycle's and
// RecountSold's moves of sold, whose trigger updates the campaign), so none waits for
// another crosswise.
type Campaigns struct {
	db *bun.DB
	// events says to write the webhook event of each change (WithOutbox).
	events bool
}

// NewCampaigns returns a Campaigns that stores through db.
func NewCampaigns(db *bun.DB) *Campaigns {
	return &Campaigns{db: db}
}

// WithOutbox returns a Campaigns that also writes campaign.updated to the webhook
// outbox in the transaction of each Update that changes the campaign.
func (s *Campaigns) WithOutbox() *Campaigns {
	return &Campaigns{db: s.db, events: true}
}

// campaignRow is a row of the campaigns table.
type campaignRow struct {
	bun.BaseModel `bun:"table:campaigns,alias:c"`

	ID           int64     `bun:"id,pk,autoincrement"`
	Title        string    `bun:"title"`
	BeginsAt     time.Time `bun:"begins_at"`
	EndsAt       time.Time `bun:"ends_at"`
	PerUserLimit int       `bun:"per_user_limit"`
	// Cap is NULL for a campaign without one.
	Cap           *int      `bun:"cap"`
	Sold          int       `bun:"sold"`
	Variants      int       `bun:"variants"`
	Admission     string    `bun:"admission"`
	Challenge     string    `bun:"challenge"`
	PowDifficulty int       `bun:"pow_difficulty"`
	QueueOpensAt  time.Time `bun:"queue_opens_at,nullzero"`
	QueueWindow   int       `bun:"queue_window"`
	EntriesOpenAt time.Time `bun:"entries_open_at,nullzero"`
	Seed          []byte    `bun:"seed"`
	Version       int64     `bun:"version"`
	CreatedAt     time.Time `bun:"created_at"`
}

// campaignColumns are the columns of campaignRow, for a RETURNING clause scanned into
// it; unqualified, as SQLite's RETURNING takes no table alias.
const campaignColumns = "id, title, begins_at, ends_at, per_user_limit, cap, sold, variants, admission, challenge, " +
	"pow_difficulty, queue_opens_at, queue_window, entries_open_at, seed, version, created_at"

func (r campaignRow) campaign() domain.Campaign {
	c := domain.Campaign{
		ID:            domain.CampaignID(r.ID),
		Title:         r.Title,
		BeginsAt:      r.BeginsAt.UTC(),
		EndsAt:        r.EndsAt.UTC(),
		PerUserLimit:  r.PerUserLimit,
		Sold:          r.Sold,
		Variants:      r.Variants,
		Admission:     domain.Admission(r.Admission),
		Challenge:     domain.ChallengeKind(r.Challenge),
		PowDifficulty: r.PowDifficulty,
		QueueOpensAt:  utcOrZero(r.QueueOpensAt),
		QueueWindow:   r.QueueWindow,
		EntriesOpenAt: utcOrZero(r.EntriesOpenAt),
		Seed:          seedOf(r.Seed),
		Version:       r.Version,
		CreatedAt:     r.CreatedAt.UTC(),
	}
	if r.Cap != nil {
		n := *r.Cap
		c.Cap = &n
	}
	return c
}

// Create inserts c and refreshes it from the stored row: ID, Sold (0), Variants (0)
// and Version (0) come from the database, CreatedAt is now, the times read back in
// UTC at the databases' microsecond precision, and an empty admission or challenge
// reads back first_come or none. The audit entry of its creation by by is written in
// the same transaction, and with a receipt the receipt's answer too:
// ports.ErrClaimLost (nothing stored) when the claim no longer holds its key. A value
// a CHECK constraint rejects returns a *domain.ValidationError, though the use case
// validates before it gets here.
func (s *Campaigns) Create(ctx context.Context, c *domain.Campaign, by domain.Author, r *ports.Receipt[domain.Campaign]) error {
	row := campaignRow{
		Title:         c.Title,
		BeginsAt:      c.BeginsAt.UTC(),
		EndsAt:        c.EndsAt.UTC(),
		PerUserLimit:  c.PerUserLimit,
		Cap:           c.Cap,
		Admission:     string(c.Admission),
		Challenge:     string(c.Challenge),
		PowDifficulty: c.PowDifficulty,
		QueueOpensAt:  utcOrZero(c.QueueOpensAt),
		QueueWindow:   c.QueueWindow,
		EntriesOpenAt: utcOrZero(c.EntriesOpenAt),
		CreatedAt:     now(),
	}
	if c.Seed != domain.NoSeed {
		row.Seed = c.Seed[:]
	}
	if row.Admission == "" {
		row.Admission = string(domain.AdmissionFirstCome)
	}
	if row.Challenge == "" {
		row.Challenge = string(domain.ChallengeNone)
	}
	err := s.db.RunInTx(ctx, ReadCommitted, func(ctx context.Context, tx bun.Tx) error {
		// id, sold, variants and version are the database's to set.
		_, err := tx.NewInsert().Model(&row).
			Column("title", "begins_at", "ends_at", "per_user_limit", "cap", "admission", "challenge", "pow_difficulty",
				"queue_opens_at", "queue_window", "entries_open_at", "seed", "created_at").
			Returning(campaignColumns).
			Exec(ctx)
		if err != nil {
			return campaignCheckError(err)
		}
		if err := appendTx(ctx, tx, domain.CampaignAudit(domain.AuditCampaignCreate, by, nil, row.campaign())); err != nil {
			return err
		}
		return answerTx(ctx, tx, r, row.campaign())
	})
	if err != nil {
		return fmt.Errorf("insert campaign: %w", Classify(err))
	}
	*c = row.campaign()
	return nil
}

// Get returns the campaign with id, with its sold and variants as stored now, or
// domain.ErrNotFound.
func (s *Campaigns) Get(ctx context.Context, id domain.CampaignID) (domain.Campaign, error) {
	var row campaignRow
	err := s.db.NewSelect().Model(&row).Where("c.id = ?", int64(id)).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return domain.Campaign{}, fmt.Errorf("get campaign %s: %w", id, domain.ErrNotFound)
	}
	if err != nil {
		return domain.Campaign{}, fmt.Errorf("get campaign %s: %w", id, Classify(err))
	}
	return row.campaign(), nil
}

// List returns one page of campaigns, newest (highest id) first, at most q.Limit of
// those below q.Before (all when 0), read by the primary key from there (keyset
// paging). A q.Limit below 1 returns a *domain.ValidationError.
func (s *Campaigns) List(ctx context.Context, q ports.CampaignQuery) ([]domain.Campaign, error) {
	if q.Limit < 1 {
		return nil, domain.Invalid("limit", "must be at least 1")
	}
	var rows []campaignRow
	sel := s.db.NewSelect().Model(&rows)
	if q.Before != 0 {
		sel = sel.Where("c.id < ?", int64(q.Before))
	}
	if err := sel.Order("c.id DESC").Limit(int64(q.Limit)).Scan(ctx); err != nil {
		return nil, fmt.Errorf("list campaigns: %w", Classify(err))
	}
	out := make([]domain.Campaign, 0, len(rows))
	for _, r := range rows {
		out = append(out, r.campaign())
	}
	return out, nil
}

// Update changes campaign id as u says, in one transaction: it locks the campaign's
// row (lockCampaign), reads it, calls u.Change, writes what changed with its audit
// entry (and campaign.updated, WithOutbox), runs u.Commit, keeps u.Receipt's answer
// and commits. A campaign's vouchers share its window: when the change moves it,
// every voucher of the campaign takes the new window, its version one more, in the
// same transaction (and each its voucher.updated, WithOutbox). A campaign u.Change returns unchanged writes nothing but the
// receipt's answer.
//
// It returns the campaign as it now is, domain.ErrNotFound, what u.Change or u.Commit
// returned, ports.ErrClaimLost, domain.ErrNotEnoughUnits (nothing stored) when the
// new cap is below the units the campaign's live orders hold, or a
// *domain.ValidationError another CHECK raised.
func (s *Campaigns) Update(ctx context.Context, id domain.CampaignID, u ports.CampaignUpdate) (domain.Campaign, error) {
	var after domain.Campaign
	err := s.db.RunInTx(ctx, ReadCommitted, func(ctx context.Context, tx bun.Tx) error {
		locked, err := lockCampaign(ctx, tx, id)
		if err != nil {
			return err
		}
		before := locked.campaign()
		if after, err = u.Change(before); err != nil {
			return err
		}
		if campaignChanged(before, after) {
			if after, err = s.changeTx(ctx, tx, u, before, after); err != nil {
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
		return domain.Campaign{}, fmt.Errorf("update campaign %s: %w", id, Classify(err))
	}
	return after, nil
}

// changeTx writes the change of before to after in tx (writeCampaignTx) with its audit
// entry and, WithOutbox, its events: campaign.updated, and voucher.updated for each
// voucher whose window it moved. It returns the campaign as stored.
func (s *Campaigns) changeTx(ctx context.Context, tx bun.Tx, u ports.CampaignUpdate, before, after domain.Campaign) (domain.Campaign, error) {
	after, moved, err := writeCampaignTx(ctx, tx, before, after)
	if err != nil {
		return domain.Campaign{}, err
	}
	if err := appendTx(ctx, tx, domain.CampaignAudit(u.Action, u.By, &before, after)); err != nil {
		return domain.Campaign{}, err
	}
	events := newOutbox(s.events)
	if err := events.campaign(domain.EventCampaignUpdated, after); err != nil {
		return domain.Campaign{}, err
	}
	for _, v := range moved {
		if err := events.voucher(domain.EventVoucherUpdated, v); err != nil {
			return domain.Campaign{}, err
		}
	}
	return after, events.writeTx(ctx, tx)
}

// campaignChanged reports whether after differs from before in what an admin sets or
// in its version.
func campaignChanged(before, after domain.Campaign) bool {
	sameCap := (before.Cap == nil) == (after.Cap == nil) && (before.Cap == nil || *before.Cap == *after.Cap)
	return !sameCap || before.Title != after.Title || before.PerUserLimit != after.PerUserLimit ||
		!before.BeginsAt.Equal(after.BeginsAt) || !before.EndsAt.Equal(after.EndsAt) || before.Version != after.Version
}

// writeCampaignTx writes what an admin sets of after to campaign before.ID (not sold:
// its vouchers' counters move it), and its version, and when the window moves, the
// window of each of its vouchers with their versions one more; it returns the row as
// stored and the vouchers it moved, as stored (none when the window stays). The cap's CHECK refusing a cap below sold is domain.ErrNotEnoughUnits; the
// row is locked, so sold cannot move between the caller's read and this write.
func writeCampaignTx(ctx context.Context, tx bun.Tx, before, after domain.Campaign) (domain.Campaign, []domain.Voucher, error) {
	if after.Cap != nil && *after.Cap < before.Sold {
		return domain.Campaign{}, nil, domain.ErrNotEnoughUnits
	}
	var row campaignRow
	err := tx.NewUpdate().Model(&row).
		Set("title = ?", after.Title).
		Set("begins_at = ?", after.BeginsAt.UTC()).
		Set("ends_at = ?", after.EndsAt.UTC()).
		Set("per_user_limit = ?", after.PerUserLimit).
		Set("cap = ?", after.Cap).
		Set("version = ?", after.Version).
		Where("c.id = ?", int64(before.ID)).
		Returning(campaignColumns).
		Scan(ctx)
	if kind, name := constraintViolation(err); kind == check && name == "campaigns_sold_check" {
		return domain.Campaign{}, nil, domain.ErrNotEnoughUnits
	}
	if err != nil {
		return domain.Campaign{}, nil, campaignCheckError(err)
	}
	if before.BeginsAt.Equal(after.BeginsAt) && before.EndsAt.Equal(after.EndsAt) {
		return row.campaign(), nil, nil
	}
	first, last := variantRange(before.ID)
	var rows []voucherRow
	err = tx.NewUpdate().Model(&rows).
		Set("begins_at = ?", after.BeginsAt.UTC()).
		Set("ends_at = ?", after.EndsAt.UTC()).
		Set("version = version + 1").
		Where("v.id BETWEEN ? AND ?", first, last).
		Returning(voucherColumns).
		Scan(ctx)
	if err != nil {
		return domain.Campaign{}, nil, fmt.Errorf("move the window of campaign %s's vouchers: %w", before.ID, voucherCheckError(err))
	}
	moved := make([]domain.Voucher, len(rows))
	for i, r := range rows {
		moved[i] = r.voucher()
	}
	slices.SortFunc(moved, func(a, b domain.Voucher) int { return cmp.Compare(a.ID, b.ID) })
	return row.campaign(), moved, nil
}

// variantRange returns the first and the last voucher id a variant of campaign c may
// have. The id scheme (and the vouchers' campaign check) puts exactly the campaign's
// vouchers in it, so a campaign's vouchers are a range of the primary key: no index
// on campaign_id is needed to find them.
func variantRange(c domain.CampaignID) (int64, int64) {
	return int64(c.Variant(1)), int64(c.Variant(domain.MaxVariants))
}

// lockCampaign reads campaign id in tx under the lock of an update (FOR NO KEY UPDATE
// on PostgreSQL, which lets the foreign-key checks of new variants and unit rows
// through; on SQLite the transaction holds the database's one write lock), or returns
// domain.ErrNotFound.
func lockCampaign(ctx context.Context, tx bun.Tx, id domain.CampaignID) (campaignRow, error) {
	rows, err := lockCampaigns(ctx, tx, []domain.CampaignID{id})
	if err != nil {
		return campaignRow{}, err
	}
	if len(rows) == 0 {
		return campaignRow{}, domain.ErrNotFound
	}
	return rows[0], nil
}

// LockCampaign reads campaign id in tx under the lock an update takes (lockCampaign),
// or returns domain.ErrNotFound. The postgres stock strategy's grab of a campaign's
// voucher takes it before the voucher's (the order Persist takes them in), so the
// grabs of a campaign take turns and judge its cap and limits from its rows.
func LockCampaign(ctx context.Context, tx bun.Tx, id domain.CampaignID) (domain.Campaign, error) {
	row, err := lockCampaign(ctx, tx, id)
	if err != nil {
		return domain.Campaign{}, err
	}
	return row.campaign(), nil
}

// LockUserCampaignUnits locks, on PostgreSQL, user's row of campaign id's units per
// user (campaign_units, when it exists). The writers that close or store orders take
// those rows before the campaign's (lockCampaignUnits, then lockCampaigns), so a grab
// that stores an order of the user takes it first too, then LockCampaign: no two of
// them wait for each other.
func LockUserCampaignUnits(ctx context.Context, tx bun.Tx, id domain.CampaignID, user domain.UserID) error {
	return lockCampaignUnits(ctx, tx, []orderRow{{VoucherID: int64(id.Variant(1)), UserID: int64(user)}})
}

// CampaignHoldings returns the units and the orders (oldest first) user holds by
// live orders of campaign id's vouchers other than except, read in tx.
func CampaignHoldings(ctx context.Context, tx bun.Tx, id domain.CampaignID, user domain.UserID, except domain.VoucherID) (int, []domain.OrderID, error) {
	first, last := variantRange(id)
	var rows []struct {
		ID       string `bun:"id"`
		Quantity int    `bun:"quantity"`
	}
	err := tx.NewSelect().Table("orders").Column("id", "quantity").
		Where("voucher_id BETWEEN ? AND ?", first, last).
		Where("voucher_id <> ?", int64(except)).
		Where("user_id = ?", int64(user)).
		Where("status IN (?)", bun.List(LiveStatuses)).
		Order("created_at", "id").
		Scan(ctx, &rows)
	if err != nil {
		return 0, nil, fmt.Errorf("read the user's orders of campaign %s: %w", id, err)
	}
	units, orders := 0, make([]domain.OrderID, 0, len(rows))
	for _, r := range rows {
		units += r.Quantity
		orders = append(orders, domain.OrderID(r.ID))
	}
	return units, orders, nil
}

// lockCampaigns locks and reads the campaigns ids that exist, in id order, the order
// every transaction that locks several takes them in. None locks nothing.
func lockCampaigns(ctx context.Context, tx bun.Tx, ids []domain.CampaignID) ([]campaignRow, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	list := make([]int64, 0, len(ids))
	for _, id := range ids {
		list = append(list, int64(id))
	}
	slices.Sort(list)
	list = slices.Compact(list)
	var rows []campaignRow
	err := tx.NewSelect().Model(&rows).Where("c.id IN (?)", bun.List(list)).Order("c.id").
		Apply(rowLock("NO KEY UPDATE")).Scan(ctx)
	if err != nil {
		return nil, fmt.Errorf("lock campaigns: %w", err)
	}
	return rows, nil
}

// campaignsOf returns the campaigns the vouchers vs belong to, each once; none for
// vouchers outside any campaign.
func campaignsOf(vs ...domain.VoucherID) []domain.CampaignID {
	var out []domain.CampaignID
	for _, v := range vs {
		if c, _ := v.Campaign(); c != 0 && !slices.Contains(out, c) {
			out = append(out, c)
		}
	}
	return out
}

// campaignChecks names the field each CHECK constraint of the campaigns table guards,
// in the words of domain.Campaign.Validate.
var campaignChecks = map[string]struct{ field, reason string }{
	"campaigns_per_user_limit_check": {"per_user_limit", "must be at least 1"},
	"campaigns_cap_check":            {"cap", "must be at least 1"},
	"campaigns_window_check":         {"ends_at", "must be after begins_at"},
	"campaigns_admission_check":      {"admission", "must be first_come"},
	"campaigns_challenge_check":      {"challenge", "must be none or pow"},
	"campaigns_variants_check":       {"campaign_id", "the campaign holds 1000 vouchers already"},
}

// campaignCheckError translates a CHECK violation on campaigns into a
// *domain.ValidationError and returns any other error as it is.
func campaignCheckError(err error) error {
	kind, name := constraintViolation(err)
	if kind != check {
		return err
	}
	if c, ok := campaignChecks[name]; ok {
		return domain.Invalid(c.field, c.reason)
	}
	return domain.Invalid("campaign", "violates "+name)
}
