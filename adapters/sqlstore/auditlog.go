package sqlstore

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/uptrace/bun"

	"github.com/seckill/seckill/domain"
	"github.com/seckill/seckill/ports"
)

var _ ports.AuditLog = (*AuditLog)(nil)

// AuditLog is a ports.AuditLog kept in the audit_log table. The repositories write
// the entries of their changes in their own transactions (appendTx); Append is for a
// change no transaction holds.
type AuditLog struct {
	db *bun.DB
}

// NewAuditLog returns an AuditLog that reads and appends through db.
func NewAuditLog(db *bun.DB) *AuditLog {
	return &AuditLog{db: db}
}

// auditRow is a row of the audit_log table. before and after are JSON text, NULL
// where there is none; voucher_id NULL for a change of no voucher, campaign_id for a
// change of no campaign.
type auditRow struct {
	bun.BaseModel `bun:"table:audit_log,alias:a"`

	ID         int64     `bun:"id,pk,autoincrement"`
	At         time.Time `bun:"at"`
	Actor      string    `bun:"actor"`
	Action     string    `bun:"action"`
	VoucherID  *int64    `bun:"voucher_id"`
	CampaignID *int64    `bun:"campaign_id"`
	RequestID  string    `bun:"request_id"`
	Before     *string   `bun:"before"`
	After      *string   `bun:"after"`
}

func (r auditRow) entry() domain.AuditEntry {
	e := domain.AuditEntry{ID: r.ID, At: r.At.UTC(), Actor: r.Actor, Action: domain.AuditAction(r.Action),
		RequestID: r.RequestID}
	if r.VoucherID != nil {
		e.VoucherID = domain.VoucherID(*r.VoucherID)
	}
	if r.CampaignID != nil {
		e.CampaignID = domain.CampaignID(*r.CampaignID)
	}
	if r.Before != nil {
		e.Before = json.RawMessage(*r.Before)
	}
	if r.After != nil {
		e.After = json.RawMessage(*r.After)
	}
	return e
}

// appendTx appends e to the audit log in tx, stamped now (to the millisecond, as the
// API shows it).
func appendTx(ctx context.Context, db bun.IDB, e domain.AuditEntry) error {
	row := auditRow{At: now().Truncate(time.Millisecond), Actor: e.Actor, Action: string(e.Action), RequestID: e.RequestID}
	if e.VoucherID != 0 {
		id := int64(e.VoucherID)
		row.VoucherID = &id
	}
	if e.CampaignID != 0 {
		id := int64(e.CampaignID)
		row.CampaignID = &id
	}
	if e.Before != nil {
		b := string(e.Before)
		row.Before = &b
	}
	if e.After != nil {
		a := string(e.After)
		row.After = &a
	}
	// id is the database's to set.
	if _, err := db.NewInsert().Model(&row).ExcludeColumn("id").Exec(ctx); err != nil {
		return fmt.Errorf("append to the audit log: %w", err)
	}
	return nil
}

// Append writes e on its own transaction.
func (l *AuditLog) Append(ctx context.Context, e domain.AuditEntry) error {
	if err := appendTx(ctx, l.db, e); err != nil {
		return Classify(err)
	}
	return nil
}

// List returns one page of entries, newest first, read by the primary key (or the
// voucher's index) from q.Before on: keyset paging. A q.Limit below 1 returns a
// *domain.ValidationError.
func (l *AuditLog) List(ctx context.Context, q ports.AuditQuery) ([]domain.AuditEntry, error) {
	if q.Limit < 1 {
		return nil, domain.Invalid("limit", "must be at least 1")
	}
	var rows []auditRow
	sel := l.db.NewSelect().Model(&rows)
	if q.Voucher != 0 {
		sel = sel.Where("a.voucher_id = ?", int64(q.Voucher))
	}
	if q.Before != 0 {
		sel = sel.Where("a.id < ?", q.Before)
	}
	if err := sel.Order("a.id DESC").Limit(int64(q.Limit)).Scan(ctx); err != nil {
		return nil, fmt.Errorf("list the audit log: %w", Classify(err))
	}
	out := make([]domain.AuditEntry, len(rows))
	for i, r := range rows {
		out[i] = r.entry()
	}
	return out, nil
}
