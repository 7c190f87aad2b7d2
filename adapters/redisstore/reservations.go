package redisstore

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/domain"
	"github.com/seckill/seckill/ports"
)

// Reservations is a ports.Reservations reading what the grab path recorded in Redis:
// each user's index of the orders they reserved (Keys.UserOrders: on one server the
// reserve script adds each reservation to it; on a cluster Stock.indexGrabs writes
// each grab to it first), checked against the orders hash of each voucher, which alone
// says what is held.
type Reservations struct{ stateReader }

var _ ports.Reservations = (*Reservations)(nil)

// NewReservations returns Reservations reading through client. It uses opts.Prefix and
// opts.Group (defaults as for NewStock); opts.Grace does not matter to it.
func NewReservations(client redis.UniversalClient, opts Options) *Reservations {
	return &Reservations{newStateReader(client, opts)}
}

// stateReader is what the readers of the grab path's records share: the client, the
// key names and the workers' consumer group.
type stateReader struct {
	client redis.UniversalClient
	keys   Keys
	group  string
}

// newStateReader reads through client, with opts.Prefix and opts.Group (defaults as
// for NewStock).
func newStateReader(client redis.UniversalClient, opts Options) stateReader {
	if opts.Group == "" {
		opts.Group = DefaultGroup
	}
	return stateReader{client: client, keys: Keys{Prefix: opts.Prefix}, group: opts.Group}
}

// Find returns the reservation order id names. With user not 0 it looks in that
// user's index only (two short reads, whatever the number of vouchers): an order the
// index does not name, or one of another user, is domain.ErrNotFound. With user 0 (an
// admin, who does not say whose order it is) it looks in the orders hash of each
// voucher the queue still reads (Keys.Active: those on sale, and those whose
// reservations are not all persisted), activePage of them per round trip, until one
// holds it: its cost follows the sales going on, never the vouchers ever sold, and no
// command grows with them. It returns domain.ErrNotFound when none holds it (unknown,
// released, persisted and its sale over, or its sale's keys expired).
func (r *Reservations) Find(ctx context.Context, user domain.UserID, id domain.OrderID) (domain.Reservation, error) {
	if id == "" {
		return domain.Reservation{}, domain.ErrNotFound
	}
	if user == 0 {
		return r.findActive(ctx, id)
	}
	v, err := r.client.HGet(ctx, r.keys.UserOrders(user), string(id)).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		return domain.Reservation{}, fmt.Errorf("find reservation: %w", err)
	}
	vid, err := domain.ParseVoucherID(v)
	if err != nil {
		return domain.Reservation{}, domain.ErrNotFound
	}
	res, err := r.findIn(ctx, []domain.VoucherID{vid}, id)
	if err != nil {
		return domain.Reservation{}, err
	}
	if res.UserID != user {
		return domain.Reservation{}, domain.ErrNotFound
	}
	return res, nil
}

// findActive looks order id up among the vouchers the queue still reads, a page of the
// active set (by rank) at a time. A voucher that moves between pages meanwhile may be
// missed: its order is then persisted or released, or found by the next look.
func (r *Reservations) findActive(ctx context.Context, id domain.OrderID) (domain.Reservation, error) {
	for start := int64(0); ; start += activePage {
		members, err := r.client.ZRange(ctx, r.keys.Active(), start, start+activePage-1).Result()
		if err != nil {
			return domain.Reservation{}, fmt.Errorf("find reservation: %w", err)
		}
		vouchers := make([]domain.VoucherID, 0, len(members))
		for _, m := range members {
			if v, err := domain.ParseVoucherID(m); err == nil {
				vouchers = append(vouchers, v)
			}
		}
		res, err := r.findIn(ctx, vouchers, id)
		if !errors.Is(err, domain.ErrNotFound) || int64(len(members)) < activePage {
			return res, err
		}
	}
}

// findIn looks order id up in the orders hash of each of vouchers, in one round trip,
// and returns the first record found, or domain.ErrNotFound.
func (r *Reservations) findIn(ctx context.Context, vouchers []domain.VoucherID, id domain.OrderID) (domain.Reservation, error) {
	if len(vouchers) == 0 {
		return domain.Reservation{}, domain.ErrNotFound
	}
	pipe := r.client.Pipeline()
	cmds := make([]*redis.StringCmd, len(vouchers))
	for i, v := range vouchers {
		cmds[i] = pipe.HGet(ctx, r.keys.Orders(v), string(id))
	}
	// Exec reports the first failed command, redis.Nil included; each is checked below.
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return domain.Reservation{}, fmt.Errorf("find reservation: %w", err)
	}
	for i, cmd := range cmds {
		record, err := cmd.Result()
		if errors.Is(err, redis.Nil) {
			continue
		}
		if err != nil {
			return domain.Reservation{}, fmt.Errorf("find reservation: %w", err)
		}
		res, err := decodeRecord(id, vouchers[i], record)
		if err != nil {
			return domain.Reservation{}, fmt.Errorf("find reservation: %w", err)
		}
		return res, nil
	}
	return domain.Reservation{}, domain.ErrNotFound
}

// ForUser returns the reservations user holds now among those in the user's index,
// sorted by voucher, in two round trips: the index (a hash from order id to voucher
// id, one field per reservation — on a cluster, per grab — of the last Options.Grace),
// then each order's record in its voucher's orders hash. An indexed order without a
// record (on a cluster, its grab refused or not yet run; its order released, or its
// sale's keys expired) is left out; the entry stays, as it may be a grab on its way,
// until the index expires. Persisted reservations are listed too until released: the
// index is not told of persistence.
func (r *Reservations) ForUser(ctx context.Context, user domain.UserID) ([]domain.Reservation, error) {
	key := r.keys.UserOrders(user)
	index, err := r.client.HGetAll(ctx, key).Result()
	if err != nil {
		return nil, fmt.Errorf("reservations of user: %w", err)
	}
	if len(index) == 0 {
		return nil, nil
	}
	ids := make([]domain.OrderID, 0, len(index))
	vouchers := make([]domain.VoucherID, 0, len(index))
	pipe := r.client.Pipeline()
	records := make([]*redis.StringCmd, 0, len(index))
	for order, v := range index {
		vid, err := domain.ParseVoucherID(v)
		if err != nil {
			continue
		}
		ids = append(ids, domain.OrderID(order))
		vouchers = append(vouchers, vid)
		records = append(records, pipe.HGet(ctx, r.keys.Orders(vid), order))
	}
	if len(records) > 0 {
		if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
			return nil, fmt.Errorf("reservations of user: %w", err)
		}
	}
	var out []domain.Reservation
	for i, cmd := range records {
		record, err := cmd.Result()
		if errors.Is(err, redis.Nil) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("reservations of user: %w", err)
		}
		res, err := decodeRecord(ids[i], vouchers[i], record)
		if err != nil {
			return nil, fmt.Errorf("reservations of user: %w", err)
		}
		if res.UserID == user {
			out = append(out, res)
		}
	}
	slices.SortFunc(out, func(a, b domain.Reservation) int {
		return cmp.Or(cmp.Compare(a.VoucherID, b.VoucherID), strings.Compare(string(a.OrderID), string(b.OrderID)))
	})
	return out, nil
}
