package redisstore

import (
	"cmp"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/domain"
	"github.com/seckill/seckill/ports"
)

// auditPage is how many pending or stream entries Snapshot asks for at a time.
var auditPage int64 = 1000

// metaFields are the fields of a complete sale state (Keys.Meta); a hash missing any
// of them is partial and counts as absent. The scripts' twin is SALE_STATE in
// prelude.lua.
var metaFields = []string{"stock", "remaining", "begins", "ends", "limit", "expire"}

// Audit is a ports.StockAudit over the sale state Stock keeps: it reads a voucher's
// whole state for reconciliation and stats, and repairs it. Every repair is one
// script, idempotent, and safe while the sale is live.
type Audit struct{ stateReader }

var _ ports.StockAudit = (*Audit)(nil)

// NewAudit returns an Audit working through client. It uses opts.Prefix and opts.Group
// (defaults as for NewStock); opts.Grace does not matter to it.
func NewAudit(client redis.UniversalClient, opts Options) *Audit {
	return &Audit{newStateReader(client, opts)}
}

// Snapshot returns what Redis holds for voucher id: its stock and remaining units, the
// reservations its users hold (sorted by order id) and its queue's unacknowledged
// entries (in queue order). A voucher whose sale state is missing or partial is not
// Present, and nothing else is read. A reservation record or queue entry that cannot
// be decoded is left out; a sale state whose stock or remaining is not a number is an
// error.
//
// No command reads more than a page (auditPage entries), so a voucher with a million
// reservations never holds Redis up; the reads are spread over many commands, and a
// snapshot taken during a sale is not one moment's state. What it guarantees:
//
//  1. The sale state, its change counter ('gen', bumped by every script that changes
//     the remaining or the held units) and the consumer group's position (its last
//     delivered entry) are read first, in one MULTI/EXEC.
//  2. The reservations are read next with HSCAN: every reservation held throughout
//     the scan is in Reservations (once: HSCAN may repeat one, and repeats are
//     dropped); one taken or released during it may or may not be.
//  3. The change counter is read again: when it has not moved, nothing changed the
//     remaining or the held units during 1–3, so Remaining and Reservations are one
//     moment's state and Consistent is true.
//  4. The queue's entries are read last, a page at a time: first the entries after the
//     group's position (not delivered then), with XRANGE; then the group's pending
//     entries up to that position, with XPENDING, and their fields with XRANGE. An
//     entry moves one way only: appended, delivered (pending), acknowledged. So every
//     entry unacknowledged throughout the Snapshot is in Unacked, none acknowledged
//     before it began is, and one appended or acknowledged meanwhile may or may not be.
//     Acknowledged entries not yet trimmed are never counted: they are neither pending
//     nor after the group's position.
//
// That is enough for reconciliation, as long as the database is read after Snapshot
// returns. Reserve records a reservation and appends its entry in one script, so the
// entry of every reservation in Reservations was appended before step 4 began; it is
// in Unacked unless it was acknowledged, and an entry is acknowledged only after its
// order was committed to the database. A reservation found neither in Unacked nor in
// the database read afterwards is therefore really lost, not merely in flight. What a
// Snapshot cannot prove on its own is an absence: a reservation taken during step 2
// may be missing from Reservations while its order is already in the database read
// afterwards; reconciliation looks again (Holds) before it calls that drift.
//
// A stream without the consumer group counts all its entries as unacknowledged: the
// queue recreates a lost group at the stream's start and delivers them all again.
func (a *Audit) Snapshot(ctx context.Context, id domain.VoucherID) (ports.StockSnapshot, error) {
	stream := a.keys.Stream(id)
	var (
		meta   *redis.SliceCmd
		exists *redis.IntCmd
		groups *redis.XInfoGroupsCmd
	)
	// Exec reports the first failed command; XINFO fails on a missing stream, which
	// EXISTS tells apart, so each command is checked below.
	_, _ = a.client.TxPipelined(ctx, func(tx redis.Pipeliner) error {
		meta = tx.HMGet(ctx, a.keys.Meta(id), append(slices.Clip(metaFields), "gen")...)
		exists = tx.Exists(ctx, stream)
		groups = tx.XInfoGroups(ctx, stream)
		return nil
	})
	for _, cmd := range []redis.Cmder{meta, exists} {
		if err := cmd.Err(); err != nil {
			return ports.StockSnapshot{}, fmt.Errorf("snapshot stock: %w", err)
		}
	}

	var snap ports.StockSnapshot
	values := meta.Val()
	for _, v := range values[:len(metaFields)] {
		if v == nil {
			return ports.StockSnapshot{}, nil
		}
	}
	stockField, _ := values[0].(string)
	leftField, _ := values[1].(string)
	stock, err1 := strconv.Atoi(stockField)
	left, err2 := strconv.Atoi(leftField)
	if err1 != nil || err2 != nil {
		return ports.StockSnapshot{}, fmt.Errorf("snapshot stock: voucher %d: malformed sale state %v", id, values)
	}
	snap.Present, snap.Stock, snap.Remaining = true, stock, left
	// The active set lives in a slot of its own: one command more.
	switch err := a.client.ZScore(ctx, a.keys.Active(), id.String()).Err(); {
	case err == nil:
		snap.Read = true
	case !errors.Is(err, redis.Nil):
		return ports.StockSnapshot{}, fmt.Errorf("snapshot stock: %w", err)
	}

	var err error
	if snap.Reservations, err = a.scanReservations(ctx, id); err != nil {
		return ports.StockSnapshot{}, fmt.Errorf("snapshot stock: %w", err)
	}
	gen, err := a.generation(ctx, id)
	if err != nil {
		return ports.StockSnapshot{}, fmt.Errorf("snapshot stock: %w", err)
	}
	before, _ := values[len(metaFields)].(string)
	snap.Consistent = gen == cmp.Or(before, "0")

	if exists.Val() == 0 {
		return snap, nil
	}
	gs, err := groups.Result()
	if err != nil {
		return ports.StockSnapshot{}, fmt.Errorf("snapshot stock: %w", err)
	}
	if snap.Unacked, err = a.unackedEntries(ctx, id, gs); err != nil {
		return ports.StockSnapshot{}, fmt.Errorf("snapshot stock: %w", err)
	}
	return snap, nil
}

// unackedEntries reads, a page at a time, the entries of voucher id's stream that the
// group (among gs, the stream's groups as read at the snapshot's start) has not
// acknowledged: those after its position, then those pending up to it (step 4 of
// Snapshot), decoded; malformed ones are left out.
func (a *Audit) unackedEntries(ctx context.Context, id domain.VoucherID, gs []redis.XInfoGroup) ([]domain.Reservation, error) {
	stream := a.keys.Stream(id)
	last, pending := "0-0", int64(0)
	for _, g := range gs {
		if g.Name == a.group {
			last, pending = g.LastDeliveredID, g.Pending
		}
	}
	undelivered, err := a.entriesAfter(ctx, stream, last)
	if err != nil {
		return nil, err
	}
	var delivered []redis.XMessage
	// Nothing pending at the group's position: any entry pending now was delivered
	// since, so it is after the position and already read.
	if pending > 0 {
		if delivered, err = a.pendingUpTo(ctx, stream, last); err != nil {
			return nil, err
		}
	}
	var out []domain.Reservation
	for _, m := range append(delivered, undelivered...) {
		if r, err := decodeFields(id, m.Values); err == nil {
			out = append(out, r)
		}
	}
	return out, nil
}

// entriesAfter returns the entries of stream after id, a page at a time.
func (a *Audit) entriesAfter(ctx context.Context, stream, id string) ([]redis.XMessage, error) {
	var out []redis.XMessage
	for {
		msgs, err := a.client.XRangeN(ctx, stream, "("+id, "+", auditPage).Result()
		if err != nil {
			return nil, err
		}
		out = append(out, msgs...)
		if int64(len(msgs)) < auditPage {
			return out, nil
		}
		id = msgs[len(msgs)-1].ID
	}
}

// pendingUpTo returns the group's pending entries of stream up to id (inclusive), in
// order, a page of XPENDING at a time, each page's fields read in one pipelined round
// trip. Pending entries deleted from the stream have no fields and are left out.
func (a *Audit) pendingUpTo(ctx context.Context, stream, id string) ([]redis.XMessage, error) {
	var out []redis.XMessage
	for start := "-"; ; {
		rows, err := a.client.XPendingExt(ctx, &redis.XPendingExtArgs{
			Stream: stream, Group: a.group, Start: start, End: id, Count: auditPage,
		}).Result()
		if redis.HasErrorPrefix(err, "NOGROUP") {
			// The group was lost since its position was read: its entries were all
			// after that position, or will be delivered again from the start.
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		if len(rows) > 0 {
			pipe := a.client.Pipeline()
			cmds := make([]*redis.XMessageSliceCmd, len(rows))
			for i, row := range rows {
				cmds[i] = pipe.XRangeN(ctx, stream, row.ID, row.ID, 1)
			}
			if _, err := pipe.Exec(ctx); err != nil {
				return nil, err
			}
			for _, cmd := range cmds {
				out = append(out, cmd.Val()...)
			}
		}
		if int64(len(rows)) < auditPage {
			return out, nil
		}
		// The id after the last one, not "(" and the last one: XPENDING takes an
		// exclusive start only since Redis 6.2, and the embedded server not at all.
		last, err := parseStreamID(rows[len(rows)-1].ID)
		if err != nil {
			return nil, err
		}
		start = last.next().String()
	}
}

// restoreScript makes Redis name the database's live orders as their users'
// reservations, replacing what the users' entries named, except orders released
// since; the remaining units are left alone. Its contract is at the top of
// restore.lua.
//
//go:embed restore.lua
var restoreSrc string
var restoreScript = newScript(restoreSrc)

// Restore makes Redis agree with the database about each of os: a live order is named
// as its user's reservation, with its record, as reserve.lua writes them — an entry of
// the user that named another order is replaced and that order's record dropped —
// unless the order was released since (it is in the released set: Release put it
// there when the order closed); a closed order joins the released set, and its entry
// and record are dropped while its user's entry names it. It reports, per order,
// whether Redis agrees with it now; false for every order of a voucher without sale
// state. It does not touch the remaining units (Recount does) and does not queue
// (Requeue does). Applied twice it changes nothing the second time. It writes
// restoreChunk orders per script call (about a millisecond of Redis each) and
// pipelines restorePipeline calls per round trip. It returns a *domain.ValidationError,
// before writing anything, for a quantity below 1, an empty order id or a user id
// below 1.
func (a *Audit) Restore(ctx context.Context, os ...domain.Order) ([]bool, error) {
	for _, o := range os {
		if err := o.Reservation().Validate(); err != nil {
			return nil, err
		}
	}
	out, err := a.restoreBatched(ctx, os)
	if err != nil {
		return out, fmt.Errorf("restore reservation: %w", err)
	}
	return out, nil
}

// requeueScript appends a reservation to the voucher's stream, creating the stream and
// the consumer group if they are missing, while the voucher has sale state. Its
// contract is at the top of requeue.lua.
//
//go:embed requeue.lua
var requeueSrc string
var requeueScript = newScript(requeueSrc)

// Requeue appends r to its voucher's stream with the fields Reserve writes, so a
// fulfillment worker persists it; it creates the stream's consumer group if it is
// missing (at the stream's start, as Warm does) and registers the voucher with the
// queue. Each call appends one more entry; persisting is idempotent by order id, so an
// entry too many is harmless. It returns an error wrapping domain.ErrNotFound when the
// voucher has no sale state (the stream could not expire with the sale), and a
// *domain.ValidationError for a quantity below 1, an empty order id or a user id
// below 1.
func (a *Audit) Requeue(ctx context.Context, r domain.Reservation) error {
	if err := r.Validate(); err != nil {
		return err
	}
	keys := []string{a.keys.Stream(r.VoucherID), a.keys.Meta(r.VoucherID)}
	queued, err := requeueScript.Run(ctx, a.client, keys, append([]any{a.group, r.Quantity}, entryValues(r, "")...)...).Int()
	if err != nil {
		return fmt.Errorf("requeue reservation: %w", err)
	}
	if queued == 0 {
		return fmt.Errorf("requeue reservation: voucher %d: %w", r.VoucherID, domain.ErrNotFound)
	}
	// As in Warm: the registry and the active set live in other slots, and are written
	// once the entry is in the stream. A voucher whose sale ended may have left the
	// active set: it comes back (scored now, so as ended) until the queue has read it
	// all again. A live voucher keeps its score.
	pipe := a.client.Pipeline()
	pipe.SAdd(ctx, a.keys.Registry(), r.VoucherID.String())
	pipe.ZAddNX(ctx, a.keys.Active(), redis.Z{Score: float64(time.Now().UnixMilli()), Member: r.VoucherID.String()})
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("requeue reservation: register voucher: %w", err)
	}
	return nil
}

// recountScript sets the remaining units to stock minus the held units the caller
// counted, only if 'gen' is still what the caller read before counting, and publishes
// the voucher id on the restock channel when that raised them. Its contract is at the
// top of recount.lua.
//
//go:embed recount.lua
var recountSrc string
var recountScript = newScript(recountSrc)

// Recount sets voucher id's remaining units to its stock minus the units its recorded
// reservations hold (never below 0) and returns the new value. When that puts units
// back on sale it announces a restock, as Release does. It returns an error wrapping
// domain.ErrNotFound when the voucher has no sale state, and an error naming a
// reservation record it cannot read (changing nothing: guessing could sell units
// twice), or one wrapping domain.ErrUnavailable when the reservations kept changing
// through every count it tried (changing nothing: try again later). How it counts a
// million reservations without holding Redis up: see recountPaged.
func (a *Audit) Recount(ctx context.Context, id domain.VoucherID) (int, error) {
	left, err := a.recountPaged(ctx, id)
	if err != nil {
		return 0, fmt.Errorf("recount stock: %w", err)
	}
	return left, nil
}

// restoringScript marks a sale state "restoring"; its contract is at its top.
//
//go:embed restoring.lua
var restoringSrc string
var restoringScript = newScript(restoringSrc)

// Restoring marks voucher id's sale state as being restored, so grabs answer an error
// wrapping domain.ErrUnavailable until Restored; a voucher without sale state is left
// as it is (a grab rebuilds it).
func (a *Audit) Restoring(ctx context.Context, id domain.VoucherID) error {
	if _, err := a.markRestoring(ctx, id); err != nil {
		return fmt.Errorf("mark sale state restoring: %w", err)
	}
	return nil
}

// markRestoring runs restoringScript: 1 marked, 2 marked already, 0 no sale state.
func (a *Audit) markRestoring(ctx context.Context, id domain.VoucherID) (int, error) {
	return restoringScript.Run(ctx, a.client, a.keys.withCampaign(id, a.keys.Meta(id))).Int()
}

// Restored marks voucher id's sale state whole (it clears the "restoring" flag Warm
// sets when live orders hold units), so grabs are taken again. It is one HDEL: a
// voucher without sale state, or one already whole, is left as it is.
func (a *Audit) Restored(ctx context.Context, id domain.VoucherID) error {
	if err := a.client.HDel(ctx, a.keys.Meta(id), "restoring").Err(); err != nil {
		return fmt.Errorf("open restored sale state: %w", err)
	}
	return nil
}
