package application

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/seckill/seckill/domain"
	"github.com/seckill/seckill/ports"
)

// OrderChangeCmd is a user's change of its own order's state: PayOrder's and
// CancelOrder's command.
type OrderChangeCmd struct {
	// User is who asks; only the order's owner may change it.
	User  domain.UserID
	Order domain.OrderID
	// Receipt, when set, is the request's idempotency key: the change and the
	// request's answer are stored together, or neither.
	Receipt *ports.Receipt[domain.Order]
}

// PayOrder records the payment of an order awaiting it.
type PayOrder struct {
	get       *GetOrder
	lifecycle ports.OrderLifecycle
	payments  ports.Payments
	clock     ports.Clock
	window    domain.PaymentWindow
	changes   ports.Changes
}

// NewPayOrder returns the use case; a payment that arrives after the order's window
// (by clock, the sale's) is refused, and one recorded is announced on changes.
func NewPayOrder(get *GetOrder, lifecycle ports.OrderLifecycle, payments ports.Payments, clock ports.Clock, window domain.PaymentWindow,
	changes ports.Changes) *PayOrder {
	return &PayOrder{get: get, lifecycle: lifecycle, payments: payments, clock: clock, window: window, changes: changes}
}

// Handle authorizes the payment and marks the order paid, keeping the receipt's
// answer (nil: none) in the same transaction. Only its owner may pay it. It returns
// domain.ErrNotFound (no such order of the caller), domain.ErrInvalidState (not
// awaiting payment: still queued, already paid, cancelled or expired — also when it
// expired while the payment was being authorized — or past its expires_at by the
// sale's clock, though the sweeper may not have expired it yet), ports.ErrClaimLost
// (the receipt's claim no longer holds its key: the order is left as it was), or the
// gateway's error. When the order could not be marked paid, the authorization is
// voided.
func (uc *PayOrder) Handle(ctx context.Context, cmd OrderChangeCmd) (domain.Order, error) {
	id := cmd.Order
	o, err := uc.get.Handle(ctx, Caller{User: cmd.User}, id)
	if err != nil {
		return domain.Order{}, err
	}
	if o.Status != domain.StatusAwaitingPayment {
		return domain.Order{}, fmt.Errorf("pay order %s (%s): %w", id, o.Status, domain.ErrInvalidState)
	}
	// The deadline the order was answered with holds to the millisecond, whenever the
	// sweeper (every second) gets to it.
	if uc.window.Lapsed(o, uc.clock.Now()) {
		expiry, _ := uc.window.ExpiresAt(o)
		return domain.Order{}, fmt.Errorf("pay order %s: its payment window closed at %s: %w", id, expiry.Format(time.RFC3339Nano), domain.ErrInvalidState)
	}
	if err := uc.payments.Authorize(ctx, o); err != nil {
		return domain.Order{}, fmt.Errorf("authorize payment: %w", err)
	}
	paid, err := uc.lifecycle.Transition(ctx, id, cmd.User, domain.StatusPaid, cmd.Receipt)
	if err != nil {
		if verr := uc.payments.Void(ctx, o); verr != nil {
			return domain.Order{}, errors.Join(err, fmt.Errorf("void payment: %w", verr))
		}
		return domain.Order{}, err
	}
	announce(ctx, uc.changes, paid)
	return paid, nil
}

// CancelOrder lets a user give an order back before paying.
type CancelOrder struct {
	get        *GetOrder
	lifecycle  ports.OrderLifecycle
	compensate *Compensate
	changes    ports.Changes
}

// NewCancelOrder returns the use case; a cancellation is announced on changes.
func NewCancelOrder(get *GetOrder, lifecycle ports.OrderLifecycle, compensate *Compensate, changes ports.Changes) *CancelOrder {
	return &CancelOrder{get: get, lifecycle: lifecycle, compensate: compensate, changes: changes}
}

// Handle cancels the caller's order awaiting payment in the database, keeping the
// receipt's answer (nil: none) in the same transaction, then — only once that has
// committed — returns its units to the sale. If the release fails (Redis down) the
// order stays cancelled and ReleaseClosed retries the release until it succeeds. It
// returns domain.ErrNotFound, domain.ErrInvalidState (not awaiting payment) or
// ports.ErrClaimLost (the receipt's claim no longer holds its key: nothing changed,
// nothing released).
func (uc *CancelOrder) Handle(ctx context.Context, cmd OrderChangeCmd) (domain.Order, error) {
	id := cmd.Order
	o, err := uc.get.Handle(ctx, Caller{User: cmd.User}, id)
	if err != nil {
		return domain.Order{}, err
	}
	if o.Status != domain.StatusAwaitingPayment {
		return domain.Order{}, fmt.Errorf("cancel order %s (%s): %w", id, o.Status, domain.ErrInvalidState)
	}
	cancelled, err := uc.lifecycle.Transition(ctx, id, cmd.User, domain.StatusCancelled, cmd.Receipt)
	if err != nil {
		return domain.Order{}, err
	}
	announce(ctx, uc.changes, cancelled)
	// The cancellation is committed; a failed release is ReleaseClosed's to retry.
	_, _ = uc.compensate.Handle(ctx, cancelled)
	return cancelled, nil
}

// ExpireOrders closes the orders left unpaid past their payment window and returns
// their units. It is driven by the database, so a restart loses nothing, and safe to
// run on every instance at once.
type ExpireOrders struct {
	lifecycle  ports.OrderLifecycle
	compensate *Compensate
	clock      ports.Clock
	window     domain.PaymentWindow
	changes    ports.Changes
}

// NewExpireOrders returns the use case for the given payment window; each expiry is
// announced on changes.
func NewExpireOrders(lifecycle ports.OrderLifecycle, compensate *Compensate, clock ports.Clock, window domain.PaymentWindow,
	changes ports.Changes) *ExpireOrders {
	return &ExpireOrders{lifecycle: lifecycle, compensate: compensate, clock: clock, window: window, changes: changes}
}

// expireBatch bounds one transaction of ExpireOrders.
const expireBatch = 100

// Handle expires every order due now and releases its units; it returns how many it
// expired. Releases that fail are left to ReleaseClosed.
func (uc *ExpireOrders) Handle(ctx context.Context) (int, error) {
	now := uc.clock.Now()
	total := 0
	for {
		expired, err := uc.lifecycle.ExpireDue(ctx, now, uc.window, expireBatch)
		if err != nil {
			return total, fmt.Errorf("expire orders: %w", err)
		}
		total += len(expired)
		announce(ctx, uc.changes, expired...)
		for _, o := range expired {
			_, _ = uc.compensate.Handle(ctx, o)
		}
		if len(expired) < expireBatch {
			return total, nil
		}
	}
}

// ReleaseClosed retries the releases of closed orders whose units are not yet back on
// sale (Redis was down when they closed, or the process died in between).
type ReleaseClosed struct {
	releases   ports.Releases
	compensate *Compensate
}

// NewReleaseClosed returns the use case.
func NewReleaseClosed(releases ports.Releases, compensate *Compensate) *ReleaseClosed {
	return &ReleaseClosed{releases: releases, compensate: compensate}
}

// Handle releases every closed, unreleased order and returns how many it released.
// It stops at the first failure (the dependency is likely down) and reports it.
func (uc *ReleaseClosed) Handle(ctx context.Context) (int, error) {
	done := 0
	for {
		os, err := uc.releases.Unreleased(ctx, expireBatch)
		if err != nil {
			return done, fmt.Errorf("unreleased orders: %w", err)
		}
		for _, o := range os {
			if _, err := uc.compensate.Handle(ctx, o); err != nil {
				return done, err
			}
			done++
		}
		if len(os) < expireBatch {
			return done, nil
		}
	}
}

// announceWithin bounds an announcement: it is a hint, and a Redis that does not
// answer must not hold the change that has committed already.
const announceWithin = time.Second

// announce tells every instance that orders changed, once their change has committed
// (also when the request that made it has ended meanwhile). An announcement that
// fails is dropped: the change stands, and the event streams read the truth again on
// their own timers.
func announce(ctx context.Context, changes ports.Changes, orders ...domain.Order) {
	if len(orders) == 0 {
		return
	}
	cs := make([]ports.Change, len(orders))
	for i, o := range orders {
		cs[i] = ports.Change{Voucher: o.VoucherID, Order: o.ID}
	}
	publish(ctx, changes, cs...)
}

// publish is announce's Publish, bounded by announceWithin.
func publish(ctx context.Context, changes ports.Changes, cs ...ports.Change) {
	if len(cs) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), announceWithin)
	defer cancel()
	_ = changes.Publish(ctx, cs...)
}
