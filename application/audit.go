package application

import (
	"context"
	"fmt"

	"github.com/seckill/seckill/domain"
	"github.com/seckill/seckill/ports"
)

// ListAudit reads a page of the audit log: who changed what, newest first.
type ListAudit struct {
	log ports.AuditLog
}

// NewListAudit returns the use case.
func NewListAudit(log ports.AuditLog) *ListAudit {
	return &ListAudit{log: log}
}

// ListAuditQuery asks for a page of the audit log.
type ListAuditQuery struct {
	// Voucher, when not 0, keeps only the entries of that voucher.
	Voucher domain.VoucherID
	// Limit is the page size, 1 to MaxPageLimit; 0 means DefaultPageLimit.
	Limit int
	// Cursor is NextCursor of the previous page; empty for the first page.
	Cursor string
}

// AuditPage is a page of the audit log, newest first.
type AuditPage struct {
	Entries []domain.AuditEntry
	// NextCursor asks for the next page; empty on the last page.
	NextCursor string
}

// Handle returns a page of entries, newest first. A limit out of range, or a cursor
// that is not NextCursor of a page of this list with the same voucher filter, returns
// a *domain.ValidationError.
func (uc *ListAudit) Handle(ctx context.Context, q ListAuditQuery) (AuditPage, error) {
	limit, err := pageLimit(q.Limit)
	if err != nil {
		return AuditPage{}, err
	}
	query := ports.AuditQuery{Voucher: q.Voucher, Limit: limit + 1}
	if q.Cursor != "" {
		if query.Before, err = decodeAuditCursor(q.Cursor, q.Voucher); err != nil {
			return AuditPage{}, err
		}
	}
	// One more than the page tells whether another page follows.
	es, err := uc.log.List(ctx, query)
	if err != nil {
		return AuditPage{}, fmt.Errorf("list the audit log: %w", err)
	}
	page := AuditPage{Entries: es}
	if len(es) > limit {
		page.Entries = es[:limit]
		page.NextCursor = encodeAuditCursor(q.Voucher, es[limit-1].ID)
	}
	return page, nil
}
