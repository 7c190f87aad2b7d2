package application

import (
	"fmt"
	"slices"

	"github.com/seckill/seckill/domain"
)

// DriftKind names one way Redis and the database can disagree about a voucher.
type DriftKind string

// The kinds of drift Reconcile finds.
const (
	// DriftSaleStateMissing: a voucher on sale has no sale state in Redis (its keys
	// vanished, say with a Redis restart without persistence).
	DriftSaleStateMissing DriftKind = "sale_state_missing"
	// DriftStockMismatch: Redis's remaining units plus its reservations' units differ
	// from the voucher's stock.
	DriftStockMismatch DriftKind = "stock_mismatch"
	// DriftReservationWithoutOrder: a reservation older than the grace period has no
	// order in the database and no entry left in its queue; it would never be
	// persisted.
	DriftReservationWithoutOrder DriftKind = "reservation_without_order"
	// DriftOrderWithoutReservation: a live order in the database has no reservation in
	// Redis, so its user could grab again and the stock count is off.
	DriftOrderWithoutReservation DriftKind = "order_without_reservation"
	// DriftClosedStillReserved: a cancelled, expired or failed order still holds its
	// reservation in Redis: its units never went back on sale.
	DriftClosedStillReserved DriftKind = "closed_order_still_reserved"
	// DriftSoldMismatch: the database's sold counter differs from its live orders.
	DriftSoldMismatch DriftKind = "sold_mismatch"
	// DriftEntriesUnread: the voucher's queue holds entries not yet acknowledged that
	// no fulfillment worker reads (the voucher left the queues they read): they would
	// never be persisted.
	DriftEntriesUnread DriftKind = "entries_unread"
)

// DriftKinds lists every DriftKind, for those who report each one, zero included.
var DriftKinds = []DriftKind{DriftSaleStateMissing, DriftStockMismatch, DriftReservationWithoutOrder,
	DriftOrderWithoutReservation, DriftClosedStillReserved, DriftSoldMismatch, DriftEntriesUnread}

// maxExamples bounds the examples a Drift carries.
const maxExamples = 5

// Drift is one kind of disagreement found in a voucher, with how often it occurs and
// a few examples (order ids or figures).
type Drift struct {
	Kind     DriftKind `json:"kind"`
	Count    int       `json:"count"`
	Examples []string  `json:"examples"`
	// Repaired says whether --repair fixed it (or set the fix in motion: a requeued
	// reservation is persisted by the workers).
	Repaired bool `json:"repaired"`
	// RepairError says why the repair failed.
	RepairError string `json:"repair_error,omitempty"`
}

// VoucherReconciliation is Reconcile's finding for one voucher.
type VoucherReconciliation struct {
	VoucherID domain.VoucherID `json:"voucher_id,string"`
	Drifts    []Drift          `json:"drifts"`
}

// Consistent reports whether no drift remains: none was found, or every one found was
// repaired.
func (r VoucherReconciliation) Consistent() bool {
	for _, d := range r.Drifts {
		if !d.Repaired {
			return false
		}
	}
	return true
}

// mark records whether the repair of every drift of kind succeeded (err nil) or why
// it failed.
func (r *VoucherReconciliation) mark(kind DriftKind, err error) {
	for i := range r.Drifts {
		if r.Drifts[i].Kind == kind {
			r.Drifts[i].Repaired = err == nil
			if err != nil {
				r.Drifts[i].RepairError = err.Error()
			}
		}
	}
}

// findings collects drifts with their subjects.
type findings struct {
	order        []DriftKind
	counts       map[DriftKind]int
	examples     map[DriftKind][]string
	orders       map[DriftKind][]domain.Order
	reservations map[DriftKind][]domain.Reservation
}

func (f *findings) add(kind DriftKind, example string) {
	if f.counts == nil {
		f.counts = map[DriftKind]int{}
		f.examples = map[DriftKind][]string{}
		f.orders = map[DriftKind][]domain.Order{}
		f.reservations = map[DriftKind][]domain.Reservation{}
	}
	if !slices.Contains(f.order, kind) {
		f.order = append(f.order, kind)
	}
	f.counts[kind]++
	if len(f.examples[kind]) < maxExamples {
		f.examples[kind] = append(f.examples[kind], example)
	}
}

func (f *findings) addOrder(kind DriftKind, o domain.Order) {
	f.add(kind, fmt.Sprintf("order %s (user %s, %s)", o.ID, o.UserID, o.Status))
	f.orders[kind] = append(f.orders[kind], o)
}

func (f *findings) addReservation(kind DriftKind, r domain.Reservation) {
	f.add(kind, fmt.Sprintf("order %s (user %s)", r.OrderID, r.UserID))
	f.reservations[kind] = append(f.reservations[kind], r)
}

func (f *findings) has(kind DriftKind) bool { return f.counts[kind] > 0 }

func (f *findings) drifts() []Drift {
	out := make([]Drift, 0, len(f.order))
	for _, k := range f.order {
		out = append(out, Drift{Kind: k, Count: f.counts[k], Examples: f.examples[k]})
	}
	return out
}
