package redisstore

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/domain"
	"github.com/seckill/seckill/ports"
)

// Tickets keeps stream tickets in Redis, so a ticket issued by one instance opens a
// stream on any: one string per ticket (Keys.Ticket), named by the ticket's digest,
// holding the user id and expiring with the ticket.
type Tickets struct {
	client redis.UniversalClient
	keys   Keys
}

var _ ports.StreamTickets = (*Tickets)(nil)

// NewTickets returns the ticket store on client.
func NewTickets(client redis.UniversalClient, opts Options) *Tickets {
	return &Tickets{client: client, keys: Keys{Prefix: opts.Prefix}}
}

// Issue keeps ticket for user for ttl (SET with PX). It returns an error wrapping
// domain.ErrUnavailable when Redis did not take it.
func (t *Tickets) Issue(ctx context.Context, ticket string, user domain.UserID, ttl time.Duration) error {
	if err := t.client.Set(ctx, t.key(ticket), user.String(), ttl).Err(); err != nil {
		return unavailable("issue stream ticket", err)
	}
	return nil
}

// Redeem returns ticket's user and deletes it in one command (GETDEL), so of two
// instances redeeming the same ticket at once only one gets it. It returns
// domain.ErrNotFound for a ticket unknown, redeemed or expired, and an error wrapping
// domain.ErrUnavailable when Redis did not answer.
func (t *Tickets) Redeem(ctx context.Context, ticket string) (domain.UserID, error) {
	s, err := t.client.GetDel(ctx, t.key(ticket)).Result()
	if errors.Is(err, redis.Nil) {
		return 0, domain.ErrNotFound
	}
	if err != nil {
		return 0, unavailable("redeem stream ticket", err)
	}
	user, err := domain.ParseUserID(s)
	if err != nil {
		return 0, fmt.Errorf("stream ticket holds %q: %w", s, err)
	}
	return user, nil
}

func (t *Tickets) key(ticket string) string {
	sum := sha256.Sum256([]byte(ticket))
	return t.keys.Ticket(hex.EncodeToString(sum[:]))
}
