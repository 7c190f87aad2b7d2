package ports

import (
	"context"

	"github.com/seckill/seckill/domain"
)

// DenyList keeps the users an admin refused: the truth the grab path's local set of
// denied users is loaded from. Each write appends its audit entry and keeps its
// receipt's answer in its own transaction. Every method returns an error wrapping
// domain.ErrUnavailable when the store cannot be reached.
type DenyList interface {
	// Deny lists d.User with d.Reason, stamped now, or changes the reason of a user
	// already listed (a listed user with the same reason is left as it is: no audit
	// entry). It returns the denial as stored, or ErrClaimLost (nothing stored).
	Deny(ctx context.Context, d domain.Denial, by domain.Author, r *Receipt[domain.Denial]) (domain.Denial, error)
	// Allow takes user off the list; a user not listed is left as it is (no audit
	// entry). It returns ErrClaimLost (nothing changed) when r's claim is lost.
	Allow(ctx context.Context, user domain.UserID, by domain.Author, r *Receipt[domain.UserID]) error
	// List returns up to limit denials of users above after, by user id. A limit below
	// 1 returns a *domain.ValidationError.
	List(ctx context.Context, after domain.UserID, limit int) ([]domain.Denial, error)
	// Users returns every listed user.
	Users(ctx context.Context) ([]domain.UserID, error)
}

// DenyChanges tells every instance that the deny list changed, so each reloads its
// local set at once. Like Changes, it is a hint, never a ledger: an announcement made
// while an instance is reconnecting is lost, and each instance reloads on a timer too.
type DenyChanges interface {
	// AnnounceDenials announces a change of the deny list, after it committed. It
	// returns an error wrapping domain.ErrUnavailable when it could not; the change
	// stands.
	AnnounceDenials(ctx context.Context) error
}
