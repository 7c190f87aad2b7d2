package redisstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/domain"
)

// importChunk is how many reservations one HSET of Import records.
const importChunk = 200

// Import records generated reservations of vouchers whose sale state is loaded, as
// Restore does but without its checks, in two pipelined round trips whatever their
// number: the vouchers' expiry, then every record and the expiry of the hashes it
// wrote. It leaves the remaining units alone (Warm loaded them less the vouchers'
// sold units) and queues nothing (the orders are persisted already). It is for
// generated data (`seckill-lab seed`), not for a live sale: it would overwrite a user's
// reservation. It returns an error wrapping domain.ErrNotFound when a voucher has no
// sale state.
func (a *Audit) Import(ctx context.Context, rs []domain.Reservation) error {
	byVoucher := make(map[domain.VoucherID][]domain.Reservation)
	for _, r := range rs {
		byVoucher[r.VoucherID] = append(byVoucher[r.VoucherID], r)
	}
	pipe := a.client.Pipeline()
	expires := make(map[domain.VoucherID]*redis.StringCmd, len(byVoucher))
	for id := range byVoucher {
		expires[id] = pipe.HGet(ctx, a.keys.Meta(id), "expire")
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("import reservations: voucher sale state: %w", notFoundOnNil(err))
	}
	pipe = a.client.Pipeline()
	for id, vrs := range byVoucher {
		at, err := strconv.ParseInt(expires[id].Val(), 10, 64)
		if err != nil {
			return fmt.Errorf("import reservations: voucher %d: malformed expiry %q", id, expires[id].Val())
		}
		buyers := make([]any, 0, 2*len(vrs))
		orders := make([]any, 0, 2*len(vrs))
		for _, r := range vrs {
			user := r.UserID.String()
			buyers = append(buyers, user, string(r.OrderID))
			orders = append(orders, string(r.OrderID),
				user+":"+strconv.Itoa(r.Quantity)+":"+strconv.FormatInt(r.At.UnixMilli(), 10))
		}
		// Many small HSETs rather than one big one: each command stays short, so
		// the seeding never holds Redis up.
		for from := 0; from < len(buyers); from += 2 * importChunk {
			to := min(from+2*importChunk, len(buyers))
			pipe.HSet(ctx, a.keys.Buyers(id), buyers[from:to]...)
			pipe.HSet(ctx, a.keys.Orders(id), orders[from:to]...)
		}
		pipe.PExpireAt(ctx, a.keys.Buyers(id), time.UnixMilli(at))
		pipe.PExpireAt(ctx, a.keys.Orders(id), time.UnixMilli(at))
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("import reservations: %w", err)
	}
	return nil
}

// notFoundOnNil turns redis.Nil (a missing key or field) into domain.ErrNotFound.
func notFoundOnNil(err error) error {
	if errors.Is(err, redis.Nil) {
		return domain.ErrNotFound
	}
	return err
}
