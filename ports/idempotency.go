package ports

import (
	"context"
	"fmt"
	"time"

	"github.com/seckill/seckill/domain"
)

// IdempotentRequest is what is kept of a write request sent with an idempotency key.
type IdempotentRequest struct {
	// Fingerprint identifies the request (method, route, parameters, body): the same
	// key with another fingerprint is a different request.
	Fingerprint string
	// Status is the first answer's HTTP status; 0 while the first request is still in
	// progress.
	Status int
	// Body is the first answer's body.
	Body []byte
}

// KeyClaim is an idempotency key held by the request in progress under it: whose key,
// and the token that proves this request still holds it. A retry takes the key over
// once the claim's lease has passed (its holder is presumed dead), and from then on
// nothing the old holder does under its token is kept.
type KeyClaim struct {
	User  domain.UserID
	Key   string
	Token string
}

// Held reports whether c is a claim (Idempotency.Claim returns the zero KeyClaim when
// the key is another request's).
func (c KeyClaim) Held() bool { return c.Token != "" }

// ErrClaimLost says that a request's idempotency key was taken over by a retry (its
// lease passed) or already answered, so its answer cannot be kept: the write it would
// have answered for is rolled back. It wraps domain.ErrUnavailable: nothing was done
// by this request, and a retry gets the answer of whichever request holds the key.
var ErrClaimLost = fmt.Errorf("idempotency key taken over by another request: %w", domain.ErrUnavailable)

// Receipt asks a repository to keep a claimed key's answer in the same transaction as
// the write it answers for, so a crash can never leave the work done and its answer
// unkept. T is what the write stores (a voucher, an order).
type Receipt[T any] struct {
	// Claim is the key the answer is kept under, only while Claim still holds it.
	Claim KeyClaim
	// Answer renders the request's answer (an HTTP status and body) from what the
	// write stored, inside its transaction; an error rolls the write back.
	Answer func(T) (status int, body []byte, err error)
}

// Idempotency keeps the answers of write requests by caller and idempotency key, for
// at least a day, so a repeated request is answered as the first one was without
// doing the work again. A request in progress holds its key under a lease; a retry
// that finds the lease passed takes the key over, and every later write of the old
// holder's is refused (it is conditional on the claim's token). Every method returns
// an error wrapping domain.ErrUnavailable when the store cannot be reached; a claim
// whose Complete or Release failed so lapses with its lease.
type Idempotency interface {
	// Claim starts the request fingerprint of user under key at now, holding the key
	// until now + lease. It returns the claim (Held) when the key is free: never used,
	// released, its last request older than a day, or its holder's lease passed with
	// no answer kept (a takeover, whatever that holder's fingerprint). Otherwise it
	// returns the zero KeyClaim and what is kept of the earlier request (Status 0:
	// still in progress).
	Claim(ctx context.Context, user domain.UserID, key, fingerprint string, now time.Time, lease time.Duration) (KeyClaim, IdempotentRequest, error)
	// Complete keeps the answer of a claimed request, only while c holds the key and
	// no answer is kept yet (a Receipt's may be); it reports whether it kept it.
	Complete(ctx context.Context, c KeyClaim, status int, body []byte) (bool, error)
	// Release forgets a claimed request that ended with no answer worth keeping (the
	// work was not done: a retry must do it), so the key may be used again — only
	// while c holds it and no answer is kept.
	Release(ctx context.Context, c KeyClaim) error
	// Purge forgets what was kept before cutoff and returns how many requests.
	Purge(ctx context.Context, cutoff time.Time) (int, error)
}
