package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/uptrace/bun"

	"github.com/seckill/seckill/domain"
	"github.com/seckill/seckill/ports"
)

var (
	_ ports.Orders        = (*Orders)(nil)
	_ ports.VoucherOrders = (*Orders)(nil)
)

// Orders is a ports.Orders kept in the orders table. Persisting orders also moves the
// sold counters of their vouchers, in the same transaction.
type Orders struct {
	db *bun.DB
	// events says to write the webhook events of each change (WithOutbox).
	events bool
}

// NewOrders returns an Orders that stores through db.
func NewOrders(db *bun.DB) *Orders {
	return &Orders{db: db}
}

// WithOutbox returns an Orders that also writes the webhook event of each change of
// an order's status to the outbox (webhook_outbox), in the change's transaction:
// order.awaiting_payment and order.failed from Persist, order.paid, order.cancelled
// and order.expired from Transition and ExpireDue, voucher.sold_out from the Persist
// in which a voucher's sold counter reaches its stock, and campaign.sold_out from the
// one in which a campaign's sold reaches its cap.
func (s *Orders) WithOutbox() *Orders {
	return &Orders{db: s.db, events: true}
}

// The reasons Persist gives for its Failed and VoucherGone results.
const (
	reasonLiveOrder    = "user already holds a live order for this voucher"
	reasonFailedBefore = "stored as failed by an earlier delivery"
	reasonSoldFull     = "sold counter full"
	reasonVoucherGone  = "voucher does not exist"
	// reasonCampaignCap: the voucher's counter had room, its campaign's cap had not.
	reasonCampaignCap = "campaign cap full"
	// reasonCampaignLimit: the order would take its user past the campaign's per-user
	// limit across its vouchers.
	reasonCampaignLimit = "campaign per-user limit"
)

// campaignLimitCheck names what refuses an order that would take its user past a
// campaign's per-user limit: the check_violation the campaign_units trigger raises
// (migration 20261210000000_campaigns).
const campaignLimitCheck = "campaign_units_limit_check"

// persistAttempts bounds how often Persist starts over after the foreign key reported a
// missing voucher. The second attempt leaves out the vouchers found missing; a third
// only runs when another vanished in between, and nothing deletes vouchers today.
const persistAttempts = 3

// ReadCommitted is the isolation Persist relies on in PostgreSQL, whatever the
// server's default: each statement sees what committed before it, and a guarded update
// waits for a concurrent one and re-checks its guard against the counter that one
// left, where a stricter level would fail the transaction instead. SQLite has one
// level: a write transaction runs alone (see rowLock), which is stricter still and
// never fails for it; its driver ignores the option. Every write transaction of this
// package runs at it, and so does the postgres stock strategy's grab
// (adapters/strategies/sqlstock); read it, never change it.
var ReadCommitted = &sql.TxOptions{Isolation: sql.LevelReadCommitted}

// orderRow is a row of the orders table. released_at is left out: inserts leave it
// NULL (not released), the domain never reads it, and the statements that change it
// name it.
type orderRow struct {
	bun.BaseModel `bun:"table:orders,alias:o"`

	ID        string    `bun:"id,pk"`
	VoucherID int64     `bun:"voucher_id"`
	UserID    int64     `bun:"user_id"`
	Quantity  int       `bun:"quantity"`
	Status    string    `bun:"status"`
	CreatedAt time.Time `bun:"created_at"`
	// ExpiresAt is the payment deadline recorded with the order; NULL (zero) for one
	// stored before deadlines were, or by an older instance: then it is created_at
	// plus the window of whoever reads it (domain.PaymentWindow.ExpiresAt).
	ExpiresAt time.Time `bun:"expires_at,nullzero"`
	UpdatedAt time.Time `bun:"updated_at"`
}

func newOrderRow(r domain.Reservation, status domain.OrderStatus) orderRow {
	return orderRow{
		ID:        string(r.OrderID),
		VoucherID: int64(r.VoucherID),
		UserID:    int64(r.UserID),
		Quantity:  r.Quantity,
		Status:    string(status),
		CreatedAt: r.At.UTC(),
		ExpiresAt: r.Expires.UTC(),
		UpdatedAt: now(),
	}
}

// InsertOrder stores r as an awaiting_payment order in tx and adds its units to its
// voucher's sold counter, as the fulfillment's Persist does for a reservation: for a
// caller that judged the grab in tx under the voucher's lock (LockVoucher), the
// postgres stock strategy (adapters/strategies/sqlstock), whose reserved grab is an
// order at once. The order is stored under r.OrderID with created_at r.At and
// expires_at r.Expires, in UTC. The live unique index refusing a second live order of
// the user, or the counter refusing to pass the stock, is an error: the caller's
// judgement ruled both out.
func InsertOrder(ctx context.Context, tx bun.Tx, r domain.Reservation) error {
	row := newOrderRow(r, domain.StatusAwaitingPayment)
	if _, err := tx.NewInsert().Model(&row).Exec(ctx); err != nil {
		return fmt.Errorf("insert order: %w", err)
	}
	moved, err := moveSold(ctx, tx, r.VoucherID, r.Quantity)
	if err != nil {
		return err
	}
	if moved == nil {
		return fmt.Errorf("voucher %s: sold counter refused %d units", r.VoucherID, r.Quantity)
	}
	return nil
}

func (r orderRow) order() domain.Order {
	return domain.Order{
		ID:        domain.OrderID(r.ID),
		VoucherID: domain.VoucherID(r.VoucherID),
		UserID:    domain.UserID(r.UserID),
		Quantity:  r.Quantity,
		Status:    domain.OrderStatus(r.Status),
		CreatedAt: r.CreatedAt.UTC(),
		ExpiresAt: r.ExpiresAt.UTC(),
	}
}

// Get returns the order with id, or domain.ErrNotFound.
func (s *Orders) Get(ctx context.Context, id domain.OrderID) (domain.Order, error) {
	var row orderRow
	err := s.db.NewSelect().Model(&row).Where("o.id = ?", string(id)).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return domain.Order{}, fmt.Errorf("get order %s: %w", id, domain.ErrNotFound)
	}
	if err != nil {
		return domain.Order{}, fmt.Errorf("get order %s: %w", id, Classify(err))
	}
	return row.order(), nil
}

// ListByUser returns one page of the user's orders (of q.Voucher only, when not 0),
// newest first by (created_at, id), at most q.Limit. The page after one is asked for
// with q.After, the key of the last order it held, and read from there through the
// index on (user_id, created_at, id) (keyset paging: no OFFSET, so a deep page costs
// what the first does). No orders is an empty, non-nil slice. A q.Limit below 1
// returns a *domain.ValidationError.
func (s *Orders) ListByUser(ctx context.Context, user domain.UserID, q ports.OrderQuery) ([]domain.Order, error) {
	if q.Limit < 1 {
		return nil, domain.Invalid("limit", "must be at least 1")
	}
	var rows []orderRow
	sel := s.db.NewSelect().Model(&rows).Where("o.user_id = ?", int64(user))
	if q.Voucher != 0 {
		sel = sel.Where("o.voucher_id = ?", int64(q.Voucher))
	}
	if q.After != nil {
		// A row value compares both columns at once, in PostgreSQL and SQLite alike,
		// and PostgreSQL seeks the index to it.
		sel = sel.Where("(o.created_at, o.id) < (?, ?)", q.After.CreatedAt.UTC(), string(q.After.ID))
	}
	if err := sel.Order("o.created_at DESC", "o.id DESC").Limit(int64(q.Limit)).Scan(ctx); err != nil {
		return nil, fmt.Errorf("list orders of user %s: %w", user, Classify(err))
	}
	out := make([]domain.Order, 0, len(rows))
	for _, r := range rows {
		out = append(out, r.order())
	}
	return out, nil
}

// ListByVoucher returns one page of the voucher's orders (in q.Status only, when not
// empty), by id ascending, at most q.Limit, after q.After when not empty: read in id
// order from the cursor on — a range of the index on (voucher_id, id), or of the
// primary key when the voucher holds most orders — never sorted (keyset paging: a deep
// page costs what the first does). A status filter reads through that range until the
// page is full, so a page of a rare status may read many of the voucher's orders (no
// index on the status serves it: fulfillment would pay for one on every write). No
// orders is an empty, non-nil slice. A q.Limit below 1 returns a
// *domain.ValidationError.
//
// Each page is its own short read: no transaction lives from one page to the next, so
// paging through a million orders holds no snapshot or lock that fulfillment, the
// sweeper or vacuum would wait for. On PostgreSQL the page is read in a read-only
// transaction of its own only to plan it: bitmap scans, sequential scans and sorts
// off, so it is read in order from its cursor even when the table's statistics lag (a
// million orders just arrived and the planner expects a few; see Ledger) — else each
// page would read and sort the voucher's every order, or, filtered, the whole table.
// On SQLite it is one statement (a transaction there would take the write lock).
func (s *Orders) ListByVoucher(ctx context.Context, voucher domain.VoucherID, q ports.VoucherOrderQuery) ([]domain.Order, error) {
	if q.Limit < 1 {
		return nil, domain.Invalid("limit", "must be at least 1")
	}
	rows := make([]orderRow, 0, q.Limit)
	read := func(ctx context.Context, db bun.IDB) error {
		sel := db.NewSelect().Model(&rows).Where("o.voucher_id = ?", int64(voucher))
		if q.Status != "" {
			sel = sel.Where("o.status = ?", string(q.Status))
		}
		if q.After != "" {
			sel = sel.Where("o.id > ?", string(q.After))
		}
		return sel.Order("o.id").Limit(int64(q.Limit)).Scan(ctx)
	}
	var err error
	if IsSQLite(s.db) {
		err = read(ctx, s.db)
	} else {
		err = s.db.RunInTx(ctx, readOnly, func(ctx context.Context, tx bun.Tx) error {
			if _, err := tx.ExecContext(ctx, pageInOrder); err != nil {
				return fmt.Errorf("plan the page: %w", err)
			}
			return read(ctx, tx)
		})
	}
	if err != nil {
		return nil, fmt.Errorf("list orders of voucher %s: %w", voucher, Classify(err))
	}
	out := make([]domain.Order, len(rows))
	for i, r := range rows {
		out[i] = r.order()
	}
	return out, nil
}

// readOnly is the transaction of a read that needs one only for its settings.
var readOnly = &sql.TxOptions{Isolation: sql.LevelReadCommitted, ReadOnly: true}

// pageInOrder has PostgreSQL plan the rest of the transaction as a read in index
// order (see ListByVoucher), in one statement.
const pageInOrder = "SELECT set_config('enable_bitmapscan', 'off', true), set_config('enable_seqscan', 'off', true), " +
	"set_config('enable_sort', 'off', true)"
