package ports

import (
	"context"
	"time"

	"github.com/seckill/seckill/domain"
)

// Change names what changed: a voucher's sale (Order empty: its terms, its pause, its
// units) or one of its orders (its status). It carries no state: whoever hears of it
// reads the truth again.
type Change struct {
	Voucher domain.VoucherID
	Order   domain.OrderID
}

// Changes tells every instance that an order or a sale changed, so each can wake the
// event streams it holds. It is lossy by design (a hint, never a ledger): a change
// announced while a subscriber is reconnecting is lost, and a stream must read the
// truth again on a timer of its own too.
type Changes interface {
	// Publish announces changes, after the writes they name have committed. It returns
	// an error wrapping domain.ErrUnavailable when the announcement could not be made;
	// the change itself stands.
	Publish(ctx context.Context, changes ...Change) error
	// Subscribe calls fn with each change of voucher v announced from the moment it
	// returns until stop is called, one call at a time; fn must not block. It returns
	// an error wrapping domain.ErrUnavailable when the subscription could not be made.
	// After it returns the subscription rides out reconnections by itself (losing
	// what is announced meanwhile).
	Subscribe(ctx context.Context, v domain.VoucherID, fn func(Change)) (stop func(), err error)
}

// StreamTickets keeps the single-use tickets with which a browser opens an event
// stream (EventSource sends no headers, and a bearer token never goes in a URL). A
// ticket is shared by every instance.
type StreamTickets interface {
	// Issue keeps ticket for user for ttl. It returns an error wrapping
	// domain.ErrUnavailable when the store cannot be reached.
	Issue(ctx context.Context, ticket string, user domain.UserID, ttl time.Duration) error
	// Redeem returns the user a ticket was issued to and forgets it, atomically: a
	// ticket is redeemed once, on whichever instance. It returns domain.ErrNotFound
	// for a ticket unknown, used already or expired, and an error wrapping
	// domain.ErrUnavailable when the store cannot be reached.
	Redeem(ctx context.Context, ticket string) (domain.UserID, error)
}
