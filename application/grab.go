package application

import (
	"context"

	"github.com/seckill/seckill/domain"
	"github.com/seckill/seckill/ports"
)

// GrabVoucherCmd is one user's press of "grab".
type GrabVoucherCmd struct {
	VoucherID domain.VoucherID
	UserID    domain.UserID
	Quantity  int
}

// GrabVoucher is the hot path: it reserves units in one call to the stock, which also
// records the reservation for fulfilment. It never touches the database.
type GrabVoucher struct {
	stock ports.Stock
	clock ports.Clock
	ids   ports.OrderIDs
}

// NewGrabVoucher returns the use case.
func NewGrabVoucher(stock ports.Stock, clock ports.Clock, ids ports.OrderIDs) *GrabVoucher {
	return &GrabVoucher{stock: stock, clock: clock, ids: ids}
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
	r := domain.Reservation{
		OrderID:   uc.ids.NewOrderID(),
		VoucherID: cmd.VoucherID,
		UserID:    cmd.UserID,
		Quantity:  cmd.Quantity,
		At:        uc.clock.Now(),
	}
	if err := uc.stock.Reserve(ctx, r); err != nil {
		return domain.Reservation{}, err
	}
	return r, nil
}
