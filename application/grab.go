package application

import (
	"context"
	"errors"
	"time"

	"github.com/seckill/seckill/domain"
	"github.com/seckill/seckill/ports"
)

// GrabVoucherCmd is one user's press of "grab".
type GrabVoucherCmd struct {
	VoucherID domain.VoucherID
	UserID    domain.UserID
	Quantity  int
}

// GrabOptions tune the grab path.
type GrabOptions struct {
	// SoldOutTTL is how long this instance answers sold_out for a voucher without
	// asking Redis, once Redis said it has no unit left; 0 always asks.
	SoldOutTTL time.Duration
}

// GrabVoucher is the hot path: it reserves units in one call to the stock, which also
// records the reservation for fulfilment, or in none once the voucher is known to be
// sold out. It never touches the database.
type GrabVoucher struct {
	stock   ports.Stock
	clock   ports.Clock
	ids     ports.OrderIDs
	soldOut *soldOutFlags
}

// NewGrabVoucher returns the use case.
func NewGrabVoucher(stock ports.Stock, clock ports.Clock, ids ports.OrderIDs, opts GrabOptions) *GrabVoucher {
	return &GrabVoucher{stock: stock, clock: clock, ids: ids, soldOut: newSoldOutFlags(opts.SoldOutTTL)}
}

// Restocked tells the grab path that units of a voucher came back on sale, so it asks
// Redis again at once instead of waiting for its sold-out flag to lapse.
func (uc *GrabVoucher) Restocked(id domain.VoucherID) {
	uc.soldOut.clear(id)
}

// Handle validates the command, mints the order id and reserves. It returns the
// reservation, or a *domain.ValidationError, domain.ErrSoldOut, an
// *domain.AlreadyPurchasedError naming the user's existing order, domain.ErrNotStarted,
// domain.ErrEnded or domain.ErrNotFound.
func (uc *GrabVoucher) Handle(ctx context.Context, cmd GrabVoucherCmd) (domain.Reservation, error) {
	switch {
	case cmd.VoucherID <= 0:
		return domain.Reservation{}, domain.Invalid("id", "must be a positive integer")
	case cmd.UserID <= 0:
		return domain.Reservation{}, domain.Invalid("user", "must be a positive integer")
	case cmd.Quantity < 1 || cmd.Quantity > domain.MaxQuantity:
		return domain.Reservation{}, domain.Invalid("quantity", "must be between 1 and the per-user limit")
	}
	now := uc.clock.Now()
	if uc.soldOut.isSet(cmd.VoucherID, now) {
		return domain.Reservation{}, domain.ErrSoldOut
	}
	r := domain.Reservation{
		OrderID:   uc.ids.NewOrderID(),
		VoucherID: cmd.VoucherID,
		UserID:    cmd.UserID,
		Quantity:  cmd.Quantity,
		At:        now,
	}
	if err := uc.stock.Reserve(ctx, r); err != nil {
		// Only a one-unit grab refused for stock proves that none is left.
		if errors.Is(err, domain.ErrSoldOut) && cmd.Quantity == 1 {
			uc.soldOut.set(cmd.VoucherID, now)
		}
		return domain.Reservation{}, err
	}
	return r, nil
}
