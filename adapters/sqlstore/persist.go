package sqlstore

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/pgdialect"

	"github.com/seckill/seckill/domain"
	"github.com/seckill/seckill/ports"
)

// Persist stores reservations as orders in one transaction and returns one result per
// reservation, in input order:
//
//   - Persisted: inserted as an awaiting_payment order (created_at is the reservation's
//     At), and its units added to the voucher's sold counter;
//   - AlreadyPersisted: an order with this id exists (a redelivery, or the same id
//     earlier in rs); nothing changed;
//   - Failed: the user already holds another live order for the voucher, the
//     voucher's sold counter has no room left for it, or (a campaign's voucher) its
//     campaign's cap has none or it would take its user past the campaign's per-user
//     limit; it is stored as a failed order (or was, by an earlier delivery: the
//     caller releases its units again, safely), not yet marked released, so
//     Releases.Unreleased finds it until it is;
//   - VoucherGone: the voucher does not exist; nothing is stored for it.
//
// When a voucher's counter (or its campaign's cap) cannot take all of the batch's new
// orders for it, they are kept in order id (grab) order while they fit, skipping any
// too large for what is left, and the rest fail; sold never exceeds stock, nor a
// campaign's sold its cap. A campaign's cap takes the batch's orders voucher by
// voucher, in voucher id order: the stock judged the cap at the grab already, so it
// seldom refuses any here.
//
// An empty rs returns no results and touches nothing. A reservation with an empty
// order id, or a quantity or user below 1, returns a *domain.ValidationError and
// stores nothing. Any other error also means nothing was stored, and the caller may
// retry the same batch.
func (s *Orders) Persist(ctx context.Context, rs []domain.Reservation) ([]ports.PersistResult, error) {
	if len(rs) == 0 {
		return []ports.PersistResult{}, nil
	}
	for _, r := range rs {
		if err := r.Validate(); err != nil {
			return nil, fmt.Errorf("persist orders: order %s: %w", r.OrderID, err)
		}
	}
	// A repeated order id is the same reservation delivered twice: persist the first
	// and let the others answer as a redelivery of it would.
	outcomes, err := s.persist(ctx, ports.FirstOfEach(rs))
	if err != nil {
		return nil, fmt.Errorf("persist orders: %w", Classify(err))
	}
	return ports.AnswerRepeats(rs, outcomes), nil
}

// persist runs the transaction for reservations with distinct order ids. Checking
// that every voucher exists would cost a round trip per batch; instead the foreign key
// reports a missing one, and persist looks up which vouchers are gone and starts over
// without their reservations.
//
// On PostgreSQL the first transaction inserts the orders plainly, as they nearly always
// are: new ids of users holding no other live order. ON CONFLICT DO NOTHING would
// probe the unique indexes for every row before inserting it, a tenth of the server's
// work on a batch; a plain insert checks the same keys as it adds them. When a key is
// there already (a redelivery, a user's second live order), the insert fails, nothing
// of the transaction stays, and persist starts over with ON CONFLICT DO NOTHING, which
// tells each case apart.
//
// Orders of a campaign's voucher are inserted with the rest, as nearly always they
// fit the campaign's per-user limit (the stock judged it at the grab). When one does
// not, the trigger that keeps campaign_units refuses the insert, nothing of the
// transaction stays, and persist starts over inserting each of the batch's orders of
// a campaign's voucher on its own (insertEach), so the trigger refuses only those over
// the limit, which are stored failed.
func (s *Orders) persist(ctx context.Context, rs []domain.Reservation) (map[domain.OrderID]ports.PersistResult, error) {
	gone := make(map[domain.VoucherID]bool)
	optimistic := !IsSQLite(s.db)
	each := false
	for attempt := 1; ; {
		out := make(map[domain.OrderID]ports.PersistResult, len(rs))
		live := make([]domain.Reservation, 0, len(rs))
		for _, r := range rs {
			if gone[r.VoucherID] {
				out[r.OrderID] = ports.PersistResult{OrderID: r.OrderID, Outcome: ports.VoucherGone, Reason: reasonVoucherGone}
				continue
			}
			live = append(live, r)
		}
		if len(live) == 0 {
			return out, nil
		}

		err := s.db.RunInTx(ctx, ReadCommitted, func(ctx context.Context, tx bun.Tx) error {
			return persistTx(ctx, tx, live, out, newOutbox(s.events), optimistic, each)
		})
		if err == nil {
			return out, nil
		}
		kind, name := constraintViolation(err)
		if kind == check && name == campaignLimitCheck && !each {
			optimistic, each = false, true
			continue
		}
		if kind == unique && optimistic {
			optimistic = false
			continue
		}
		if kind != foreignKey || attempt == persistAttempts {
			return nil, err
		}
		attempt++
		missing, err := missingVouchers(ctx, s.db, live)
		if err != nil {
			return nil, err
		}
		for _, v := range missing {
			gone[v] = true
		}
	}
}

// sortInserted returns the reservations of rs the insert stored (ids), by voucher —
// the new orders whose units each voucher's counter must take — and records the
// outcome of the others: those over a campaign's per-user limit (overLimit) and those
// the insert skipped are stored failed (storeSkipped).
func sortInserted(ctx context.Context, tx bun.Tx, rs []domain.Reservation, ids []string, overLimit map[domain.OrderID]bool,
	out map[domain.OrderID]ports.PersistResult) (map[domain.VoucherID][]domain.Reservation, error) {
	inserted := make(map[domain.OrderID]bool, len(ids))
	for _, id := range ids {
		inserted[domain.OrderID(id)] = true
	}
	fresh := make(map[domain.VoucherID][]domain.Reservation)
	var skipped, limited []orderRow
	for _, r := range rs {
		switch {
		case inserted[r.OrderID]:
			fresh[r.VoucherID] = append(fresh[r.VoucherID], r)
			out[r.OrderID] = ports.PersistResult{OrderID: r.OrderID, Outcome: ports.Persisted}
		case overLimit[r.OrderID]:
			limited = append(limited, newOrderRow(r, domain.StatusFailed))
		default:
			skipped = append(skipped, newOrderRow(r, domain.StatusFailed))
		}
	}
	if len(skipped) > 0 {
		if err := storeSkipped(ctx, tx, skipped, reasonLiveOrder, out); err != nil {
			return nil, err
		}
	}
	if len(limited) > 0 {
		if err := storeSkipped(ctx, tx, limited, reasonCampaignLimit, out); err != nil {
			return nil, err
		}
	}
	return fresh, nil
}

// storeSkipped records the outcome of reservations the insert skipped. A skipped
// reservation either has its id stored already, or met what refuses it a live order
// (the user's other live order of the voucher, reason reasonLiveOrder; the campaign's
// per-user limit, reasonCampaignLimit). Storing it as failed tells them apart: a
// failed row is outside the live index and counts in no campaign's units, so only an
// existing id stops it.
func storeSkipped(ctx context.Context, tx bun.Tx, skipped []orderRow, reason string, out map[domain.OrderID]ports.PersistResult) error {
	var failed []string
	err := tx.NewInsert().Model(&skipped).On("CONFLICT (id) DO NOTHING").Returning("id").Scan(ctx, &failed)
	if err != nil {
		return fmt.Errorf("insert failed orders: %w", err)
	}
	stored := make(map[string]bool, len(failed))
	for _, id := range failed {
		stored[id] = true
	}
	var existing []string
	for _, row := range skipped {
		id := domain.OrderID(row.ID)
		if stored[row.ID] {
			out[id] = ports.PersistResult{OrderID: id, Outcome: ports.Failed, Reason: reason}
			continue
		}
		existing = append(existing, row.ID)
		out[id] = ports.PersistResult{OrderID: id, Outcome: ports.AlreadyPersisted}
	}
	if len(existing) == 0 {
		return nil
	}
	// A redelivery of an order an earlier delivery stored as failed answers Failed
	// again: that delivery may have died before returning the units, and the release
	// is idempotent.
	var closed []string
	err = tx.NewSelect().Model((*orderRow)(nil)).Column("id").
		Where("o.id IN (?)", bun.List(existing)).Where("o.status = ?", string(domain.StatusFailed)).
		Scan(ctx, &closed)
	if err != nil {
		return fmt.Errorf("read redelivered orders: %w", err)
	}
	for _, id := range closed {
		out[domain.OrderID(id)] = ports.PersistResult{OrderID: domain.OrderID(id), Outcome: ports.Failed, Reason: reasonFailedBefore}
	}
	return nil
}

// persistTx stores rs in tx and records each one's result in out, and the webhook
// events of what it stored in events, written with one insert at the end: an order
// stored awaiting payment or failed by this transaction (not one an earlier delivery
// stored), a voucher whose sold counter this transaction filled, and a campaign whose
// cap it filled. With each, the orders of a campaign's voucher are inserted one at a
// time (insertEach).
//
// Locks are taken in one order by every Persist, so concurrent batches wait for each
// other instead of deadlocking: order rows sorted by lockOrder, which keeps both
// unique indexes' keys (an id always names the same voucher and user) and the
// campaign_units rows their triggers lock in one order; then campaign rows by id; then
// voucher rows by id, after all order rows, as a cancellation would (order first,
// then its campaign's and its voucher's counters). The campaigns' rows, locked before
// any voucher's, serialize the batches that sell one campaign's vouchers, so the cap's
// guard in moveSold judges against a sold no one else moves meanwhile.
func persistTx(ctx context.Context, tx bun.Tx, rs []domain.Reservation, out map[domain.OrderID]ports.PersistResult, events *outbox,
	optimistic, each bool) error {
	sorted := slices.Clone(rs)
	slices.SortFunc(sorted, lockOrder)
	rows := make([]orderRow, 0, len(sorted))
	for _, r := range sorted {
		rows = append(rows, newOrderRow(r, domain.StatusAwaitingPayment))
	}

	// ON CONFLICT without a target skips both a known id (a redelivery) and a second
	// live order of the user (the partial unique index). RETURNING lists only the rows
	// inserted, in no promised order, so it is scanned into ids of its own, never
	// back into rows.
	var ids []string
	var overLimit map[domain.OrderID]bool
	var err error
	if each {
		ids, overLimit, err = insertEach(ctx, tx, rows)
	} else {
		ids, err = insertOrders(ctx, tx, rows, optimistic)
	}
	if err != nil {
		return fmt.Errorf("insert orders: %w", err)
	}
	fresh, err := sortInserted(ctx, tx, sorted, ids, overLimit, out)
	if err != nil {
		return err
	}

	vouchers := make([]domain.VoucherID, 0, len(fresh))
	for v := range fresh {
		vouchers = append(vouchers, v)
	}
	slices.Sort(vouchers)
	campaigns, err := lockCampaigns(ctx, tx, campaignsOf(vouchers...))
	if err != nil {
		return err
	}
	moved := make(map[domain.CampaignID]int, len(campaigns))
	var soldOut []domain.Voucher
	for _, v := range vouchers {
		refused, full, err := addSold(ctx, tx, v, fresh[v])
		if err != nil {
			return err
		}
		units := 0
		for _, r := range fresh[v] {
			units += r.Quantity
		}
		for _, f := range refused {
			out[f.OrderID] = ports.PersistResult{OrderID: f.OrderID, Outcome: ports.Failed, Reason: f.reason}
			units -= f.Quantity
		}
		if c, _ := v.Campaign(); c != 0 {
			moved[c] += units
		}
		if full != nil {
			soldOut = append(soldOut, *full)
		}
	}
	if !events.enabled {
		return nil
	}
	// A campaign sells out in the batch whose units reach its cap: its row was locked
	// throughout, so its sold moved by exactly the units this batch kept.
	var capped []domain.Campaign
	for _, row := range campaigns {
		c := row.campaign()
		c.Sold += moved[c.ID]
		if c.Cap != nil && row.Sold < *c.Cap && c.Sold >= *c.Cap {
			capped = append(capped, c)
		}
	}
	return persistEvents(ctx, tx, sorted, out, soldOut, capped, events)
}

// lockOrder orders reservations as persistTx writes their rows: those of vouchers of
// no campaign first, by (voucher, user, order id); then those of each campaign's
// vouchers, by (campaign, user, order id), so the campaign_units row of each user
// (which the orders' trigger locks) is met in one order by every transaction, and a
// user's orders are judged against the campaign's per-user limit in grab order.
func lockOrder(a, b domain.Reservation) int {
	ca, _ := a.VoucherID.Campaign()
	cb, _ := b.VoucherID.Campaign()
	if ca != 0 || cb != 0 {
		return cmp.Or(cmp.Compare(ca, cb), cmp.Compare(a.UserID, b.UserID), cmp.Compare(a.OrderID, b.OrderID))
	}
	return cmp.Or(cmp.Compare(a.VoucherID, b.VoucherID), cmp.Compare(a.UserID, b.UserID), cmp.Compare(a.OrderID, b.OrderID))
}

// insertEach inserts rows as insertOrders does with ON CONFLICT DO NOTHING, but each
// order of a campaign's voucher in a statement of its own under a savepoint, in rows'
// order: one the per-user limit's trigger refuses is rolled back alone and returned in
// overLimit, to be stored failed, and the orders after it are judged without it.
func insertEach(ctx context.Context, tx bun.Tx, rows []orderRow) (ids []string, overLimit map[domain.OrderID]bool, err error) {
	var plain, campaign []orderRow
	for _, r := range rows {
		if c, _ := domain.VoucherID(r.VoucherID).Campaign(); c != 0 {
			campaign = append(campaign, r)
		} else {
			plain = append(plain, r)
		}
	}
	if len(plain) > 0 {
		if ids, err = insertOrders(ctx, tx, plain, false); err != nil {
			return nil, nil, err
		}
	}
	overLimit = make(map[domain.OrderID]bool)
	for i := range campaign {
		if _, err := tx.ExecContext(ctx, "SAVEPOINT campaign_order"); err != nil {
			return nil, nil, err
		}
		one := campaign[i : i+1]
		var got []string
		_, insertErr := tx.NewInsert().Model(&one).On("CONFLICT DO NOTHING").Returning("id").Exec(ctx, &got)
		if kind, name := constraintViolation(insertErr); kind == check && name == campaignLimitCheck {
			if _, err := tx.ExecContext(ctx, "ROLLBACK TO SAVEPOINT campaign_order"); err != nil {
				return nil, nil, err
			}
			overLimit[domain.OrderID(one[0].ID)] = true
		} else if insertErr != nil {
			return nil, nil, insertErr
		}
		ids = append(ids, got...)
		if _, err := tx.ExecContext(ctx, "RELEASE SAVEPOINT campaign_order"); err != nil {
			return nil, nil, err
		}
	}
	return ids, overLimit, nil
}

// insertOrders inserts rows (all awaiting payment, stamped alike) and returns the ids
// it inserted: with ON CONFLICT DO NOTHING, or when optimistic (PostgreSQL only) plainly,
// every row or none (the error of the key already there). On PostgreSQL the rows travel
// as one array per column, unnested by the server: a statement of constant shape, so
// the server parses and plans a few array literals instead of a VALUES list of every
// row's values, and the service formats no row by reflection. SQLite, which has no
// arrays, takes the VALUES list.
func insertOrders(ctx context.Context, tx bun.Tx, rows []orderRow, optimistic bool) ([]string, error) {
	var ids []string
	if IsSQLite(tx) {
		_, err := tx.NewInsert().Model(&rows).On("CONFLICT DO NOTHING").Returning("id").Exec(ctx, &ids)
		return ids, err
	}
	orderIDs, vouchers, users, quantities, created := make([]string, len(rows)), make([]int64, len(rows)),
		make([]int64, len(rows)), make([]int64, len(rows)), make([]time.Time, len(rows))
	// A deadline not recorded (zero) is NULL, as the row's nullzero column stores it.
	expires := make([]*time.Time, len(rows))
	for i, r := range rows {
		orderIDs[i], vouchers[i], users[i], quantities[i], created[i] = r.ID, r.VoucherID, r.UserID, int64(r.Quantity), r.CreatedAt
		if !r.ExpiresAt.IsZero() {
			expires[i] = &rows[i].ExpiresAt
		}
	}
	const insert = `INSERT INTO orders (id, voucher_id, user_id, quantity, status, created_at, expires_at, updated_at)
SELECT r.id, r.voucher_id, r.user_id, r.quantity, ?, r.created_at, r.expires_at, ?
FROM unnest(?::text[], ?::bigint[], ?::bigint[], ?::int[], ?::timestamptz[], ?::timestamptz[])
	AS r (id, voucher_id, user_id, quantity, created_at, expires_at)`
	args := []any{rows[0].Status, rows[0].UpdatedAt, pgdialect.Array(orderIDs), pgdialect.Array(vouchers), pgdialect.Array(users),
		pgdialect.Array(quantities), pgdialect.Array(created), pgdialect.Array(expires)}
	if optimistic {
		if _, err := tx.NewRaw(insert, args...).Exec(ctx); err != nil {
			return nil, err
		}
		return orderIDs, nil
	}
	err := tx.NewRaw(insert+"\nON CONFLICT DO NOTHING RETURNING id", args...).Scan(ctx, &ids)
	return ids, err
}

// persistEvents writes the webhook events of a Persist's transaction, in one insert:
// each order it stored (awaiting payment, or failed: not one stored before), in the
// order the rows were inserted, then each voucher it sold out, then each campaign whose
// cap it filled.
func persistEvents(ctx context.Context, tx bun.Tx, sorted []domain.Reservation, out map[domain.OrderID]ports.PersistResult,
	soldOut []domain.Voucher, capped []domain.Campaign, events *outbox) error {
	for _, r := range sorted {
		res := out[r.OrderID]
		var status domain.OrderStatus
		switch {
		case res.Outcome == ports.Persisted:
			status = domain.StatusAwaitingPayment
		case res.Outcome == ports.Failed && res.Reason != reasonFailedBefore:
			status = domain.StatusFailed
		default:
			continue
		}
		o := r.Order(status)
		o.CreatedAt, o.ExpiresAt = o.CreatedAt.UTC(), o.ExpiresAt.UTC()
		if err := events.order(o); err != nil {
			return err
		}
	}
	for _, v := range soldOut {
		if err := events.voucher(domain.EventVoucherSoldOut, v); err != nil {
			return err
		}
	}
	for _, c := range capped {
		if err := events.campaign(domain.EventCampaignSoldOut, c); err != nil {
			return err
		}
	}
	return events.writeTx(ctx, tx)
}

// refusal is a reservation addSold turned into a failed order, and why.
type refusal struct {
	domain.Reservation
	reason string
}

// addSold adds the units of rs, orders of voucher v inserted in tx, to v's sold
// counter (and, through its trigger, to its campaign's). When the counter, or the
// campaign's cap, has no room for all of them it keeps those that fit and turns the
// others into failed orders, which it returns. When the units it added filled the
// counter (sold reached stock), it returns the voucher as it now is. For a campaign's
// voucher the caller holds the campaign's row lock (lockCampaigns).
func addSold(ctx context.Context, tx bun.Tx, v domain.VoucherID, rs []domain.Reservation) ([]refusal, *domain.Voucher, error) {
	units := 0
	for _, r := range rs {
		units += r.Quantity
	}
	moved, err := moveSold(ctx, tx, v, units)
	if err != nil {
		return nil, nil, err
	}
	if moved != nil {
		return nil, filled(moved), nil
	}

	// The guard refused: some of rs cannot be live. The guarded update locked nothing,
	// so lock the counter now that what is left is to be read and used.
	var stock, sold int
	err = tx.NewSelect().Model((*voucherRow)(nil)).
		Column("stock", "sold").
		Where("v.id = ?", int64(v)).
		Apply(rowLock("NO KEY UPDATE")).
		Scan(ctx, &stock, &sold)
	if err != nil {
		return nil, nil, fmt.Errorf("lock voucher %s: %w", v, err)
	}
	capLeft := math.MaxInt
	if c, _ := v.Campaign(); c != 0 {
		// The caller holds the campaign's lock; this reads its sold as this
		// transaction left it.
		var limit *int
		var campaignSold int
		err := tx.NewSelect().Model((*campaignRow)(nil)).Column("cap", "sold").Where("c.id = ?", int64(c)).
			Scan(ctx, &limit, &campaignSold)
		if err != nil {
			return nil, nil, fmt.Errorf("read campaign %s: %w", c, err)
		}
		if limit != nil {
			capLeft = *limit - campaignSold
		}
	}
	byID := slices.Clone(rs)
	slices.SortFunc(byID, func(a, b domain.Reservation) int { return cmp.Compare(a.OrderID, b.OrderID) })
	left, kept := stock-sold, 0
	var refused []refusal
	var refusedIDs []string
	for _, r := range byID {
		switch {
		case r.Quantity > left:
			refused = append(refused, refusal{r, reasonSoldFull})
		case r.Quantity > capLeft:
			refused = append(refused, refusal{r, reasonCampaignCap})
		default:
			left -= r.Quantity
			capLeft -= r.Quantity
			kept += r.Quantity
			continue
		}
		refusedIDs = append(refusedIDs, string(r.OrderID))
	}

	// Until commit the rows are this transaction's alone, so turning them into failed
	// orders is the same as having inserted them failed (their trigger gives their
	// campaign units back too).
	if len(refusedIDs) > 0 {
		_, err = tx.NewUpdate().Model((*orderRow)(nil)).
			Set("status = ?", string(domain.StatusFailed)).
			Set("updated_at = ?", now()).
			Where("o.id IN (?)", bun.List(refusedIDs)).
			Exec(ctx)
		if err != nil {
			return nil, nil, fmt.Errorf("fail orders of voucher %s: %w", v, err)
		}
	}
	if kept == 0 {
		return refused, nil, nil
	}
	moved, err = moveSold(ctx, tx, v, kept)
	if err != nil {
		return nil, nil, err
	}
	if moved == nil {
		// Impossible while the rows are locked; refuse to commit rather than guess.
		return nil, nil, fmt.Errorf("voucher %s: sold counter refused %d units after leaving room for them", v, kept)
	}
	return refused, filled(moved), nil
}

// filled returns the voucher of row when its sold counter is full, nil otherwise.
func filled(row *voucherRow) *domain.Voucher {
	if row.Sold < row.Stock {
		return nil
	}
	v := row.voucher()
	return &v
}

// moveSold adds units to v's sold counter unless that would take it past the stock
// or, for a campaign's voucher, take the campaign's sold past its cap, and returns
// the voucher's row as it left it, or nil when it did not. The cap is judged here,
// in the guard, so the campaigns' CHECK, which would fail the whole transaction, never
// has to refuse: the caller holds the campaign's lock, so its sold cannot move
// between the guard's read and the trigger's write.
func moveSold(ctx context.Context, tx bun.Tx, v domain.VoucherID, units int) (*voucherRow, error) {
	var rows []voucherRow
	q := tx.NewUpdate().Model((*voucherRow)(nil)).
		Set("sold = sold + ?", units).
		Where("v.id = ?", int64(v)).
		Where("v.sold + ? <= v.stock", units)
	if c, _ := v.Campaign(); c != 0 {
		over := tx.NewSelect().Model((*campaignRow)(nil)).Column("id").
			Where("c.id = ?", int64(c)).Where("c.sold + ? > c.cap", units)
		q = q.Where("NOT EXISTS (?)", over)
	}
	_, err := q.Returning(voucherColumns).Exec(ctx, &rows)
	if err != nil {
		return nil, fmt.Errorf("move sold of voucher %s: %w", v, err)
	}
	if len(rows) == 0 {
		return nil, nil
	}
	return &rows[0], nil
}

// missingVouchers returns the vouchers of rs that do not exist.
func missingVouchers(ctx context.Context, db bun.IDB, rs []domain.Reservation) ([]domain.VoucherID, error) {
	want := make([]int64, 0, len(rs))
	for _, r := range rs {
		want = append(want, int64(r.VoucherID))
	}
	var found []int64
	err := db.NewSelect().Model((*voucherRow)(nil)).
		Column("id").
		Where("v.id IN (?)", bun.List(want)).
		Scan(ctx, &found)
	if err != nil {
		return nil, fmt.Errorf("look up vouchers: %w", err)
	}
	var missing []domain.VoucherID
	for _, id := range want {
		if !slices.Contains(found, id) && !slices.Contains(missing, domain.VoucherID(id)) {
			missing = append(missing, domain.VoucherID(id))
		}
	}
	return missing, nil
}
