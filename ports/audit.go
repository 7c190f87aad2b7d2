package ports

import (
	"context"

	"github.com/seckill/seckill/domain"
)

// AuditLog is the log of admin changes: append-only, newest first when read.
type AuditLog interface {
	// Append writes e on its own, for a change no database transaction holds (the
	// repairs reconciliation makes in Redis); it sets nothing in e.
	Append(ctx context.Context, e domain.AuditEntry) error
	// List returns one page of entries, newest (highest id) first: at most q.Limit of
	// those q selects.
	List(ctx context.Context, q AuditQuery) ([]domain.AuditEntry, error)
}

// AuditQuery selects a page of the audit log.
type AuditQuery struct {
	// Voucher, when not 0, keeps only the entries of that voucher.
	Voucher domain.VoucherID
	// Before, when not 0, keeps only the entries whose id is below it: the last id of
	// the previous page (the keyset cursor).
	Before int64
	// Limit is the most entries returned; it is at least 1.
	Limit int
}
