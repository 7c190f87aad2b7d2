package redisstore

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/domain"
	"github.com/seckill/seckill/ports"
)

// Reservations is a ports.Reservations reading what the grab path recorded in Redis:
// the orders hash of each voucher in the registry, and the state of the consumer group
// on each voucher's stream.
type Reservations struct {
	client redis.UniversalClient
	keys   Keys
	group  string
}

var _ ports.Reservations = (*Reservations)(nil)

// NewReservations returns Reservations reading through client. It uses opts.Prefix and
// opts.Group (defaults as for NewStock); opts.Grace does not matter to it.
func NewReservations(client redis.UniversalClient, opts Options) *Reservations {
	if opts.Group == "" {
		opts.Group = DefaultGroup
	}
	return &Reservations{client: client, keys: Keys{Prefix: opts.Prefix}, group: opts.Group}
}

// Find returns the reservation order id names, looking in the orders hash of every
// voucher in the registry in one round trip (after reading the registry). It returns
// domain.ErrNotFound when none holds it: unknown, released, or its sale's keys expired.
func (r *Reservations) Find(ctx context.Context, id domain.OrderID) (domain.Reservation, error) {
	if id == "" {
		return domain.Reservation{}, domain.ErrNotFound
	}
	vouchers, err := r.registry(ctx)
	if err != nil {
		return domain.Reservation{}, fmt.Errorf("find reservation: %w", err)
	}
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

// ForUser returns the reservations user holds now, one per voucher in the registry at
// most, in two round trips after reading the registry: the user's order id in each
// buyers hash, then those orders' records.
func (r *Reservations) ForUser(ctx context.Context, user domain.UserID) ([]domain.Reservation, error) {
	vouchers, err := r.registry(ctx)
	if err != nil {
		return nil, fmt.Errorf("reservations of user: %w", err)
	}
	if len(vouchers) == 0 {
		return nil, nil
	}
	pipe := r.client.Pipeline()
	ids := make([]*redis.StringCmd, len(vouchers))
	for i, v := range vouchers {
		ids[i] = pipe.HGet(ctx, r.keys.Buyers(v), user.String())
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("reservations of user: %w", err)
	}
	held := make([]domain.VoucherID, 0, len(vouchers))
	heldIDs := make([]domain.OrderID, 0, len(vouchers))
	records := make([]*redis.StringCmd, 0, len(vouchers))
	pipe = r.client.Pipeline()
	for i, cmd := range ids {
		id, err := cmd.Result()
		if errors.Is(err, redis.Nil) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("reservations of user: %w", err)
		}
		held = append(held, vouchers[i])
		heldIDs = append(heldIDs, domain.OrderID(id))
		records = append(records, pipe.HGet(ctx, r.keys.Orders(vouchers[i]), id))
	}
	if len(held) == 0 {
		return nil, nil
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("reservations of user: %w", err)
	}
	out := make([]domain.Reservation, 0, len(held))
	for i, cmd := range records {
		record, err := cmd.Result()
		if errors.Is(err, redis.Nil) {
			continue // released between the two reads
		}
		if err != nil {
			return nil, fmt.Errorf("reservations of user: %w", err)
		}
		res, err := decodeRecord(heldIDs[i], held[i], record)
		if err != nil {
			return nil, fmt.Errorf("reservations of user: %w", err)
		}
		out = append(out, res)
	}
	return out, nil
}

// registry returns the vouchers in the registry, in id order.
func (r *Reservations) registry(ctx context.Context) ([]domain.VoucherID, error) {
	members, err := r.client.SMembers(ctx, r.keys.Registry()).Result()
	if err != nil {
		return nil, err
	}
	vouchers := make([]domain.VoucherID, 0, len(members))
	for _, m := range members {
		if v, err := domain.ParseVoucherID(m); err == nil {
			vouchers = append(vouchers, v)
		}
	}
	slices.Sort(vouchers)
	return vouchers, nil
}
