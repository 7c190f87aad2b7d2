package application

import (
	"context"
	"fmt"

	"github.com/seckill/seckill/domain"
	"github.com/seckill/seckill/ports"
)

// Compensate puts the units of an order that will never be sold back on sale. The
// order is already closed in the database (the source of truth) when it is called.
// The release is idempotent — it returns units only while the user's reservation
// still names this order — so calling it again for the same order is harmless; and
// it is recorded, so an order whose release failed is found and retried
// (ReleaseClosed). A release that returns units tells every instance (the restock
// signal), so a voucher that was sold out becomes grabbable again everywhere.
type Compensate struct {
	stock    ports.Stock
	releases ports.Releases
	released func(domain.Order)
}

// NewCompensate returns the use case.
func NewCompensate(stock ports.Stock, releases ports.Releases) *Compensate {
	return &Compensate{stock: stock, releases: releases, released: func(domain.Order) {}}
}

// Observe makes Handle call released with each order whose units it put back on sale
// (not when they already were). Call it before the use case is in use; nil stops the
// calls.
func (uc *Compensate) Observe(released func(domain.Order)) {
	if released == nil {
		released = func(domain.Order) {}
	}
	uc.released = released
}

// Handle releases o's units and records that it did. It reports whether units went
// back (false when they already had, or the reservation names another order now); an
// error means the caller, or ReleaseClosed, must try again.
func (uc *Compensate) Handle(ctx context.Context, o domain.Order) (bool, error) {
	released, err := uc.stock.Release(ctx, o)
	if err != nil {
		return false, fmt.Errorf("release order %s: %w", o.ID, err)
	}
	if released {
		uc.released(o)
	}
	if err := uc.releases.MarkReleased(ctx, o.ID); err != nil {
		return released, fmt.Errorf("mark order %s released: %w", o.ID, err)
	}
	return released, nil
}
