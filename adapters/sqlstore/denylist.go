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

var _ ports.DenyList = (*DenyList)(nil)

// DenyList is a ports.DenyList kept in the denylist table; each change appends its
// audit entry (denylist.add, denylist.remove) in its own transaction.
type DenyList struct {
	db *bun.DB
}

// NewDenyList returns a DenyList on db.
func NewDenyList(db *bun.DB) *DenyList {
	return &DenyList{db: db}
}

// denialRow is a row of the denylist table.
type denialRow struct {
	bun.BaseModel `bun:"table:denylist,alias:d"`

	UserID int64     `bun:"user_id,pk"`
	Reason string    `bun:"reason"`
	At     time.Time `bun:"at"`
}

func (r denialRow) denial() domain.Denial {
	return domain.Denial{User: domain.UserID(r.UserID), Reason: r.Reason, At: r.At.UTC()}
}

// findDenial reads user's row in db, or nil when it is not listed.
func findDenial(ctx context.Context, db bun.IDB, user domain.UserID) (*domain.Denial, error) {
	var row denialRow
	err := db.NewSelect().Model(&row).Where("d.user_id = ?", int64(user)).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil //nolint:nilnil // not listed is no error
	}
	if err != nil {
		return nil, err
	}
	d := row.denial()
	return &d, nil
}

// Deny lists d.User with d.Reason, stamped now to the millisecond, or changes the
// reason of a listed user; a listed user with the same reason is left as it is. The
// change's audit entry and r's answer are written in the same transaction.
func (l *DenyList) Deny(ctx context.Context, d domain.Denial, by domain.Author, r *ports.Receipt[domain.Denial]) (domain.Denial, error) {
	var stored domain.Denial
	err := l.db.RunInTx(ctx, ReadCommitted, func(ctx context.Context, tx bun.Tx) error {
		before, err := findDenial(ctx, tx, d.User)
		if err != nil {
			return err
		}
		if before != nil && before.Reason == d.Reason {
			stored = *before
			return answerTx(ctx, tx, r, stored)
		}
		row := denialRow{UserID: int64(d.User), Reason: d.Reason, At: now().Truncate(time.Millisecond)}
		// Upsert: a concurrent Deny of the same user is no conflict.
		if _, err := tx.NewInsert().Model(&row).On("CONFLICT (user_id) DO UPDATE").
			Set("reason = EXCLUDED.reason").Set("at = EXCLUDED.at").Exec(ctx); err != nil {
			return err
		}
		stored = row.denial()
		if err := appendTx(ctx, tx, domain.DenialAudit(domain.AuditDenylistAdd, by, before, &stored)); err != nil {
			return err
		}
		return answerTx(ctx, tx, r, stored)
	})
	if err != nil {
		return domain.Denial{}, fmt.Errorf("deny user %s: %w", d.User, Classify(err))
	}
	return stored, nil
}

// Allow deletes user's row, with its audit entry and r's answer in the same
// transaction; a user not listed writes nothing but the answer.
func (l *DenyList) Allow(ctx context.Context, user domain.UserID, by domain.Author, r *ports.Receipt[domain.UserID]) error {
	err := l.db.RunInTx(ctx, ReadCommitted, func(ctx context.Context, tx bun.Tx) error {
		var rows []denialRow
		if err := tx.NewDelete().Model(&rows).Where("user_id = ?", int64(user)).Returning("*").Scan(ctx); err != nil &&
			!errors.Is(err, sql.ErrNoRows) {
			return err
		}
		if len(rows) == 1 {
			before := rows[0].denial()
			if err := appendTx(ctx, tx, domain.DenialAudit(domain.AuditDenylistRemove, by, &before, nil)); err != nil {
				return err
			}
		}
		return answerTx(ctx, tx, r, user)
	})
	if err != nil {
		return fmt.Errorf("allow user %s: %w", user, Classify(err))
	}
	return nil
}

// List returns up to limit denials of users above after, by user id (the primary
// key: keyset paging).
func (l *DenyList) List(ctx context.Context, after domain.UserID, limit int) ([]domain.Denial, error) {
	if limit < 1 {
		return nil, domain.Invalid("limit", "must be at least 1")
	}
	var rows []denialRow
	if err := l.db.NewSelect().Model(&rows).Where("d.user_id > ?", int64(after)).
		Order("d.user_id").Limit(int64(limit)).Scan(ctx); err != nil {
		return nil, fmt.Errorf("list the deny list: %w", Classify(err))
	}
	out := make([]domain.Denial, len(rows))
	for i, r := range rows {
		out[i] = r.denial()
	}
	return out, nil
}

// Users returns every listed user.
func (l *DenyList) Users(ctx context.Context) ([]domain.UserID, error) {
	var ids []int64
	if err := l.db.NewSelect().Table("denylist").Column("user_id").Scan(ctx, &ids); err != nil {
		return nil, fmt.Errorf("read the deny list: %w", Classify(err))
	}
	out := make([]domain.UserID, len(ids))
	for i, id := range ids {
		out[i] = domain.UserID(id)
	}
	return out, nil
}
