package ports

import (
	"context"
	"time"

	"github.com/seckill/seckill/domain"
)

// Entries keeps a draw voucher's entries and carries its draw out, beside its sale
// state (a draw's winners are reservations like any grab's, its backfill the
// voucher's waitlist). Every method returns an error wrapping domain.ErrUnavailable
// when the store cannot be reached, and domain.ErrDrawUnsupported when the stock
// strategy keeps no entries.
type Entries interface {
	// Enter enters user in v's draw, judged by the sale's clock: from
	// v.EntriesOpenAt until v.BeginsAt (domain.ErrNotStarted before, then
	// domain.ErrEntriesClosed). Entering again changes nothing. It returns how many
	// users have entered.
	Enter(ctx context.Context, v domain.Voucher, user domain.UserID) (int, error)
	// Count returns how many users have entered v's draw.
	Count(ctx context.Context, id domain.VoucherID) (int, error)
	// Close closes v's entries for good, once its sale has begun by the sale's clock
	// (domain.ErrNotStarted before), and returns its entrants, in no order.
	Close(ctx context.Context, v domain.Voucher) ([]domain.UserID, error)
	// Progress returns how many steps of v's draw (domain.DrawSteps) were taken, and
	// whether all were. A voucher without sale state answers domain.ErrNotFound.
	Progress(ctx context.Context, id domain.VoucherID) (taken int, drawn bool, err error)
	// Take takes steps, the draw's steps from step from on (of total), each with the
	// id of the order it becomes (a winner's) or a unit handed to it becomes (the
	// backfill's), in one atomic step that also counts them taken; steps already taken
	// (from is behind) change nothing. It returns the steps taken after it, and how
	// many orders it reserved. A voucher without sale state answers
	// domain.ErrNotFound.
	Take(ctx context.Context, id domain.VoucherID, from, total int, steps []domain.DrawStep, orders []domain.OrderID) (taken, reserved int, err error)
}

// Draws keeps each draw's result, recorded before any of its orders exists, so that it
// survives the loss of the entries and of Redis.
type Draws interface {
	// Record stores d unless a draw of its voucher is stored already, and returns
	// the one stored (d, or the earlier one, whose permutation the draw carries out).
	Record(ctx context.Context, d domain.Draw) (domain.Draw, error)
	// Get returns the draw of voucher id, or domain.ErrNotFound before it ran.
	Get(ctx context.Context, id domain.VoucherID) (domain.Draw, error)
	// Pending returns the draw vouchers whose sale has begun at now and has not
	// ended: those to be drawn, or drawn and maybe not carried out to the end.
	Pending(ctx context.Context, now time.Time) ([]domain.Voucher, error)
}
