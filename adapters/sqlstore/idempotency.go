package sqlstore

import (
	"context"
	"crypto/rand"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/uptrace/bun"

	"github.com/seckill/seckill/domain"
	"github.com/seckill/seckill/ports"
)

var _ ports.Idempotency = (*Idempotency)(nil)

// IdempotencyTTL is how long a kept answer stands: a day, as the contract promises.
const IdempotencyTTL = 24 * time.Hour

// Idempotency is a ports.Idempotency kept in the idempotency_keys table. A row with
// status 0 is a request in progress: its token names the claim, lease_until says until
// when it holds the key. Vouchers.Create and Orders.Transition keep a Receipt's answer
// in their own transaction (answerTx).
type Idempotency struct {
	db *bun.DB
}

// NewIdempotency returns an Idempotency that stores through db.
func NewIdempotency(db *bun.DB) *Idempotency { return &Idempotency{db: db} }

type idempotencyRow struct {
	bun.BaseModel `bun:"table:idempotency_keys,alias:ik"`

	Fingerprint string `bun:"fingerprint"`
	Status      int    `bun:"status"`
	Body        string `bun:"body"`
}

// claimSQL claims a key in one statement: a new row, or the row of a request in
// progress whose lease has passed (a takeover) or of one older than IdempotencyTTL.
// The row is locked while the condition is judged, so of racing claims one takes it
// and the others find it held; a holder that is keeping its answer in a transaction
// holds the row until it commits, and the claim then finds the answer. RETURNING
// answers no row when the key stays another request's.
const claimSQL = `INSERT INTO idempotency_keys
    (user_id, idem_key, fingerprint, status, body, token, lease_until, created_at)
VALUES (?, ?, ?, 0, '', ?, ?, ?)
ON CONFLICT (user_id, idem_key) DO UPDATE SET fingerprint = excluded.fingerprint, status = 0,
    body = '', token = excluded.token, lease_until = excluded.lease_until, created_at = excluded.created_at
WHERE (idempotency_keys.status = 0 AND idempotency_keys.lease_until <= ?)
    OR idempotency_keys.created_at <= ?
RETURNING token`

// claimAttempts bounds Claim's tries when the row it found taken is gone before it is
// read (released meanwhile): it claims again.
const claimAttempts = 3

// Claim takes the key for the request fingerprint until now + lease, or returns what
// is kept of the request that holds it (see ports.Idempotency).
func (s *Idempotency) Claim(ctx context.Context, user domain.UserID, key, fingerprint string, now time.Time, lease time.Duration) (ports.KeyClaim, ports.IdempotentRequest, error) {
	at := now.UTC().Truncate(time.Microsecond)
	claim := ports.KeyClaim{User: user, Key: key, Token: rand.Text()}
	for range claimAttempts {
		var token string
		err := s.db.NewRaw(claimSQL, int64(user), key, fingerprint, claim.Token, at.Add(lease), at,
			at, at.Add(-IdempotencyTTL)).Scan(ctx, &token)
		if err == nil {
			return claim, ports.IdempotentRequest{}, nil
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return ports.KeyClaim{}, ports.IdempotentRequest{}, fmt.Errorf("claim idempotency key: %w", Classify(err))
		}
		var kept idempotencyRow
		err = s.db.NewSelect().Model(&kept).Column("fingerprint", "status", "body").
			Where("user_id = ? AND idem_key = ?", int64(user), key).Scan(ctx)
		if errors.Is(err, sql.ErrNoRows) {
			continue // released since: claim it again
		}
		if err != nil {
			return ports.KeyClaim{}, ports.IdempotentRequest{}, fmt.Errorf("read idempotency key: %w", Classify(err))
		}
		return ports.KeyClaim{}, ports.IdempotentRequest{Fingerprint: kept.Fingerprint, Status: kept.Status, Body: []byte(kept.Body)}, nil
	}
	return ports.KeyClaim{}, ports.IdempotentRequest{}, fmt.Errorf("claim idempotency key: released and taken %d times over: %w", claimAttempts, domain.ErrUnavailable)
}

// Complete keeps the answer of a claimed request while c holds the key unanswered.
func (s *Idempotency) Complete(ctx context.Context, c ports.KeyClaim, status int, body []byte) (bool, error) {
	kept, err := keepAnswer(ctx, s.db, c, status, body)
	if err != nil {
		return false, fmt.Errorf("keep idempotent answer: %w", Classify(err))
	}
	return kept, nil
}

// Release forgets a claimed request while c holds the key unanswered.
func (s *Idempotency) Release(ctx context.Context, c ports.KeyClaim) error {
	_, err := s.db.NewDelete().Table("idempotency_keys").
		Where("user_id = ? AND idem_key = ? AND token = ? AND status = 0", int64(c.User), c.Key, c.Token).Exec(ctx)
	if err != nil {
		return fmt.Errorf("release idempotency key: %w", Classify(err))
	}
	return nil
}

// Purge forgets the requests kept since before cutoff.
func (s *Idempotency) Purge(ctx context.Context, cutoff time.Time) (int, error) {
	res, err := s.db.NewDelete().Table("idempotency_keys").Where("created_at < ?", cutoff.UTC()).Exec(ctx)
	if err != nil {
		return 0, fmt.Errorf("purge idempotency keys: %w", Classify(err))
	}
	n, _ := res.RowsAffected()
	return int(n), nil
}

// keepAnswer stores status and body as the answer of c's request, through db (the
// database or a transaction), only while c holds the key and no answer is kept; it
// reports whether it did.
func keepAnswer(ctx context.Context, db bun.IDB, c ports.KeyClaim, status int, body []byte) (bool, error) {
	res, err := db.NewUpdate().Table("idempotency_keys").Set("status = ?", status).Set("body = ?", string(body)).
		Where("user_id = ? AND idem_key = ? AND token = ? AND status = 0", int64(c.User), c.Key, c.Token).Exec(ctx)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, err
	}
	return n == 1, nil
}

// answerTx keeps r's answer for written, what tx wrote, in tx: ports.ErrClaimLost
// when r's claim no longer holds the key, so the caller rolls the write back. A nil r
// keeps nothing.
func answerTx[T any](ctx context.Context, tx bun.Tx, r *ports.Receipt[T], written T) error {
	if r == nil {
		return nil
	}
	status, body, err := r.Answer(written)
	if err != nil {
		return fmt.Errorf("render the idempotent answer: %w", err)
	}
	kept, err := keepAnswer(ctx, tx, r.Claim, status, body)
	if err != nil {
		return fmt.Errorf("keep idempotent answer: %w", err)
	}
	if !kept {
		return ports.ErrClaimLost
	}
	return nil
}
