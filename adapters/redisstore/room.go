package redisstore

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/domain"
	"github.com/seckill/seckill/ports"
)

// The waiting room's scripts; each one's contract is at the top of its file.
var (
	//go:embed room_join.lua
	roomJoinSrc string
	//go:embed room_close.lua
	roomCloseSrc string
	//go:embed room_install.lua
	roomInstallSrc string
	//go:embed room_place.lua
	roomPlaceSrc string
	//go:embed room_admit.lua
	roomAdmitSrc string
	//go:embed room_figures.lua
	roomFiguresSrc string
	//go:embed room_spend.lua
	roomSpendSrc string

	roomJoinScript    = newScript(roomJoinSrc)
	roomCloseScript   = newScript(roomCloseSrc)
	roomInstallScript = newScript(roomInstallSrc)
	roomPlaceScript   = newScript(roomPlaceSrc)
	roomAdmitScript   = newScript(roomAdmitSrc)
	roomFiguresScript = newScript(roomFiguresSrc)
	roomSpendScript   = newScript(roomSpendSrc)
)

// installChunk is how many users of a shuffled order one install call carries: a
// hundred thousand early joiners take twenty calls, none of which blocks Redis for
// long.
const installChunk = 5000

// admitMost bounds how many users one admission call takes from the line (lets in, or
// passes over as buyers already).
const admitMost = 1000

// WaitingRoom is the ports.WaitingRoom on Redis: every key of a voucher's room has the
// voucher's hash tag (Keys.Room and the keys after it, Keys.Passes), so each step is
// one script on one node, on a single server and on Redis Cluster alike. A campaign's
// room is kept under its room id (domain.CampaignID.Room), whose keys have the
// campaign's hash tag, the tag of its terms and its vouchers' keys too: its admission
// judges the whole drop's units in the same script. The keys expire with the
// voucher's other keys, at the end of its sale plus the grace.
type WaitingRoom struct {
	client redis.UniversalClient
	keys   Keys
	grace  time.Duration
	// now is the time the scripts judge by, in Unix ms; 0 (the default) is the sale's
	// clock (Redis's TIME). Tests set it.
	now func() int64
	// variants is how many vouchers each campaign whose room was read holds, as last
	// learnt (domain.CampaignID -> int): a script told a wrong count answers the true
	// one, and is run again with it.
	variants sync.Map
}

var _ ports.WaitingRoom = (*WaitingRoom)(nil)

// NewWaitingRoom returns the waiting rooms kept through client, under opts.Prefix,
// whose keys outlive the sale by opts.Grace.
func NewWaitingRoom(client redis.UniversalClient, opts Options) *WaitingRoom {
	grace := opts.Grace
	if grace <= 0 {
		grace = DefaultGrace
	}
	return &WaitingRoom{client: client, keys: Keys{Prefix: opts.Prefix}, grace: grace, now: func() int64 { return 0 }}
}

// expireAt is when v's room keys expire, in Unix ms.
func (w *WaitingRoom) expireAt(v domain.Voucher) int64 {
	return v.EndsAt.Add(w.grace).UnixMilli()
}

// Join puts user in v's room (room_join.lua): an early joiner before v.BeginsAt by
// the sale's clock, else at the end of the line.
func (w *WaitingRoom) Join(ctx context.Context, v domain.Voucher, user domain.UserID) (bool, error) {
	k := w.keys
	keys := []string{k.Room(v.ID), k.RoomEarly(v.ID), k.RoomPlaces(v.ID), k.RoomLate(v.ID), k.RoomLateLine(v.ID)}
	res, err := roomJoinScript.Run(ctx, w.client, keys, user.String(), v.BeginsAt.UnixMilli(), w.expireAt(v), w.now()).Int64Slice()
	if err != nil {
		return false, unavailable("join the waiting room", err)
	}
	return res[0] == 1, nil
}

// sale returns the keys room_sale (prelude.lua) reads the sale of room id by, and the
// count of vouchers to give it: the voucher's meta and 0, or a campaign's terms and
// its vouchers' metas, as many as this process last learnt it holds (read from Redis
// the first time; 1 while its terms are not loaded, which room_sale reads as no
// sale).
func (w *WaitingRoom) sale(ctx context.Context, id domain.VoucherID) ([]string, int, error) {
	c, ok := id.CampaignRoom()
	if !ok {
		return []string{w.keys.Meta(id)}, 0, nil
	}
	n, ok := w.variants.Load(c)
	if !ok {
		count, err := w.client.HGet(ctx, w.keys.Campaign(c), "variants").Int()
		if err != nil && !errors.Is(err, redis.Nil) {
			return nil, 0, unavailable("read the campaign's terms", err)
		}
		n = max(count, 1)
		w.variants.Store(c, n)
	}
	variants := n.(int) //nolint:forcetypeassert // only ints are stored
	keys := make([]string, 0, 1+variants)
	keys = append(keys, w.keys.Campaign(c))
	for j := 1; j <= variants; j++ {
		keys = append(keys, w.keys.Meta(c.Variant(j)))
	}
	return keys, variants, nil
}

// learn keeps count, a script's answer that room id's campaign holds another number
// of vouchers than it was told; it reports whether that is news (a count that is not
// is an error of the caller's, which stops its retries).
func (w *WaitingRoom) learn(id domain.VoucherID, told int, count int64) bool {
	c, _ := id.Campaign()
	if c == 0 || int(count) == told || count < 1 {
		return false
	}
	w.variants.Store(c, int(count))
	return true
}

// Place reads where user stands in room id (room_place.lua): a voucher's, or a
// campaign's by its room id. It returns domain.ErrNotFound when user never joined.
func (w *WaitingRoom) Place(ctx context.Context, id domain.VoucherID, user domain.UserID) (ports.RoomPlace, error) {
	k := w.keys
	var res []int64
	for {
		sale, variants, err := w.sale(ctx, id)
		if err != nil {
			return ports.RoomPlace{}, err
		}
		keys := append([]string{k.Room(id), k.RoomEarly(id), k.RoomPlaces(id), k.RoomLate(id), k.Passes(id)}, sale...)
		res, err = roomPlaceScript.Run(ctx, w.client, keys, user.String(), w.now(), variants).Int64Slice()
		if err != nil {
			return ports.RoomPlace{}, unavailable("read the waiting room", err)
		}
		if res[0] != 2 {
			break
		}
		if !w.learn(id, variants, res[1]) {
			return ports.RoomPlace{}, fmt.Errorf("waiting room %s: unexpected count of vouchers %d", id, res[1])
		}
	}
	if res[0] == 0 {
		return ports.RoomPlace{}, domain.ErrNotFound
	}
	p := ports.RoomPlace{Early: res[1] == 1, Position: res[2], Admitted: res[3], SoldOut: res[4] == 1, Rate: float64(res[6]) / 1000}
	if res[5] > 0 {
		p.PassExpires = time.UnixMilli(res[5]).UTC()
	}
	return p, nil
}

// Installed reports whether voucher id's shuffled order is in place.
func (w *WaitingRoom) Installed(ctx context.Context, id domain.VoucherID) (bool, error) {
	s, err := w.client.HGet(ctx, w.keys.Room(id), "installed").Result()
	if err == redis.Nil { //nolint:errorlint // go-redis returns redis.Nil itself
		return false, nil
	}
	if err != nil {
		return false, unavailable("read the waiting room", err)
	}
	return s == "1", nil
}

// Close ends v's early joining once the sale's clock reaches v.BeginsAt and returns
// the early joiners (room_close.lua).
func (w *WaitingRoom) Close(ctx context.Context, v domain.Voucher) ([]domain.UserID, bool, error) {
	res, err := roomCloseScript.Run(ctx, w.client, []string{w.keys.Room(v.ID), w.keys.RoomEarly(v.ID)},
		v.BeginsAt.UnixMilli(), w.expireAt(v), w.now()).Slice()
	if err != nil {
		return nil, false, unavailable("close the waiting room's early joining", err)
	}
	if n, _ := res[0].(int64); n == 0 {
		return nil, false, nil
	}
	users := make([]domain.UserID, 0, len(res)-1)
	for _, m := range res[1:] {
		s, _ := m.(string)
		u, err := domain.ParseUserID(s)
		if err != nil {
			return nil, false, fmt.Errorf("waiting room of voucher %s holds %q: %w", v.ID, s, err)
		}
		users = append(users, u)
	}
	return users, true, nil
}

// Install puts order in place, installChunk users a call (room_install.lua); the
// last call opens admission. An install cut short leaves admission closed, and the
// next one starts over.
func (w *WaitingRoom) Install(ctx context.Context, v domain.Voucher, order []domain.UserID) error {
	k := w.keys
	keys := []string{k.Room(v.ID), k.RoomPlaces(v.ID), k.RoomLine(v.ID)}
	for from := 0; from == 0 || from < len(order); from += installChunk {
		chunk := order[from:min(from+installChunk, len(order))]
		args := make([]any, 0, 3+len(chunk))
		args = append(args, from+1, len(order), w.expireAt(v))
		for _, u := range chunk {
			args = append(args, u.String())
		}
		res, err := roomInstallScript.Run(ctx, w.client, keys, args...).Int()
		if err != nil {
			return unavailable("install the waiting room's order", err)
		}
		if res == -1 {
			return nil // installed already
		}
	}
	return nil
}

// Admit lets users in from the front of v's line (room_admit.lua), passing over those
// who hold an order of v (Keys.Buyers) — for a campaign's room (v its Room), those
// who may hold one of its vouchers (Keys.CampaignHolders), while the drop has units.
// Given sale, the script judges by it rather than by the sale state in Redis (which
// the postgres strategy does not keep).
func (w *WaitingRoom) Admit(ctx context.Context, v domain.Voucher, window int, lifetime time.Duration, sale *ports.RoomSale) (ports.Admission, error) {
	k := w.keys
	before := k.Buyers(v.ID)
	if c, n := v.ID.Campaign(); c != 0 && n == 0 {
		before = k.CampaignHolders(c)
	}
	var res []any
	for {
		saleKeys, variants, err := w.sale(ctx, v.ID)
		if err != nil {
			return ports.Admission{}, err
		}
		keys := append([]string{k.Room(v.ID), k.RoomLine(v.ID), k.RoomLateLine(v.ID), k.Passes(v.ID), before}, saleKeys...)
		args := []any{window, lifetime.Milliseconds(), admitMost, w.expireAt(v), w.now(), variants}
		if sale != nil {
			open := 0
			if sale.Open {
				open = 1
			}
			args = append(args, open, sale.OnSale)
		}
		res, err = roomAdmitScript.Run(ctx, w.client, keys, args...).Slice()
		if err != nil {
			return ports.Admission{}, unavailable("admit from the waiting room", err)
		}
		if n, _ := res[0].(int64); n != -1 {
			break
		}
		count, _ := res[1].(int64)
		if !w.learn(v.ID, variants, count) {
			return ports.Admission{}, fmt.Errorf("waiting room %s: unexpected count of vouchers %v", v.ID, res[1])
		}
	}
	n, _ := res[0].(int64)
	outstanding, _ := res[1].(int64)
	expires, _ := res[2].(int64)
	a := ports.Admission{Outstanding: int(outstanding), Expires: time.UnixMilli(expires).UTC()}
	for _, m := range res[3 : 3+n] {
		s, _ := m.(string)
		u, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return a, fmt.Errorf("waiting room of voucher %s let in %q: %w", v.ID, s, err)
		}
		a.Users = append(a.Users, domain.UserID(u))
	}
	return a, nil
}

// Spend forgets user's pass of room when it expires at expires (room_spend.lua).
func (w *WaitingRoom) Spend(ctx context.Context, room domain.VoucherID, user domain.UserID, expires time.Time) error {
	if err := roomSpendScript.Run(ctx, w.client, []string{w.keys.Passes(room)}, user.String(), expires.UnixMilli()).Err(); err != nil {
		return unavailable("spend a waiting room's pass", err)
	}
	return nil
}

// Figures reads voucher id's room's counts (room_figures.lua): one script, whose keys
// share the voucher's hash tag.
func (w *WaitingRoom) Figures(ctx context.Context, id domain.VoucherID) (ports.RoomFigures, error) {
	k := w.keys
	res, err := roomFiguresScript.Run(ctx, w.client, []string{k.Room(id), k.RoomEarly(id), k.Passes(id)}, w.now()).Int64Slice()
	if err != nil {
		return ports.RoomFigures{}, unavailable("read the waiting room's figures", err)
	}
	return ports.RoomFigures{Early: res[0], Late: res[1], Admitted: res[2], Outstanding: res[3]}, nil
}
