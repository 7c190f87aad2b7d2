package application

import (
	"context"
	"errors"
	"fmt"

	"github.com/seckill/seckill/domain"
	"github.com/seckill/seckill/ports"
)

// FulfillReport counts what one FulfillOrder call did with its deliveries.
type FulfillReport struct {
	// Persisted became new orders.
	Persisted int
	// Redelivered were already orders; nothing changed.
	Redelivered int
	// Failed can never become live orders; stored as failed, their units returned.
	Failed int
	// DeadLettered were malformed, delivered too often, or name a voucher that no
	// longer exists; they went to the dead-letter queue.
	DeadLettered int
	// Left stay pending: they failed on their own and will be delivered again.
	Left int
	// Problems explains each dead letter and each delivery left pending, one error
	// apiece, for the log.
	Problems []error
}

// FulfillOrder turns reservations delivered by the queue into orders, exactly once.
// It acknowledges a delivery only after its effects are committed: an order row, or a
// failed row with its units released, or a dead letter.
type FulfillOrder struct {
	orders        ports.Orders
	queue         ports.Queue
	compensate    *Compensate
	changes       ports.Changes
	maxDeliveries int64
}

// NewFulfillOrder returns the use case. A delivery seen more than maxDeliveries times
// is dead-lettered instead of tried again. The orders each batch makes (awaiting
// payment, or failed) are announced on changes, in one call.
func NewFulfillOrder(orders ports.Orders, queue ports.Queue, compensate *Compensate, changes ports.Changes, maxDeliveries int64) *FulfillOrder {
	return &FulfillOrder{orders: orders, queue: queue, compensate: compensate, changes: changes, maxDeliveries: maxDeliveries}
}

// Handle persists a batch in one transaction and acknowledges it. An error wrapping
// domain.ErrUnavailable means a dependency is down: the unacknowledged deliveries stay
// pending and the caller should retry them later. Other per-delivery failures are
// isolated: the rest of the batch goes through and the failing deliveries are left
// pending for redelivery. A delivery is dead-lettered (and its units returned) only
// when it fails on its own after more than the delivery limit — never for being
// delivered often: during a database outage other workers claim and re-claim the same
// entries, which counts deliveries without any of them failing on its own.
func (uc *FulfillOrder) Handle(ctx context.Context, ds []ports.Delivery) (FulfillReport, error) {
	var rep FulfillReport
	good := make([]ports.Delivery, 0, len(ds))
	for _, d := range ds {
		switch {
		case d.Malformed != "":
			if err := uc.deadLetter(ctx, d, "malformed entry: "+d.Malformed, false, &rep); err != nil {
				return rep, err
			}
		default:
			good = append(good, d)
		}
	}
	if len(good) == 0 {
		return rep, nil
	}
	results, err := uc.orders.Persist(ctx, reservations(good))
	if err == nil {
		return rep, uc.settle(ctx, good, results, &rep)
	}
	if errors.Is(err, domain.ErrUnavailable) {
		rep.Left += len(good)
		return rep, err
	}
	// Something in the batch fails on its own: persist one at a time so the rest flow,
	// and leave the failing ones pending to be delivered again.
	for _, d := range good {
		res, err := uc.orders.Persist(ctx, reservations([]ports.Delivery{d}))
		if errors.Is(err, domain.ErrUnavailable) {
			rep.Left++
			return rep, err
		}
		if errors.Is(err, domain.ErrInvalid) {
			// The store refuses it as it is: no redelivery can help.
			if err := uc.deadLetter(ctx, d, err.Error(), true, &rep); err != nil {
				return rep, err
			}
			continue
		}
		if err != nil && uc.maxDeliveries > 0 && d.Deliveries > uc.maxDeliveries {
			// It failed on its own once more, past the limit: a poison entry.
			reason := fmt.Sprintf("delivered %d times without being persisted; last error: %v", d.Deliveries, err)
			if err := uc.deadLetter(ctx, d, reason, true, &rep); err != nil {
				return rep, err
			}
			continue
		}
		if err != nil {
			rep.Left++
			rep.Problems = append(rep.Problems, fmt.Errorf("entry %s (order %s, delivery %d) left pending: %w",
				d.ID, d.Reservation.OrderID, d.Deliveries, err))
			continue
		}
		if err := uc.settle(ctx, []ports.Delivery{d}, res, &rep); err != nil {
			return rep, err
		}
	}
	return rep, nil
}

// settle compensates what failed and acknowledges every delivery whose outcome is
// committed.
func (uc *FulfillOrder) settle(ctx context.Context, ds []ports.Delivery, results []ports.PersistResult, rep *FulfillReport) error {
	if len(results) != len(ds) {
		return fmt.Errorf("persist returned %d results for %d reservations", len(results), len(ds))
	}
	ack := make([]ports.Delivery, 0, len(ds))
	made := make([]ports.Change, 0, len(ds))
	// The rows are committed: their announcement is due whatever follows.
	defer func() { publish(ctx, uc.changes, made...) }()
	for i, res := range results {
		d := ds[i]
		switch res.Outcome {
		case ports.Persisted:
			made = append(made, ports.Change{Voucher: d.VoucherID, Order: d.Reservation.OrderID})
			rep.Persisted++
		case ports.AlreadyPersisted:
			rep.Redelivered++
		case ports.Failed:
			made = append(made, ports.Change{Voucher: d.VoucherID, Order: d.Reservation.OrderID})
			if _, err := uc.compensate.Handle(ctx, failedOrder(d.Reservation)); err != nil {
				return err
			}
			rep.Failed++
		case ports.VoucherGone:
			if err := uc.deadLetter(ctx, d, res.Reason, true, rep); err != nil {
				return err
			}
			continue // DeadLetter acknowledged it
		default:
			return fmt.Errorf("persist: unknown outcome %d for order %s", res.Outcome, res.OrderID)
		}
		ack = append(ack, d)
	}
	if err := uc.queue.Ack(ctx, ack...); err != nil {
		return fmt.Errorf("ack: %w", err)
	}
	return nil
}

// deadLetter returns the units of a well-formed reservation (when release is set),
// moves the delivery to the dead-letter queue and notes it in rep.
func (uc *FulfillOrder) deadLetter(ctx context.Context, d ports.Delivery, reason string, release bool, rep *FulfillReport) error {
	if release {
		if _, err := uc.compensate.Handle(ctx, failedOrder(d.Reservation)); err != nil {
			return err
		}
	}
	if err := uc.queue.DeadLetter(ctx, d, reason); err != nil {
		return fmt.Errorf("dead-letter %s: %w", d.ID, err)
	}
	rep.DeadLettered++
	rep.Problems = append(rep.Problems, fmt.Errorf("entry %s of voucher %s dead-lettered: %s", d.ID, d.VoucherID, reason))
	return nil
}

func failedOrder(r domain.Reservation) domain.Order {
	return r.Order(domain.StatusFailed)
}

func reservations(ds []ports.Delivery) []domain.Reservation {
	rs := make([]domain.Reservation, len(ds))
	for i, d := range ds {
		rs[i] = d.Reservation
	}
	return rs
}
