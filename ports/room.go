package ports

import (
	"context"
	"time"

	"github.com/seckill/seckill/domain"
)

// WaitingRoom keeps the waiting rooms of the vouchers sold with one (admission
// "waiting_room"): who joined, in which order they are let in, and the passes of those
// let in. Joining costs O(1), reading a place O(1). Every method returns an error
// wrapping domain.ErrUnavailable when the store cannot be reached.
type WaitingRoom interface {
	// Join puts user in v's waiting room, once: before v.BeginsAt by the sale's clock
	// among the early joiners (an unordered set, shuffled at the start), from then on
	// at the end of the line, in arrival order. Joining again keeps the place there
	// is. It reports whether user joined early.
	Join(ctx context.Context, v domain.Voucher, user domain.UserID) (early bool, err error)
	// Place returns where user stands in voucher id's room, or domain.ErrNotFound
	// when user never joined it.
	Place(ctx context.Context, id domain.VoucherID, user domain.UserID) (RoomPlace, error)
	// Installed reports whether the shuffled order of v's early joiners is in place,
	// so that admission may run.
	Installed(ctx context.Context, id domain.VoucherID) (bool, error)
	// Close ends v's early joining and returns the early joiners (in no order): from
	// then on every joiner is a late one. It reports false, closing nothing, while the
	// sale's clock is before v.BeginsAt.
	Close(ctx context.Context, v domain.Voucher) (early []domain.UserID, closed bool, err error)
	// Install puts the early joiners in order (positions 1..len(order)) before the
	// late ones, and opens admission. Installing again, before admission opened,
	// starts over; it must not be called once Installed reports true.
	Install(ctx context.Context, v domain.Voucher, order []domain.UserID) error
	// Admit lets users in from the front of v's line, atomically whichever
	// instance calls: it forgets the expired passes, then, while fewer than
	// window passes are outstanding and units remain on sale, gives the next
	// user in line a pass (Keys.Passes in the Redis adapter) that expires lifetime
	// from now. A user who holds an order of v is passed over (counted let in, given
	// no pass): one met in the line was let in before the store forgot the room,
	// whose order was installed again. Nothing happens before Install, while the
	// sale is paused or its state is being restored (so that every order held is
	// known), or once it ended. With sale (nil: the store judges the sale by its own
	// state) the store judges by sale instead: its state is not the store's to hold.
	Admit(ctx context.Context, v domain.Voucher, window int, lifetime time.Duration, sale *RoomSale) (Admission, error)
	// Spend forgets user's pass of room that expires at expires, when it is still
	// outstanding: a pass an order used that the stock took without the room's store
	// (the postgres strategy) frees its place in the window at once, not at its
	// expiry. Another pass of the user's is left as it is.
	Spend(ctx context.Context, room domain.VoucherID, user domain.UserID, expires time.Time) error
	// Figures reads voucher id's room's counts, all of one moment, in one round
	// trip; all zero for a room no one joined.
	Figures(ctx context.Context, id domain.VoucherID) (RoomFigures, error)
}

// RoomFigures are a waiting room's counts at one moment.
type RoomFigures struct {
	// Early counts the users who joined before the start: the early joiners so far,
	// then, once the shuffled order is installed, the users it holds.
	Early int64
	// Late counts the users who joined from the start on.
	Late int64
	// Admitted counts the users taken from the line so far: let in (given a pass),
	// or passed over as holding an order of the voucher already.
	Admitted int64
	// Outstanding counts the passes given and neither used nor expired.
	Outstanding int64
}

// RoomPlace is where a user stands in a waiting room.
type RoomPlace struct {
	// Early is set for a user who joined before the start (shuffled).
	Early bool
	// Position counts from 1 and never changes; 0 while not known yet (an early
	// joiner before the shuffle; a late one before the early ones' count is known).
	Position int64
	// Admitted is how many users of the room have been let in so far: a user with
	// a Position up to it has been.
	Admitted int64
	// SoldOut is set once no unit is left on sale.
	SoldOut bool
	// PassExpires is when the user's pass expires; zero without an outstanding pass
	// (none given yet, used or expired).
	PassExpires time.Time
	// Rate is the measured admission rate, users a second; 0 when unknown.
	Rate float64
}

// RoomSale is the sale a waiting room admits to as the database holds it, for a stock
// strategy that keeps no sale state beside the room (the postgres strategy): Open
// while it is on (begun, not ended, not paused), OnSale its units on sale.
type RoomSale struct {
	Open   bool
	OnSale int
}

// Admission is what one Admit did.
type Admission struct {
	// Users were let in, in the line's order, each with a pass until Expires.
	Users   []domain.UserID
	Expires time.Time
	// Outstanding counts the passes outstanding after the step; -1 before the
	// shuffle is installed.
	Outstanding int
}

// Shuffles keeps each waiting room's one shuffle (domain.SeededShuffle), saved in the
// database before anyone is admitted. Every method returns an error wrapping
// domain.ErrUnavailable when the database cannot be reached.
type Shuffles interface {
	// Save stores s unless the voucher has a shuffle already, and returns the one
	// stored: the first saved wins, so every instance installs the same order.
	Save(ctx context.Context, s domain.SeededShuffle) (domain.SeededShuffle, error)
	// Get returns the voucher's shuffle, or domain.ErrNotFound before it ran. With
	// entrants false, Entrants is left empty (the summary: seed, count, digest).
	Get(ctx context.Context, id domain.VoucherID, entrants bool) (domain.SeededShuffle, error)
}
