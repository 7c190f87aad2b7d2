// Package sqlstock is the postgres stock strategy (SECKILL_STOCK_STRATEGY=postgres): a
// grab judged and taken by one database transaction holding the voucher's row lock
// instead of the Redis script, kept to measure against it (`seckill-lab compare`). It
// keeps the sale state in adapters/sqlstore's tables through what that package exports
// (LockVoucher, InsertOrder, Orders, the status lists, Classify, Conn). Only
// cmd/seckill's strategy choice imports it (ports/architecture_test.go); the default
// path, the script, does not.
package sqlstock

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"

	"github.com/uptrace/bun"

	"github.com/seckill/seckill/adapters/sqlstore"
	"github.com/seckill/seckill/domain"
	"github.com/seckill/seckill/ports"
)

var (
	_ ports.Stock         = (*Stock)(nil)
	_ ports.StockAudit    = (*Stock)(nil)
	_ ports.CampaignStock = (*Stock)(nil)
)

// Stock is a ports.Stock kept in the database alone: the classic design in which a
// grab is one transaction that locks the voucher's row, judges the grab, inserts the
// order and moves the sold counter. No Redis is on the grab path and nothing waits to
// be persisted — a reserved grab is an awaiting_payment order at once — so the
// fulfillment worker has nothing to read. It keeps the three promises with the
// database's own means: the row lock serializes the grabs of a voucher, the live
// unique index refuses a second live order of a user, and the sold CHECK refuses an
// oversell. The price is the lock: the grabs of one voucher run one at a time, each
// several statements long, on a pool of a few dozen connections.
//
// Its sale state is the vouchers row itself (sqlstore's): stock, sold, window, limit,
// paused flag, admission and challenge. So Warm loads nothing, SetPaused leaves the
// flag PauseSale already stored, Edit leaves the terms an edit already stored, and
// Release has nothing to give back (see each).
//
// It is also the ports.StockAudit of that state, so reconciliation and stats read it
// rather than a Redis that holds nothing under this strategy.
//
// Switch a running sale between this strategy and a Redis one only once its stream is
// drained: reservations still queued in Redis are not in sold yet.
type Stock struct {
	db     *bun.DB
	clock  ports.Clock
	window domain.PaymentWindow
}

// New returns a Stock that keeps the sale state in db, judges a grab without a
// time by clock (the sale's clock) and records each order it takes with the deadline
// window sets (its reservation's Expires when the caller set none).
func New(db *bun.DB, clock ports.Clock, window domain.PaymentWindow) *Stock {
	return &Stock{db: db, clock: clock, window: window}
}

// Warm loads nothing and reports ports.WarmPresent: the voucher's row, written when it
// was created, is its sale state, and sold counts what its live orders hold.
func (s *Stock) Warm(context.Context, domain.Voucher) (ports.WarmOutcome, error) {
	return ports.WarmPresent, nil
}

// Reserve takes r.Quantity units of r.VoucherID for r.UserID in one transaction:
//
//	BEGIN; SELECT … FROM vouchers WHERE id = ? FOR NO KEY UPDATE;
//	SELECT id FROM orders WHERE <the user's live order of the voucher>;
//	INSERT INTO orders … 'awaiting_payment'; UPDATE vouchers SET sold = sold + ?; COMMIT
//
// (the lock is sqlstore.LockVoucher's, the insert and the update sqlstore.InsertOrder;
// the row lock is the one the UPDATE takes anyway; unlike FOR UPDATE it does not block
// the foreign-key checks of other transactions' orders). The order is stored under
// r.OrderID with created_at r.At (the clock's time when r.At is zero) and expires_at
// r.Expires (r.At plus the Stock's window when zero). It judges by the
// grab rule (domain.Sale.Judge), at that time to the millisecond, and answers as the
// Redis script does: domain.ErrChallengeRequired, domain.ErrQueueRequired,
// domain.ErrPaused, domain.ErrNotStarted, domain.ErrEnded, a *domain.ValidationError
// (quantity below 1 or above the per-user limit, an empty order id, a user below 1),
// an *domain.AlreadyPurchasedError naming the user's live order, domain.ErrSoldOut,
// or domain.ErrNotFound for an unknown voucher. An unreachable or overloaded database
// is an error wrapping domain.ErrUnavailable.
//
// A waiting room's passes are issued in Redis, which this strategy does not read: it
// cannot know which passes are outstanding. It takes a grab of a waiting room with a
// pass whose signature the caller verified (r.Pass) that has not expired at r.At and
// was not used before: the transaction that takes the grab records the pass in
// used_passes, and a pass found there admits nothing (domain.ErrQueueRequired).
//
// A grab of a campaign's voucher is judged against the campaign's row too (its cap
// and sold units, its per-user limit) and the user's live orders of its other
// vouchers, under the campaign's lock taken before the voucher's: it may answer
// domain.ErrCampaignSoldOut, or an *domain.AlreadyPurchasedError naming the user's
// orders across the campaign. The database's triggers back the judgement, as the
// sold counter's guard backs a voucher's.
func (s *Stock) Reserve(ctx context.Context, r domain.Reservation) error {
	if r.At.IsZero() {
		r.At = s.clock.Now()
	}
	if r.Expires.IsZero() {
		r.Expires = s.window.Deadline(r.At)
	}
	if err := r.Validate(); err != nil {
		return err
	}
	var answer error
	err := s.db.RunInTx(ctx, sqlstore.ReadCommitted, func(ctx context.Context, tx bun.Tx) error {
		var err error
		answer, err = reserveTx(ctx, tx, r)
		return err
	})
	if err != nil {
		return fmt.Errorf("reserve stock: voucher %s: %w", r.VoucherID, sqlstore.Classify(err))
	}
	return answer
}

// reserveTx judges and takes one grab in tx: it reads what the grab rule needs (the
// voucher's row, locked as an edit locks it, and the user's live order), then judges.
// It returns the grab's answer (nil: reserved), or an error when the transaction must
// not commit. A refusal writes nothing, so committing it only releases the lock.
func reserveTx(ctx context.Context, tx bun.Tx, r domain.Reservation) (answer error, err error) {
	campaign, err := campaignSale(ctx, tx, r)
	if errors.Is(err, domain.ErrNotFound) {
		return domain.ErrNotFound, nil
	}
	if err != nil {
		return nil, err
	}
	v, err := sqlstore.LockVoucher(ctx, tx, r.VoucherID)
	if errors.Is(err, domain.ErrNotFound) {
		return domain.ErrNotFound, nil
	}
	if err != nil {
		return nil, err
	}

	// Read after the lock is held, so this statement's snapshot includes every grab
	// of the voucher committed before it.
	var held []string
	err = tx.NewSelect().Table("orders").
		Column("id").
		Where("voucher_id = ?", int64(r.VoucherID)).
		Where("user_id = ?", int64(r.UserID)).
		Where("status IN (?)", bun.List(sqlstore.LiveStatuses)).
		Limit(1).
		Scan(ctx, &held)
	if err != nil {
		return nil, fmt.Errorf("look up the user's order: %w", err)
	}
	var holding domain.OrderID
	if len(held) > 0 {
		holding = domain.OrderID(held[0])
	}
	room := v.Admission == domain.AdmissionWaitingRoom
	state := domain.Sale{Admission: v.Admission, Challenge: v.Challenge,
		Paused: v.Paused, BeginsAt: v.BeginsAt, EndsAt: v.EndsAt,
		PerUserLimit: v.PerUserLimit, Remaining: v.Stock - v.Sold, Campaign: campaign}
	if room && !r.Pass.IsZero() {
		// A campaign's pass is its room's, good for one order of any of its vouchers:
		// it is looked for under all of them (the campaign's row lock, taken above,
		// serializes their grabs as a voucher's serializes its own).
		first, last := passVouchers(r.VoucherID)
		used, err := tx.NewSelect().Model((*usedPassRow)(nil)).Where("p.voucher_id BETWEEN ? AND ?", first, last).
			Where("p.user_id = ?", int64(r.UserID)).Where("p.expires_ms = ?", r.Pass.UnixMilli()).Exists(ctx)
		if err != nil {
			return nil, fmt.Errorf("look up the pass: %w", err)
		}
		state.PassOutstanding = !used
	}
	if refusal := state.Judge(r, holding); refusal != nil {
		return refusal, nil
	}

	// The live unique index and the sold counter's guard and CHECK back the judgement
	// above.
	if err := sqlstore.InsertOrder(ctx, tx, r); err != nil {
		return nil, err
	}
	if room {
		if err := usePass(ctx, tx, r); err != nil {
			return nil, err
		}
	}
	return nil, nil
}

// campaignSale locks r's user's units of the campaign of r's voucher and the campaign,
// and reads its side of the grab
// (domain.CampaignSale): the cap's units left (its cap minus its sold units, the
// units its vouchers' live orders hold), its per-user limit, and what r's user holds
// of its other vouchers. nil for a voucher of no campaign; domain.ErrNotFound when
// the campaign does not exist.
func campaignSale(ctx context.Context, tx bun.Tx, r domain.Reservation) (*domain.CampaignSale, error) {
	id, _ := r.VoucherID.Campaign()
	if id == 0 {
		return nil, nil
	}
	// The user's units row first, then the campaign's: the order every writer of
	// orders takes them in (the expiry sweeper, a cancel, Persist).
	if err := sqlstore.LockUserCampaignUnits(ctx, tx, id, r.UserID); err != nil {
		return nil, err
	}
	c, err := sqlstore.LockCampaign(ctx, tx, id)
	if err != nil {
		return nil, err
	}
	sale := &domain.CampaignSale{PerUserLimit: c.PerUserLimit}
	if c.Cap != nil {
		sale.Capped, sale.CapLeft = true, *c.Cap-c.Sold
	}
	if sale.UserUnits, sale.UserOrders, err = sqlstore.CampaignHoldings(ctx, tx, id, r.UserID, r.VoucherID); err != nil {
		return nil, err
	}
	return sale, nil
}

// WarmCampaign has nothing to load: this strategy judges a campaign's grab by its
// rows (Reserve), which are its terms.
func (s *Stock) WarmCampaign(context.Context, domain.Campaign) error { return nil }

// EditCampaign has nothing to carry: the change is the campaign's row, written in the
// transaction this runs in, whose cap CHECK refuses a cap below the units sold (the
// units this strategy's live orders hold, every one of them stored at its grab).
func (s *Stock) EditCampaign(context.Context, domain.Campaign) error { return nil }

// usedPassRow is a row of used_passes: a waiting room's pass that admitted an order.
type usedPassRow struct {
	bun.BaseModel `bun:"table:used_passes,alias:p"`

	VoucherID int64 `bun:"voucher_id,pk"`
	UserID    int64 `bun:"user_id,pk"`
	// ExpiresMs is the pass's expiry, Unix ms, as its token carries it.
	ExpiresMs int64 `bun:"expires_ms,pk"`
}

// passVouchers returns the range of voucher ids a pass to voucher id may have been used
// under: the voucher alone, or every voucher of its campaign.
func passVouchers(id domain.VoucherID) (int64, int64) {
	room := id.Room()
	if room == id {
		return int64(id), int64(id)
	}
	c, _ := id.Campaign()
	return int64(room), int64(c.Variant(domain.MaxVariants))
}

// usePass records r's pass as used, in the transaction that takes r, and forgets the
// user's passes of the voucher that expired by r.At: they admit nothing anyway, so the
// table holds about one row per user and voucher. The voucher's row lock serializes
// the grabs of the voucher, so no other transaction used the pass since it was looked
// up; the primary key backs that.
func usePass(ctx context.Context, tx bun.Tx, r domain.Reservation) error {
	if _, err := tx.NewDelete().Table("used_passes").Where("voucher_id = ? AND user_id = ? AND expires_ms <= ?",
		int64(r.VoucherID), int64(r.UserID), r.At.UnixMilli()).Exec(ctx); err != nil {
		return fmt.Errorf("forget expired passes: %w", err)
	}
	row := usedPassRow{VoucherID: int64(r.VoucherID), UserID: int64(r.UserID), ExpiresMs: r.Pass.UnixMilli()}
	if _, err := tx.NewInsert().Model(&row).Exec(ctx); err != nil {
		return fmt.Errorf("use the pass: %w", err)
	}
	return nil
}

// Remaining returns stock minus sold of each of ids that exists, in one statement;
// unknown vouchers are absent from the map.
func (s *Stock) Remaining(ctx context.Context, ids ...domain.VoucherID) (map[domain.VoucherID]int, error) {
	left := make(map[domain.VoucherID]int, len(ids))
	if len(ids) == 0 {
		return left, nil
	}
	list := make([]int64, len(ids))
	for i, id := range ids {
		list[i] = int64(id)
	}
	var rows []struct {
		ID   int64 `bun:"id"`
		Left int   `bun:"units_left"`
	}
	err := s.db.NewSelect().Table("vouchers").
		Column("id").
		ColumnExpr("stock - sold AS units_left").
		Where("id IN (?)", bun.List(list)).
		Scan(ctx, &rows)
	if err != nil {
		return nil, fmt.Errorf("read remaining stock: %w", sqlstore.Classify(err))
	}
	for _, r := range rows {
		left[domain.VoucherID(r.ID)] = r.Left
	}
	return left, nil
}

// SetPaused reports whether voucher id exists, and changes nothing: the flag lives in
// the voucher's row, where PauseSale stored it (ports.Vouchers.Update) before
// calling this. Writing it again here could only do harm: WarmVouchers calls this with
// the flag it read a moment earlier, which an admin may have changed since. Called
// under Vouchers.Hold (a recovery), it reads in that transaction (sqlstore.Conn).
func (s *Stock) SetPaused(ctx context.Context, id domain.VoucherID, _ bool) (bool, error) {
	ok, err := sqlstore.Conn(ctx, s.db).NewSelect().Table("vouchers").Where("id = ?", int64(id)).Exists(ctx)
	if err != nil {
		return false, fmt.Errorf("pause sale: %w", sqlstore.Classify(err))
	}
	return ok, nil
}

// Edit writes nothing and reports false: the voucher's row, which Vouchers.Update
// writes, is this strategy's sale state, so the change is there once it commits. A
// removal of more units than are left (stock minus sold) is refused by the row's
// sold CHECK, as domain.ErrNotEnoughUnits.
func (s *Stock) Edit(context.Context, domain.Voucher, ports.EditMode) (bool, error) {
	return false, nil
}

// Release gives nothing back, because there is nothing left to give: under this
// strategy the user's "reservation" is the live order itself, and the transaction that
// closed it (OrderLifecycle.Transition, ExpireDue) also took its units off sold, so
// they were back on sale the moment it committed. Release reports whether o is a
// closed order (cancelled, expired, failed) not yet marked released — the first
// compensation of a closed order reports true, and once Releases.MarkReleased has
// recorded it, false — and false for a live or unknown order. It returns a
// *domain.ValidationError for a quantity below 1, as the Redis strategies do.
//
// So compensation stays correct: it records the release as always and ReleaseClosed
// stops retrying; reconciliation (Snapshot below) counts only live orders as
// reservations, so a closed order never reads as still reserved.
func (s *Stock) Release(ctx context.Context, o domain.Order) (bool, error) {
	if o.Quantity < 1 {
		return false, domain.Invalid("quantity", "must be at least 1")
	}
	ok, err := s.db.NewSelect().Table("orders").
		Where("id = ?", string(o.ID)).
		Where("status IN (?)", bun.List(sqlstore.ClosedStatuses)).
		Where("released_at IS NULL").
		Exists(ctx)
	if err != nil {
		return false, fmt.Errorf("release stock: %w", sqlstore.Classify(err))
	}
	return ok, nil
}

// Snapshot returns voucher id's sale state as this strategy keeps it, read from one
// snapshot: stock, stock minus sold remaining, and each live order as a reservation
// (nothing is ever queued). An unknown voucher is not Present. Reconciliation then
// finds drift only where the database disagrees with itself: a sold counter off its
// live orders.
func (s *Stock) Snapshot(ctx context.Context, id domain.VoucherID) (ports.StockSnapshot, error) {
	ledger, err := sqlstore.NewOrders(s.db).Ledger(ctx, id)
	if errors.Is(err, domain.ErrNotFound) {
		return ports.StockSnapshot{}, nil
	}
	if err != nil {
		return ports.StockSnapshot{}, fmt.Errorf("snapshot stock: %w", err)
	}
	snap := ports.StockSnapshot{
		Present:    true,
		Consistent: true,
		// No queue: the orders are the reservations.
		Read:      true,
		Stock:     ledger.Voucher.Stock,
		Remaining: ledger.Voucher.Stock - ledger.Voucher.Sold,
	}
	for _, o := range ledger.Orders {
		if o.Status.HoldsStock() {
			snap.Reservations = append(snap.Reservations, domain.Reservation{
				OrderID: o.ID, VoucherID: o.VoucherID, UserID: o.UserID, Quantity: o.Quantity, At: o.CreatedAt,
			})
		}
	}
	return snap, nil
}

// Tally returns voucher id's stock and stock minus sold remaining, read from its row;
// nothing is ever queued. An unknown voucher is not Present. Called under
// Orders.UnitsByStatus, it reads in that transaction (sqlstore.Conn).
func (s *Stock) Tally(ctx context.Context, id domain.VoucherID) (ports.StockTally, error) {
	var stock, sold int
	err := sqlstore.Conn(ctx, s.db).NewSelect().Table("vouchers").Column("stock", "sold").Where("id = ?", int64(id)).
		Scan(ctx, &stock, &sold)
	if errors.Is(err, sql.ErrNoRows) {
		return ports.StockTally{}, nil
	}
	if err != nil {
		return ports.StockTally{}, fmt.Errorf("tally stock: %w", sqlstore.Classify(err))
	}
	return ports.StockTally{Present: true, Stock: stock, Remaining: stock - sold}, nil
}

// Restore writes nothing: a live order is its own reservation here, so none can be
// missing and none can outlive its closing. It reports, for each order, whether the
// database agrees with the status given: a live order is live (Holds), a closed one
// is not.
func (s *Stock) Restore(ctx context.Context, os ...domain.Order) ([]bool, error) {
	out := make([]bool, len(os))
	byVoucher := map[domain.VoucherID][]domain.OrderID{}
	for _, o := range os {
		byVoucher[o.VoucherID] = append(byVoucher[o.VoucherID], o.ID)
	}
	for id, orders := range byVoucher {
		held, err := s.Holds(ctx, id, orders)
		if err != nil {
			return out, fmt.Errorf("restore reservation: %w", err)
		}
		for i, o := range os {
			if o.VoucherID == id {
				out[i] = held[o.ID] == o.Status.HoldsStock()
			}
		}
	}
	return out, nil
}

// Holds reports which of orders are live orders of voucher id: under this strategy a
// live order is the reservation.
func (s *Stock) Holds(ctx context.Context, id domain.VoucherID, orders []domain.OrderID) (map[domain.OrderID]bool, error) {
	out := make(map[domain.OrderID]bool, len(orders))
	if len(orders) == 0 {
		return out, nil
	}
	for chunk := range slices.Chunk(orders, 1000) {
		ids := make([]string, len(chunk))
		for i, o := range chunk {
			ids[i] = string(o)
			out[o] = false
		}
		var live []string
		err := s.db.NewSelect().Table("orders").Column("id").
			Where("voucher_id = ?", int64(id)).
			Where("id IN (?)", bun.List(ids)).
			Where("status IN (?)", bun.List(sqlstore.LiveStatuses)).
			Scan(ctx, &live)
		if err != nil {
			return nil, fmt.Errorf("reservations held: %w", sqlstore.Classify(err))
		}
		for _, o := range live {
			out[domain.OrderID(o)] = true
		}
	}
	return out, nil
}

// Requeue does nothing: there is no queue, and every reservation is an order already.
func (s *Stock) Requeue(context.Context, domain.Reservation) error {
	return nil
}

// Restoring does nothing: this strategy's sale state is the database itself.
func (s *Stock) Restoring(context.Context, domain.VoucherID) error { return nil }

// Restored does nothing: this strategy's sale state is the database itself, never
// loaded, so never partly restored.
func (s *Stock) Restored(context.Context, domain.VoucherID) error { return nil }

// Recount recounts voucher id's sold counter from its live orders
// (Orders.RecountSold) and returns the units left, stock minus sold, or
// domain.ErrNotFound for an unknown voucher.
func (s *Stock) Recount(ctx context.Context, id domain.VoucherID) (int, error) {
	sold, err := sqlstore.NewOrders(s.db).RecountSold(ctx, id)
	if err != nil {
		return 0, fmt.Errorf("recount stock: %w", err)
	}
	var stock int
	err = s.db.NewSelect().Table("vouchers").Column("stock").Where("id = ?", int64(id)).Scan(ctx, &stock)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, fmt.Errorf("recount stock: voucher %s: %w", id, domain.ErrNotFound)
	}
	if err != nil {
		return 0, fmt.Errorf("recount stock: %w", sqlstore.Classify(err))
	}
	return stock - sold, nil
}
