package memory

import (
	"context"
	"crypto/rand"
	"sync"
	"time"

	"github.com/seckill/seckill/domain"
	"github.com/seckill/seckill/ports"
)

// Idempotency is an in-memory ports.Idempotency. Vouchers.Create and Orders.Transition
// keep a Receipt's answer in it together with their write, as the SQL adapter does in
// one transaction: the Vouchers made by NewVouchers and the Orders over them share one.
type Idempotency struct {
	mu   sync.Mutex
	keys map[keyOf]*keptRequest
}

var _ ports.Idempotency = (*Idempotency)(nil)

// idempotencyTTL is how long an answer stands, as sqlstore.IdempotencyTTL.
const idempotencyTTL = 24 * time.Hour

type keyOf struct {
	user domain.UserID
	key  string
}

type keptRequest struct {
	ports.IdempotentRequest
	token      string
	leaseUntil time.Time
	createdAt  time.Time
}

// NewIdempotency returns an empty store of idempotency keys.
func NewIdempotency() *Idempotency {
	return &Idempotency{keys: map[keyOf]*keptRequest{}}
}

// Claim takes a free key (new, released, a day old, or its holder's lease passed
// unanswered) until now + lease, or returns what is kept of the request holding it.
func (s *Idempotency) Claim(_ context.Context, user domain.UserID, key, fingerprint string, now time.Time, lease time.Duration) (ports.KeyClaim, ports.IdempotentRequest, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := keyOf{user, key}
	if kept, ok := s.keys[k]; ok {
		lapsed := kept.Status == 0 && !kept.leaseUntil.After(now)
		if !lapsed && now.Sub(kept.createdAt) < idempotencyTTL {
			return ports.KeyClaim{}, kept.IdempotentRequest, nil
		}
	}
	c := ports.KeyClaim{User: user, Key: key, Token: rand.Text()}
	s.keys[k] = &keptRequest{IdempotentRequest: ports.IdempotentRequest{Fingerprint: fingerprint},
		token: c.Token, leaseUntil: now.Add(lease), createdAt: now}
	return c, ports.IdempotentRequest{}, nil
}

// Complete keeps the answer while c holds the key unanswered.
func (s *Idempotency) Complete(_ context.Context, c ports.KeyClaim, status int, body []byte) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	kept := s.held(c)
	if kept == nil {
		return false, nil
	}
	kept.Status, kept.Body = status, append([]byte(nil), body...)
	return true, nil
}

// Release forgets the request while c holds the key unanswered.
func (s *Idempotency) Release(_ context.Context, c ports.KeyClaim) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.held(c) != nil {
		delete(s.keys, keyOf{c.User, c.Key})
	}
	return nil
}

// Purge forgets the requests claimed before cutoff.
func (s *Idempotency) Purge(_ context.Context, cutoff time.Time) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for k, kept := range s.keys {
		if kept.createdAt.Before(cutoff) {
			delete(s.keys, k)
			n++
		}
	}
	return n, nil
}

// held returns the request c holds unanswered, or nil. s.mu is held.
func (s *Idempotency) held(c ports.KeyClaim) *keptRequest {
	kept, ok := s.keys[keyOf{c.User, c.Key}]
	if !ok || kept.token != c.Token || kept.Status != 0 {
		return nil
	}
	return kept
}

// answer keeps r's answer for written together with a write: it renders the answer
// and calls write, which stores the write, only while r's claim holds its key
// unanswered (ports.ErrClaimLost, nothing written, otherwise). A nil r just writes.
func answer[T any](s *Idempotency, r *ports.Receipt[T], written T, write func()) error {
	if r == nil {
		write()
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	kept := s.held(r.Claim)
	if kept == nil {
		return ports.ErrClaimLost
	}
	status, body, err := r.Answer(written)
	if err != nil {
		return err
	}
	write()
	kept.Status, kept.Body = status, body
	return nil
}
