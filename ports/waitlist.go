package ports

import (
	"context"

	"github.com/seckill/seckill/domain"
)

// Waitlist keeps, per first-come voucher, the users waiting for a unit to come back
// while it is sold out, in the order they joined. The stock hands a unit that comes
// back (a release, an edit that adds units) to the first of them who may still buy,
// in the same atomic step that returns it, before it goes back on sale (see
// Stock.Release and Stock.Edit): the unit becomes a reservation under the order id
// the user joined with, persisted by the fulfillment workers as any grab's.
//
// Every method returns an error wrapping domain.ErrUnavailable when the store cannot
// be reached, and (but Drop) domain.ErrWaitlistUnsupported when the stock strategy
// keeps no waitlist.
type Waitlist interface {
	// Join puts user at the end of voucher's waitlist, with order as the id of the
	// order a unit handed to it becomes, and returns its position (from 1). A user
	// already on it keeps its place (and its order id) and gets its position. It
	// returns domain.ErrNotSoldOut while units are on sale (or the sale has not
	// started), an *domain.AlreadyPurchasedError naming the order the user holds (of
	// a campaign's voucher: the orders, when the user holds the campaign's per-user
	// limit across its other vouchers; a unit is handed only to a user below it),
	// domain.ErrEnded once the sale has ended, domain.ErrNotFound when the voucher has
	// no sale state, or an error wrapping domain.ErrUnavailable while the sale state is
	// being restored.
	Join(ctx context.Context, voucher domain.VoucherID, user domain.UserID, order domain.OrderID) (int, error)
	// Position returns user's position on voucher's waitlist (from 1), or
	// domain.ErrNotFound when it is not on it.
	Position(ctx context.Context, voucher domain.VoucherID, user domain.UserID) (int, error)
	// Leave takes user off voucher's waitlist; a user not on it is no error.
	Leave(ctx context.Context, voucher domain.VoucherID, user domain.UserID) error
	// Drop takes user off every waitlist it joined (it was denied). A store that keeps
	// no waitlist has nothing to drop: nil.
	Drop(ctx context.Context, user domain.UserID) error
	// Length returns how many users wait on voucher's waitlist.
	Length(ctx context.Context, voucher domain.VoucherID) (int, error)
}
