package memory

import (
	"context"
	"sync"
	"time"

	"github.com/seckill/seckill/domain"
	"github.com/seckill/seckill/ports"
)

// StreamTickets is an in-memory ports.StreamTickets: each ticket kept with its user
// until it is redeemed; a ticket never expires (tests move no store's clock).
type StreamTickets struct {
	mu      sync.Mutex
	tickets map[string]domain.UserID
	// Redeems counts the calls of Redeem.
	Redeems int
}

var _ ports.StreamTickets = (*StreamTickets)(nil)

// NewStreamTickets returns an empty store.
func NewStreamTickets() *StreamTickets {
	return &StreamTickets{tickets: make(map[string]domain.UserID)}
}

// Issue keeps ticket for user.
func (s *StreamTickets) Issue(_ context.Context, ticket string, user domain.UserID, _ time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tickets[ticket] = user
	return nil
}

// Redeem returns ticket's user and forgets it, or domain.ErrNotFound.
func (s *StreamTickets) Redeem(_ context.Context, ticket string) (domain.UserID, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.Redeems++
	user, ok := s.tickets[ticket]
	if !ok {
		return 0, domain.ErrNotFound
	}
	delete(s.tickets, ticket)
	return user, nil
}
