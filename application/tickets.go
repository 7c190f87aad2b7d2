package application

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"time"

	"github.com/seckill/seckill/domain"
	"github.com/seckill/seckill/ports"
)

// StreamTicketTTL is how long a stream ticket may wait to be used.
const StreamTicketTTL = 60 * time.Second

// streamTicketBytes is a ticket's randomness: 32 bytes, 43 characters of base64url
// (read back by domain.DecodeToken).
const streamTicketBytes = 32

// StreamTicket is a single-use ticket with which a browser opens an event stream
// (EventSource sends no headers, and a bearer token never goes in a URL).
type StreamTicket struct {
	Ticket    string
	ExpiresAt time.Time
}

// IssueStreamTicket hands a user a fresh stream ticket, kept where every instance
// finds it (ports.StreamTickets).
type IssueStreamTicket struct {
	tickets ports.StreamTickets
	clock   ports.Clock
}

// NewIssueStreamTicket returns the use case; clock (the sale's) dates the tickets'
// expiry as clients are told it.
func NewIssueStreamTicket(tickets ports.StreamTickets, clock ports.Clock) *IssueStreamTicket {
	return &IssueStreamTicket{tickets: tickets, clock: clock}
}

// IssueStreamTicketCmd asks for a ticket of UserID's.
type IssueStreamTicketCmd struct {
	UserID domain.UserID
}

// Handle returns a fresh ticket of the user's, good once within StreamTicketTTL, or
// an error wrapping domain.ErrUnavailable when it could not be kept.
func (uc *IssueStreamTicket) Handle(ctx context.Context, cmd IssueStreamTicketCmd) (StreamTicket, error) {
	b := make([]byte, streamTicketBytes)
	_, _ = rand.Read(b) // crypto/rand never fails on the platforms Go supports
	ticket := base64.RawURLEncoding.EncodeToString(b)
	if err := uc.tickets.Issue(ctx, ticket, cmd.UserID, StreamTicketTTL); err != nil {
		return StreamTicket{}, err
	}
	return StreamTicket{Ticket: ticket, ExpiresAt: uc.clock.Now().Add(StreamTicketTTL)}, nil
}

// RedeemStreamTicket spends a stream ticket: it opens one stream, on whichever
// instance, as the user it was issued to.
type RedeemStreamTicket struct {
	tickets ports.StreamTickets
}

// NewRedeemStreamTicket returns the use case.
func NewRedeemStreamTicket(tickets ports.StreamTickets) *RedeemStreamTicket {
	return &RedeemStreamTicket{tickets: tickets}
}

// RedeemStreamTicketCmd is a ticket as the client sent it.
type RedeemStreamTicketCmd struct {
	Ticket string
}

// Handle returns the user the ticket was issued to and forgets the ticket. It returns
// domain.ErrNotFound for a ticket unknown, used already, expired, or not spelt as
// IssueStreamTicket spells one (refused without a look in the store), and an error
// wrapping domain.ErrUnavailable when the store cannot be reached.
func (uc *RedeemStreamTicket) Handle(ctx context.Context, cmd RedeemStreamTicketCmd) (domain.UserID, error) {
	if b, ok := domain.DecodeToken(cmd.Ticket); !ok || len(b) != streamTicketBytes {
		return 0, domain.ErrNotFound
	}
	return uc.tickets.Redeem(ctx, cmd.Ticket)
}
