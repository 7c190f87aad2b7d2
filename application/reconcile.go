package application

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/seckill/seckill/domain"
	"github.com/seckill/seckill/ports"
)

// ReconcileCmd says what to check: one voucher, or 0 for every voucher whose sale has
// not ended or ended within recentlyEnded; Repair fixes what it finds, and By is who
// repairs, for the audit log.
type ReconcileCmd struct {
	Voucher domain.VoucherID
	Repair  bool
	By      domain.Author
}

// recentlyEnded is how long after its end a sale is still reconciled: the last grabs'
// entries may still wait to be persisted, and an entry no worker reads shows only
// after the sale ended (DriftEntriesUnread).
const recentlyEnded = time.Hour

// Reconcile proves, per voucher, that Redis and the database agree, and on request
// repairs where they do not. Every repair is idempotent and safe during a live sale.
type Reconcile struct {
	log        ports.AuditLog
	vouchers   ports.Vouchers
	audit      ports.StockAudit
	ledger     ports.OrderAudit
	compensate *Compensate
	recover    *RecoverVoucher
	clock      ports.Clock
	opts       ReconcileOptions
}

// ReconcileOptions tune Reconcile.
type ReconcileOptions struct {
	// Grace: reservations younger than it are not judged, their entries may still be
	// on their way to the database.
	Grace time.Duration
	// KeyGrace is how long a sale's state outlives its end in the stock: Heal heals
	// the sales that ended within it too, whose stats still read that state.
	KeyGrace time.Duration
}

// NewReconcile returns the use case. A voucher's sale state is rebuilt, or healed, by
// recovery; every repair is recorded in log.
func NewReconcile(vouchers ports.Vouchers, audit ports.StockAudit, ledger ports.OrderAudit,
	compensate *Compensate, recovery *RecoverVoucher, log ports.AuditLog, clock ports.Clock, opts ReconcileOptions) *Reconcile {
	return &Reconcile{vouchers: vouchers, audit: audit, ledger: ledger, compensate: compensate, recover: recovery,
		log: log, clock: clock, opts: opts}
}

// Handle checks the vouchers cmd names and returns one finding per voucher. It
// returns domain.ErrNotFound for an unknown voucher.
func (uc *Reconcile) Handle(ctx context.Context, cmd ReconcileCmd) ([]VoucherReconciliation, error) {
	var ids []domain.VoucherID
	if cmd.Voucher != 0 {
		ids = []domain.VoucherID{cmd.Voucher}
	} else {
		active, err := uc.vouchers.Active(ctx, uc.clock.Now().Add(-recentlyEnded))
		if err != nil {
			return nil, fmt.Errorf("active vouchers: %w", err)
		}
		for _, v := range active {
			ids = append(ids, v.ID)
		}
	}
	out := make([]VoucherReconciliation, 0, len(ids))
	for _, id := range ids {
		r, err := uc.one(ctx, id, cmd.Repair, cmd.By)
		if err != nil {
			return out, err
		}
		out = append(out, r)
	}
	return out, nil
}

// Heal recovers every voucher whose sale has not ended, or ended within the key
// grace while its state is still there, after Redis may have lost or gone back on
// some of its state (it restarted from an older snapshot, or a replica that was
// behind took over): each one's grabs answer unavailable while the database is made
// its truth again, whatever the age of what changed (no grace here; see
// RecoverVoucher). It returns the first error; a voucher it could not heal keeps
// answering unavailable until a later Heal succeeds.
func (uc *Reconcile) Heal(ctx context.Context) error {
	active, err := uc.vouchers.Active(ctx, uc.clock.Now().Add(-uc.opts.KeyGrace))
	if err != nil {
		return fmt.Errorf("active vouchers: %w", err)
	}
	var first error
	for _, v := range active {
		err := uc.recover.Handle(ctx, RecoverCmd{Voucher: v.ID, Reason: RecoverRestarted})
		if errors.Is(err, domain.ErrEnded) {
			continue // ended, and its state is gone: nothing to heal
		}
		first = cmp.Or(first, err)
	}
	return first
}

func (uc *Reconcile) one(ctx context.Context, id domain.VoucherID, repair bool, by domain.Author) (VoucherReconciliation, error) {
	now := uc.clock.Now()
	// Redis first, then the database: whatever changes in between (a reservation
	// persisted, an order closed and released) moves the database side forward, so
	// it cannot look like drift.
	snap, err := uc.audit.Snapshot(ctx, id)
	if err != nil {
		return VoucherReconciliation{}, fmt.Errorf("voucher %s: read redis: %w", id, err)
	}
	ledger, err := uc.ledger.Ledger(ctx, id)
	if err != nil {
		return VoucherReconciliation{}, fmt.Errorf("voucher %s: %w", id, err)
	}
	f := findings{}
	live := 0
	for _, o := range ledger.Orders {
		if o.Status.HoldsStock() {
			live += o.Quantity
		}
	}
	if ledger.Voucher.Sold != live {
		f.add(DriftSoldMismatch, fmt.Sprintf("sold %d, live units %d", ledger.Voucher.Sold, live))
	}

	switch {
	case !snap.Present && !errors.Is(ledger.Voucher.Window(now), domain.ErrEnded):
		f.add(DriftSaleStateMissing, "no sale state in redis")
	case snap.Present:
		if err := uc.compare(ctx, snap, ledger, now, &f); err != nil {
			return VoucherReconciliation{}, fmt.Errorf("voucher %s: read redis: %w", id, err)
		}
	}

	rec := VoucherReconciliation{VoucherID: id, Drifts: f.drifts()}
	if repair && len(rec.Drifts) > 0 {
		uc.repair(ctx, &rec, snap, &f)
		if err := uc.record(ctx, rec, by); err != nil {
			return rec, fmt.Errorf("voucher %s: %w", id, err)
		}
	}
	return rec, nil
}

// record appends the audit entry of the repairs rec made, by by: before, the count of
// each kind of drift found; after, the count left (0 where repaired). A reconciliation
// that repaired nothing changed nothing and records nothing. Most repairs are writes
// to Redis, which no database transaction holds: the entry is appended once they are
// done, so it names only repairs that succeeded.
func (uc *Reconcile) record(ctx context.Context, rec VoucherReconciliation, by domain.Author) error {
	before, after := map[DriftKind]int{}, map[DriftKind]int{}
	repaired := false
	for _, d := range rec.Drifts {
		before[d.Kind], after[d.Kind] = d.Count, d.Count
		if d.Repaired {
			after[d.Kind], repaired = 0, true
		}
	}
	if !repaired {
		return nil
	}
	b, err := json.Marshal(before)
	if err != nil {
		return fmt.Errorf("record the repair: %w", err)
	}
	a, err := json.Marshal(after)
	if err != nil {
		return fmt.Errorf("record the repair: %w", err)
	}
	return uc.log.Append(ctx, domain.AuditEntry{Actor: by.Actor, Action: domain.AuditReconcileRepair,
		VoucherID: rec.VoucherID, RequestID: by.RequestID, Before: b, After: a})
}

// compare finds the drifts between a present sale state and the database.
//
// The snapshot is read a page at a time during a live sale (see ports.StockSnapshot),
// then the database, so what it shows of one order may be older than what the
// database shows. Drift is called only where a second, targeted look at Redis, taken
// after the database was read (StockAudit.Holds, for just the orders in question),
// still shows it, so no repair acts on a change that was merely in flight:
//   - a live order without a reservation in the snapshot whose reservation was taken
//     during the snapshot's pages is held on the second look: not drift;
//   - a reservation without an order, or of a closed order, that was released since
//     (its order closed, its units returned) is not held on the second look: not drift;
//   - the stock is judged only on a Consistent snapshot: remaining and reservations
//     read at different moments of a live sale need not add up.
//
// What remains possible is an order that closes, and whose reservation is released,
// between the database read and the second look: it reads as a live order without a
// reservation, and its repair (Restore) records a reservation for a closed order. The
// next reconciliation finds that as a closed order still reserved and releases it.
func (uc *Reconcile) compare(ctx context.Context, snap ports.StockSnapshot, ledger ports.Ledger, now time.Time, f *findings) error {
	orders := make(map[domain.OrderID]domain.Order, len(ledger.Orders))
	for _, o := range ledger.Orders {
		orders[o.ID] = o
	}
	reserved := make(map[domain.OrderID]bool, len(snap.Reservations))
	held := 0
	for _, r := range snap.Reservations {
		reserved[r.OrderID] = true
		held += r.Quantity
	}
	queued := make(map[domain.OrderID]bool, len(snap.Unacked))
	for _, r := range snap.Unacked {
		queued[r.OrderID] = true
	}
	if snap.Consistent && snap.Remaining+held != snap.Stock {
		f.add(DriftStockMismatch, fmt.Sprintf("remaining %d + reserved %d != stock %d", snap.Remaining, held, snap.Stock))
	}
	if len(snap.Unacked) > 0 && !snap.Read {
		f.add(DriftEntriesUnread, fmt.Sprintf("%d entries, the oldest of order %s", len(snap.Unacked), snap.Unacked[0].OrderID))
		f.reservations[DriftEntriesUnread] = append(f.reservations[DriftEntriesUnread], snap.Unacked[0])
	}
	var (
		lost         []domain.Reservation
		closed, bare []domain.Order
		lookAgain    []domain.OrderID
	)
	for _, r := range snap.Reservations {
		o, persisted := orders[r.OrderID]
		switch {
		case !persisted && !queued[r.OrderID] && now.Sub(r.At) >= uc.opts.Grace:
			lost = append(lost, r)
			lookAgain = append(lookAgain, r.OrderID)
		case persisted && !o.Status.HoldsStock():
			closed = append(closed, o)
			lookAgain = append(lookAgain, o.ID)
		}
	}
	for _, o := range ledger.Orders {
		if o.Status.HoldsStock() && !reserved[o.ID] {
			bare = append(bare, o)
			lookAgain = append(lookAgain, o.ID)
		}
	}
	if len(lookAgain) == 0 {
		return nil
	}
	holds, err := uc.audit.Holds(ctx, ledger.Voucher.ID, lookAgain)
	if err != nil {
		return err
	}
	for _, r := range lost {
		if holds[r.OrderID] {
			f.addReservation(DriftReservationWithoutOrder, r)
		}
	}
	for _, o := range closed {
		if holds[o.ID] {
			f.addOrder(DriftClosedStillReserved, o)
		}
	}
	for _, o := range bare {
		if !holds[o.ID] {
			f.addOrder(DriftOrderWithoutReservation, o)
		}
	}
	return nil
}

// repair fixes what one voucher's findings name, in an order where each fix leaves
// the next one's inputs right: the database's counter first (a rebuild reads it), then
// Redis's records, then Redis's remaining count from its records.
func (uc *Reconcile) repair(ctx context.Context, rec *VoucherReconciliation, snap ports.StockSnapshot, f *findings) {
	uc.repairCounterAndState(ctx, rec, f)
	uc.repairRecords(ctx, rec, f)
	if snap.Present && (f.has(DriftStockMismatch) || f.has(DriftOrderWithoutReservation)) {
		_, err := uc.audit.Recount(ctx, rec.VoucherID)
		rec.mark(DriftStockMismatch, err)
	}
}

// repairCounterAndState recounts the database's sold counter, then rebuilds a sale
// state that vanished: the rebuilt stock is the voucher's stock less its sold units,
// so without a trustworthy count it would put units held by live orders back on sale.
func (uc *Reconcile) repairCounterAndState(ctx context.Context, rec *VoucherReconciliation, f *findings) {
	if !f.has(DriftSoldMismatch) && !f.has(DriftSaleStateMissing) {
		return
	}
	_, err := uc.ledger.RecountSold(ctx, rec.VoucherID)
	if err != nil {
		err = fmt.Errorf("recount sold units: %w", err)
	}
	rec.mark(DriftSoldMismatch, err)
	if !f.has(DriftSaleStateMissing) {
		return
	}
	if err != nil {
		rec.mark(DriftSaleStateMissing, fmt.Errorf("not rebuilt: %w", err))
		return
	}
	rec.mark(DriftSaleStateMissing, uc.recover.Handle(ctx, RecoverCmd{Voucher: rec.VoucherID, Reason: RecoverMissing}))
}

// repairRecords fixes Redis's records: a live order's reservation restored, a closed
// order's units released, a queue no worker reads read again, a lost reservation
// queued again.
func (uc *Reconcile) repairRecords(ctx context.Context, rec *VoucherReconciliation, f *findings) {
	if f.has(DriftOrderWithoutReservation) {
		bare := f.orders[DriftOrderWithoutReservation]
		oks, err := uc.audit.Restore(ctx, bare...)
		for i, o := range bare {
			if err == nil && !oks[i] {
				err = fmt.Errorf("order %s: not restored (it closed since, or the sale state is gone)", o.ID)
			}
		}
		rec.mark(DriftOrderWithoutReservation, err)
	}
	if f.has(DriftClosedStillReserved) {
		var errs []error
		for _, o := range f.orders[DriftClosedStillReserved] {
			_, err := uc.compensate.Handle(ctx, o)
			errs = append(errs, err)
		}
		rec.mark(DriftClosedStillReserved, firstErr(errs))
	}
	if f.has(DriftEntriesUnread) {
		// Requeued, the oldest entry puts the voucher back among the queues the
		// workers read, and they read its other entries with it (persisting is
		// idempotent, so the copy is harmless).
		rec.mark(DriftEntriesUnread, uc.audit.Requeue(ctx, f.reservations[DriftEntriesUnread][0]))
	}
	if f.has(DriftReservationWithoutOrder) {
		var errs []error
		for _, r := range f.reservations[DriftReservationWithoutOrder] {
			errs = append(errs, uc.audit.Requeue(ctx, r))
		}
		rec.mark(DriftReservationWithoutOrder, firstErr(errs))
	}
}

func firstErr(errs []error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
