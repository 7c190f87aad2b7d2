package sqlstore

import (
	"context"
	"fmt"
	"time"

	"github.com/uptrace/bun"

	"github.com/seckill/seckill/domain"
	"github.com/seckill/seckill/ports"
)

var _ ports.Idempotency = (*Idempotency)(nil)

// IdempotencyTTL is how long a kept answer stands: a day, as the contract promises.
const IdempotencyTTL = 24 * time.Hour

// Idempotency is a ports.Idempotency kept in the idempotency_keys table.
type Idempotency struct {
	db *bun.DB
}

// NewIdempotency returns an Idempotency that stores through db.
func NewIdempotency(db *bun.DB) *Idempotency { return &Idempotency{db: db} }

type idempotencyRow struct {
	bun.BaseModel `bun:"table:idempotency_keys,alias:ik"`

	UserID      int64     `bun:"user_id,pk"`
	Key         string    `bun:"idem_key,pk"`
	Fingerprint string    `bun:"fingerprint"`
	Status      int       `bun:"status"`
	Body        string    `bun:"body"`
	CreatedAt   time.Time `bun:"created_at"`
}

// Claim inserts the request as in progress unless the key is taken; a taken key whose
// request is older than IdempotencyTTL is taken over, atomically (only if it is still
// that old request). It returns what is kept of the earlier request otherwise.
func (s *Idempotency) Claim(ctx context.Context, user domain.UserID, key, fingerprint string, now time.Time) (ports.IdempotentRequest, bool, error) {
	row := idempotencyRow{UserID: int64(user), Key: key, Fingerprint: fingerprint, CreatedAt: now.UTC().Truncate(time.Microsecond)}
	res, err := s.db.NewInsert().Model(&row).On("CONFLICT DO NOTHING").Exec(ctx)
	if err != nil {
		return ports.IdempotentRequest{}, false, fmt.Errorf("claim idempotency key: %w", classify(err))
	}
	if n, _ := res.RowsAffected(); n == 1 {
		return ports.IdempotentRequest{}, true, nil
	}
	var kept idempotencyRow
	err = s.db.NewSelect().Model(&kept).Where("user_id = ? AND idem_key = ?", int64(user), key).Scan(ctx)
	if err != nil {
		return ports.IdempotentRequest{}, false, fmt.Errorf("read idempotency key: %w", classify(err))
	}
	if now.Sub(kept.CreatedAt) < IdempotencyTTL {
		return ports.IdempotentRequest{Fingerprint: kept.Fingerprint, Status: kept.Status, Body: []byte(kept.Body)}, false, nil
	}
	res, err = s.db.NewUpdate().Model(&row).Column("fingerprint", "status", "body", "created_at").
		Where("user_id = ? AND idem_key = ? AND created_at < ?", int64(user), key, row.CreatedAt.Add(-IdempotencyTTL)).Exec(ctx)
	if err != nil {
		return ports.IdempotentRequest{}, false, fmt.Errorf("take over idempotency key: %w", classify(err))
	}
	if n, _ := res.RowsAffected(); n == 1 {
		return ports.IdempotentRequest{}, true, nil
	}
	// Another request took it over first: it is in progress.
	return ports.IdempotentRequest{Fingerprint: fingerprint}, false, nil
}

// Complete keeps the answer of a claimed request.
func (s *Idempotency) Complete(ctx context.Context, user domain.UserID, key string, status int, body []byte) error {
	_, err := s.db.NewUpdate().Table("idempotency_keys").Set("status = ?", status).Set("body = ?", string(body)).
		Where("user_id = ? AND idem_key = ?", int64(user), key).Exec(ctx)
	if err != nil {
		return fmt.Errorf("keep idempotent answer: %w", classify(err))
	}
	return nil
}

// Release forgets a claimed request still in progress.
func (s *Idempotency) Release(ctx context.Context, user domain.UserID, key string) error {
	_, err := s.db.NewDelete().Table("idempotency_keys").
		Where("user_id = ? AND idem_key = ? AND status = 0", int64(user), key).Exec(ctx)
	if err != nil {
		return fmt.Errorf("release idempotency key: %w", classify(err))
	}
	return nil
}

// Purge forgets the requests kept since before cutoff.
func (s *Idempotency) Purge(ctx context.Context, cutoff time.Time) (int, error) {
	res, err := s.db.NewDelete().Table("idempotency_keys").Where("created_at < ?", cutoff.UTC()).Exec(ctx)
	if err != nil {
		return 0, fmt.Errorf("purge idempotency keys: %w", classify(err))
	}
	n, _ := res.RowsAffected()
	return int(n), nil
}
