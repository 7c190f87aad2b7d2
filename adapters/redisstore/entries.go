package redisstore

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/domain"
	"github.com/seckill/seckill/ports"
)

// Entries returns the key of a draw voucher's entries: a set of the user ids
// (decimal) who entered; under a campaign's room id, the campaign's: a hash of user
// id -> the voucher id chosen.
func (k Keys) Entries(id domain.VoucherID) string { return k.key(id, "entries") }

// EntriesClosed returns the key of the mark the draw leaves when it closes a voucher's
// entries (close.lua): while it exists, no entry is taken.
func (k Keys) EntriesClosed(id domain.VoucherID) string { return k.key(id, "entries_closed") }

// enterScript, closeScript and drawScript: their contracts are at the top of
// enter.lua, close.lua and draw.lua.
var (
	//go:embed enter.lua
	enterSrc string
	//go:embed close.lua
	closeSrc string
	//go:embed draw.lua
	drawSrc string

	enterScript = newScript(enterSrc)
	closeScript = newScript(closeSrc)
	drawScript  = newScript(drawSrc)
)

// Outcomes of enterScript and drawScript.
const (
	entered = iota
	enterNotOpen
	enterClosed
)

const (
	drawTaken = iota
	drawNoSale
	drawRestoring
	drawCampaignChanged
)

// Entries is a ports.Entries kept in Redis beside the sale state of the stock it is
// made from: the entries a set under the voucher's hash tag, the winners reservations
// of that stock, the backfill its waitlist (Waitlist).
type Entries struct {
	s *Stock
}

var _ ports.Entries = (*Entries)(nil)

// NewEntries returns the draws of s's vouchers.
func NewEntries(s *Stock) *Entries { return &Entries{s: s} }

// expireAt is when v's draw keys expire: with its sale state's.
func (e *Entries) expireAt(v domain.Voucher) string {
	return strconv.FormatInt(v.EndsAt.Add(e.s.grace).UnixMilli(), 10)
}

// Enter enters user in v's draw in one script judged by the sale's clock (enter.lua).
func (e *Entries) Enter(ctx context.Context, v domain.Voucher, user domain.UserID) (int, error) {
	return e.enter(ctx, v, user.String(), v.EntriesOpenAt.UnixMilli(), v.BeginsAt.UnixMilli(), e.expireAt(v))
}

// EnterDrop enters user in the campaign's draw whose room is room, choosing choice,
// in one script (enter.lua) that keeps the latest choice.
func (e *Entries) EnterDrop(ctx context.Context, room domain.Voucher, user domain.UserID, choice domain.VoucherID) (int, error) {
	return e.enter(ctx, room, user.String(), room.EntriesOpenAt.UnixMilli(), room.BeginsAt.UnixMilli(), e.expireAt(room),
		choice.String())
}

// enter runs enterScript for v with args.
func (e *Entries) enter(ctx context.Context, v domain.Voucher, args ...any) (int, error) {
	keys := []string{e.s.keys.Entries(v.ID), e.s.keys.EntriesClosed(v.ID)}
	reply, err := enterScript.Run(ctx, e.s.client, keys, args...).Int64Slice()
	if err != nil {
		return 0, fmt.Errorf("enter the draw: %w: %w", domain.ErrUnavailable, err)
	}
	if len(reply) != 2 {
		return 0, fmt.Errorf("enter the draw: unexpected reply %v", reply)
	}
	switch reply[0] {
	case entered:
		return int(reply[1]), nil
	case enterNotOpen:
		return 0, domain.ErrNotStarted
	case enterClosed:
		return 0, domain.ErrEntriesClosed
	}
	return 0, fmt.Errorf("enter the draw: unexpected outcome %d", reply[0])
}

// Count returns how many users entered voucher id's draw, or a campaign's by its room
// id.
func (e *Entries) Count(ctx context.Context, id domain.VoucherID) (int, error) {
	var n int64
	var err error
	if _, drop := id.CampaignRoom(); drop {
		n, err = e.s.client.HLen(ctx, e.s.keys.Entries(id)).Result()
	} else {
		n, err = e.s.client.SCard(ctx, e.s.keys.Entries(id)).Result()
	}
	if err != nil {
		return 0, fmt.Errorf("count entries: %w: %w", domain.ErrUnavailable, err)
	}
	return int(n), nil
}

// entriesPage is how many entrants one SSCAN asks for.
const entriesPage = 10000

// Close marks v's entries closed (close.lua), then reads them a page at a time
// (SSCAN), so a large draw never holds Redis for long.
func (e *Entries) Close(ctx context.Context, v domain.Voucher) ([]domain.UserID, error) {
	if err := e.close(ctx, v); err != nil {
		return nil, err
	}
	key := e.s.keys.Entries(v.ID)
	var ids []domain.UserID
	var cursor uint64
	for {
		page, next, err := e.s.client.SScan(ctx, key, cursor, "", entriesPage).Result()
		if err != nil {
			return nil, fmt.Errorf("read entries: %w: %w", domain.ErrUnavailable, err)
		}
		for _, m := range page {
			if id, err := domain.ParseUserID(m); err == nil {
				ids = append(ids, id)
			}
		}
		if cursor = next; cursor == 0 {
			break
		}
	}
	// SSCAN may return a member twice; an entrant counts once.
	seen := make(map[domain.UserID]struct{}, len(ids))
	unique := ids[:0]
	for _, id := range ids {
		if _, ok := seen[id]; !ok {
			seen[id] = struct{}{}
			unique = append(unique, id)
		}
	}
	return unique, nil
}

// close marks v's entries closed (close.lua), or returns domain.ErrNotStarted
// before its sale begins by the sale's clock.
func (e *Entries) close(ctx context.Context, v domain.Voucher) error {
	keys := []string{e.s.keys.Entries(v.ID), e.s.keys.EntriesClosed(v.ID)}
	closed, err := closeScript.Run(ctx, e.s.client, keys, v.BeginsAt.UnixMilli(), e.expireAt(v)).Int()
	if err != nil {
		return fmt.Errorf("close entries: %w: %w", domain.ErrUnavailable, err)
	}
	if closed != 1 {
		return domain.ErrNotStarted
	}
	return nil
}

// CloseDrop marks a campaign's entries closed (close.lua), then reads them a page at
// a time (HSCAN); a field HSCAN returns twice counts once.
func (e *Entries) CloseDrop(ctx context.Context, room domain.Voucher) ([]domain.DropEntry, error) {
	if err := e.close(ctx, room); err != nil {
		return nil, err
	}
	key := e.s.keys.Entries(room.ID)
	chose := map[domain.UserID]domain.VoucherID{}
	var cursor uint64
	for {
		page, next, err := e.s.client.HScan(ctx, key, cursor, "", entriesPage).Result()
		if err != nil {
			return nil, fmt.Errorf("read entries: %w: %w", domain.ErrUnavailable, err)
		}
		for i := 0; i+1 < len(page); i += 2 {
			u, err := domain.ParseUserID(page[i])
			if err != nil {
				continue
			}
			if v, err := domain.ParseVoucherID(page[i+1]); err == nil {
				chose[u] = v
			}
		}
		if cursor = next; cursor == 0 {
			break
		}
	}
	entries := make([]domain.DropEntry, 0, len(chose))
	for u, v := range chose {
		entries = append(entries, domain.DropEntry{User: u, Choice: v})
	}
	return entries, nil
}

// Progress reads the draw's fields of voucher id's sale state: a campaign's voucher
// has taken all its steps once its part is done (draw_done), before the whole
// campaign's draw opens it (drawn).
func (e *Entries) Progress(ctx context.Context, id domain.VoucherID) (int, bool, error) {
	vals, err := e.s.client.HMGet(ctx, e.s.keys.Meta(id), "stock", "draw_next", "drawn", "draw_done").Result()
	if err != nil {
		return 0, false, fmt.Errorf("draw progress: %w: %w", domain.ErrUnavailable, err)
	}
	if vals[0] == nil {
		return 0, false, domain.ErrNotFound
	}
	taken := 0
	if s, ok := vals[1].(string); ok {
		taken, _ = strconv.Atoi(s)
	}
	return taken, vals[2] == "1" || vals[3] == "1", nil
}

// Take carries out steps in one script (draw.lua). The winners' orders are written to
// their users' indexes (Keys.UserOrders) first, as a grab on Redis Cluster indexes
// itself before it is judged (indexGrabs): a script cannot reach the users' slots,
// and an index entry of an order never reserved is told apart by the voucher's
// orders hash.
func (e *Entries) Take(ctx context.Context, id domain.VoucherID, from, total int, steps []domain.DrawStep, orders []domain.OrderID) (int, int, error) {
	if len(steps) != len(orders) {
		return 0, 0, errors.New("take draw steps: one order id per step")
	}
	s := e.s
	if s.restarts != nil && s.restarts.Healing() {
		return 0, 0, fmt.Errorf("take draw steps: %w: redis restarted or failed over; its sale state is being healed", domain.ErrUnavailable)
	}
	pipe := s.client.Pipeline()
	indexed := false
	for i, st := range steps {
		if st.Winner {
			pipe.HSet(ctx, s.keys.UserOrders(st.User), string(orders[i]), id.String())
			pipe.PExpire(ctx, s.keys.UserOrders(st.User), s.grace)
			indexed = true
		}
	}
	if indexed {
		if _, err := pipe.Exec(ctx); err != nil {
			return 0, 0, fmt.Errorf("index the winners' orders: %w: %w", domain.ErrUnavailable, err)
		}
	}
	keys := []string{s.keys.Meta(id), s.keys.Buyers(id), s.keys.Orders(id), s.keys.Stream(id),
		s.keys.Waitlist(id), s.keys.Waiting(id), s.keys.Released(id)}
	for {
		tail, variants, number := s.campaignTail(id)
		args := make([]any, 0, 6+3*len(steps))
		args = append(args, id.String(), from, total, s.window, variants, number)
		for i, st := range steps {
			winner := "0"
			if st.Winner {
				winner = "1"
			}
			args = append(args, st.User.String(), string(orders[i]), winner)
		}
		raw, err := drawScript.Run(ctx, s.client, append(keys, tail...), args...).Slice()
		if err != nil {
			if errors.Is(err, redis.Nil) {
				return 0, 0, fmt.Errorf("take draw steps: unexpected empty reply")
			}
			return 0, 0, fmt.Errorf("take draw steps: %w: %w", domain.ErrUnavailable, err)
		}
		if len(raw) == 2 && raw[0] == int64(drawCampaignChanged) {
			if err := s.learnVariants(id, variants, raw[1]); err != nil {
				return 0, 0, fmt.Errorf("take draw steps: %w", err)
			}
			continue
		}
		return e.taken(ctx, id, raw)
	}
}

// taken reads draw.lua's reply raw to a batch of voucher id's steps.
func (e *Entries) taken(ctx context.Context, id domain.VoucherID, raw []any) (int, int, error) {
	if len(raw) < 4 {
		return 0, 0, fmt.Errorf("take draw steps: unexpected reply %v", raw)
	}
	var reply [3]int64
	for i := range reply {
		n, ok := raw[i].(int64)
		if !ok {
			return 0, 0, fmt.Errorf("take draw steps: unexpected reply %v", raw)
		}
		reply[i] = n
	}
	switch reply[0] {
	case drawTaken:
		// After the last step, units left go to the waitlist: index whom they went to.
		e.s.handedOff(ctx, id, raw[4:])
		return int(reply[1]), int(reply[2]), nil
	case drawNoSale:
		return 0, 0, domain.ErrNotFound
	case drawRestoring:
		return 0, 0, fmt.Errorf("take draw steps: voucher %s: %w: its sale state is being restored", id, domain.ErrUnavailable)
	}
	return 0, 0, fmt.Errorf("take draw steps: unexpected outcome %d", reply[0])
}
