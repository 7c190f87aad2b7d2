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
	// EnterDrop enters user in the draw of a campaign, room (domain.Campaign.Room),
	// choosing voucher choice, as Enter judges an entry; entering again changes the
	// choice. It returns how many users have entered.
	EnterDrop(ctx context.Context, room domain.Voucher, user domain.UserID, choice domain.VoucherID) (int, error)
	// Count returns how many users have entered v's draw (a campaign's by its room id).
	Count(ctx context.Context, id domain.VoucherID) (int, error)
	// CloseDrop closes a campaign's entries as Close does a voucher's, and returns its
	// entrants, each with its latest choice, in no order.
	CloseDrop(ctx context.Context, room domain.Voucher) ([]domain.DropEntry, error)
	// Close closes v's entries for good, once its sale has begun by the sale's clock
	// (domain.ErrNotStarted before), and returns its entrants, in no order.
	Close(ctx context.Context, v domain.Voucher) ([]domain.UserID, error)
	// Progress returns how many steps of v's draw (domain.DrawSteps; a campaign's
	// voucher's part of its campaign's, domain.Draw.DropSteps) were taken, and whether
	// all were. A voucher without sale state answers domain.ErrNotFound.
	Progress(ctx context.Context, id domain.VoucherID) (taken int, drawn bool, err error)
	// Take takes steps, the draw's steps from step from on (of total), each with the
	// id of the order it becomes (a winner's) or a unit handed to it becomes (the
	// backfill's), in one atomic step that also counts them taken; steps already taken
	// (from is behind) change nothing. It returns the steps taken after it, and how
	// many orders it reserved. A voucher without sale state answers
	// domain.ErrNotFound. A campaign's voucher opens to grabs only once every voucher
	// of its campaign has taken all its steps: a unit one voucher's buyers take can
	// then never be one the cap owes another's winner.
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
