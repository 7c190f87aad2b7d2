package application

import (
	"context"
	"fmt"

	"github.com/seckill/seckill/domain"
	"github.com/seckill/seckill/ports"
)

// Compensate puts the units of an order that will never be sold back on sale. The
// order is already closed in the database (the source of truth) when it is called;
// the release is idempotent, so calling it again for the same order is harmless.
type Compensate struct {
	stock ports.Stock
}

// NewCompensate returns the use case.
func NewCompensate(stock ports.Stock) *Compensate {
	return &Compensate{stock: stock}
}

// Handle releases o's units if the user's reservation still names o. It reports
// whether units went back; an error means nothing was released and the caller must
// try again.
func (uc *Compensate) Handle(ctx context.Context, o domain.Order) (bool, error) {
	released, err := uc.stock.Release(ctx, o)
	if err != nil {
		return false, fmt.Errorf("release order %s: %w", o.ID, err)
	}
	return released, nil
}
