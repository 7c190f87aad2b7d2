package redisstore

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/domain"
	"github.com/seckill/seckill/ports"
)

// DefaultWatchAttempts bounds the optimistic transactions one WatchStock.Reserve
// tries when NewWatchStock is given no bound.
const DefaultWatchAttempts = 10

// WatchStock is a ports.Stock whose Reserve is the classic optimistic transaction
// instead of the reserve script: WATCH the voucher's sale state and buyers, read them,
// judge the grab in Go, and take it with MULTI … EXEC, which Redis refuses when a
// watched key changed since the WATCH; a refused transaction starts over, a bounded
// number of times. It keeps the same keys, judges by the same rules and writes the
// same records as Stock (the same stream entry, so the same fulfillment worker persists
// it), so the two can serve one sale; everything but Reserve is Stock's.
//
// It is correct — a grab is taken only by a transaction that saw the state it
// changes — but not fast under contention: every grab of a voucher changes its sale
// state, so of all the transactions racing for one voucher only one commits per round
// and the rest read and try again. Each attempt is three round trips (WATCH, the
// reads, then MULTI … EXEC, or UNWATCH for a refusal) where the script takes one. It
// exists to measure that against the script (`seckill-lab compare`).
type WatchStock struct {
	*Stock
	attempts int
}

var _ ports.Stock = (*WatchStock)(nil)

// NewWatchStock returns a WatchStock over the keys, options and client of s; s serves
// everything but Reserve. attempts bounds the transactions one Reserve tries before it
// gives up with domain.ErrUnavailable; DefaultWatchAttempts when below 1.
func NewWatchStock(s *Stock, attempts int) *WatchStock {
	if attempts < 1 {
		attempts = DefaultWatchAttempts
	}
	return &WatchStock{Stock: s, attempts: attempts}
}

// Reserve takes r.Quantity units of r.VoucherID for r.UserID and appends the
// reservation to the voucher's stream in one MULTI … EXEC, judged by what the
// transaction read under WATCH, with the answers of Stock.Reserve: domain.ErrSoldOut,
// an *domain.AlreadyPurchasedError naming the existing order, domain.ErrNotStarted,
// domain.ErrEnded, domain.ErrNotFound (no sale state), a *domain.ValidationError
// (quantity below 1 or above the per-user limit), a *domain.RateLimitedError,
// domain.ErrPaused, or an error wrapping domain.ErrUnavailable (backlog over
// Options.MaxBacklog). When concurrent writes to the voucher made every one of its
// attempts fail, it returns an error wrapping domain.ErrUnavailable and has taken
// nothing: the caller may retry.
func (w *WatchStock) Reserve(ctx context.Context, r domain.Reservation) error {
	if r.Quantity < 1 {
		return domain.Invalid("quantity", "must be at least 1")
	}
	k := w.keys
	watched := []string{k.Meta(r.VoucherID), k.Buyers(r.VoucherID)}
	if w.interval > 0 {
		// The user's rate counter is read and moved too, so it is watched as well.
		watched = append(watched, k.Rate(r.VoucherID, r.UserID))
	}
	// The user's index first, as on a cluster (Stock.indexGrabs): the transaction
	// watches the voucher's keys only.
	if err := w.indexGrabs(ctx, []domain.Reservation{r}); err != nil {
		return fmt.Errorf("reserve stock: %w", err)
	}
	for attempt := 1; attempt <= w.attempts; attempt++ {
		var answer error
		err := w.client.Watch(ctx, func(tx *redis.Tx) error {
			return w.attempt(ctx, tx, r, &answer)
		}, watched...)
		switch {
		case err == nil:
			return answer
		case !errors.Is(err, redis.TxFailedErr):
			return fmt.Errorf("reserve stock: %w", err)
		case attempt < w.attempts:
			// Another grab changed the voucher first. A short random pause spreads
			// the losers out, so the next round is not the same crowd at once.
			if err := wait(ctx, time.Duration(rand.Int64N(int64(attempt)*int64(200*time.Microsecond)))); err != nil {
				return fmt.Errorf("reserve stock: %w", err)
			}
		}
	}
	return fmt.Errorf("reserve stock: voucher %s: %w: %d optimistic transactions lost to concurrent grabs",
		r.VoucherID, domain.ErrUnavailable, w.attempts)
}

// attempt is one optimistic transaction on a connection that watches the voucher's
// meta and buyers (and the user's rate counter). It sets *answer to the grab's answer
// (nil: reserved) and returns nil, or returns an error: redis.TxFailedErr when a
// watched key changed, so nothing was written and the grab must be judged again. It
// judges in the order of reserve.lua — the rate, the grab rule (domain.Sale.Judge),
// the backlog — and like the script writes nothing for a refusal but the rate counter.
func (w *WatchStock) attempt(ctx context.Context, tx *redis.Tx, r domain.Reservation, answer *error) error {
	k := w.keys
	user, now := r.UserID.String(), r.At.UnixMilli()
	var meta *redis.SliceCmd
	var held, rate *redis.StringCmd
	_, err := tx.Pipelined(ctx, func(p redis.Pipeliner) error {
		meta = p.HMGet(ctx, k.Meta(r.VoucherID), grabFields...)
		held = p.HGet(ctx, k.Buyers(r.VoucherID), user)
		if w.interval > 0 {
			rate = p.Get(ctx, k.Rate(r.VoucherID, r.UserID))
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return err
	}
	if err := meta.Err(); err != nil {
		return err
	}
	m, ok, err := saleState(meta.Val())
	if err != nil {
		return err
	}
	if !ok {
		*answer = domain.ErrNotFound
		return nil
	}
	// Being restored (warm.lua, restoring.lua): the users' held orders may not be back
	// yet, so no grab is judged — as the script answers, code restoring.
	if m.restoring {
		*answer = reserveOutcome(r, restoring, "")
		return nil
	}

	// Per-user rate (GCRA), as the script keeps it: every attempt that passes counts,
	// whatever its answer, so the counter is written with the answer below.
	var writeRate func(redis.Pipeliner)
	if w.interval > 0 {
		tat := now
		if s, err := rate.Result(); err == nil {
			if tat, err = strconv.ParseInt(s, 10, 64); err != nil {
				return fmt.Errorf("rate counter %q: %w", s, err)
			}
		} else if !errors.Is(err, redis.Nil) {
			return err
		}
		tat = max(tat, now)
		if now < tat-w.tolerance {
			*answer = &domain.RateLimitedError{RetryAfter: time.Duration(tat-w.tolerance-now) * time.Millisecond}
			return nil
		}
		tat += w.interval
		writeRate = func(p redis.Pipeliner) {
			p.Set(ctx, k.Rate(r.VoucherID, r.UserID), tat, time.Duration(tat-now)*time.Millisecond)
		}
	}
	refuse := func(refusal error) error {
		if writeRate != nil {
			if _, err := tx.TxPipelined(ctx, func(p redis.Pipeliner) error { writeRate(p); return nil }); err != nil {
				return err
			}
		}
		*answer = refusal
		return nil
	}

	existing, err := held.Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		return err
	}
	state := domain.Sale{Paused: m.paused, BeginsAt: time.UnixMilli(m.begins), EndsAt: time.UnixMilli(m.ends),
		PerUserLimit: int(m.limit), Remaining: int(m.remaining)}
	if refusal := state.Judge(r, domain.OrderID(existing)); refusal != nil {
		return refuse(refusal)
	}
	if w.maxBacklog > 0 {
		over, err := w.backlogged(ctx, tx, r.VoucherID)
		if err != nil {
			return err
		}
		if over {
			return refuse(fmt.Errorf("reserve stock: voucher %s: %w: too many reservations wait to be persisted", r.VoucherID, domain.ErrUnavailable))
		}
	}

	_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
		if writeRate != nil {
			writeRate(p)
		}
		p.HIncrBy(ctx, k.Meta(r.VoucherID), "remaining", -int64(r.Quantity))
		p.HIncrBy(ctx, k.Meta(r.VoucherID), "gen", 1)
		p.HIncrBy(ctx, k.Meta(r.VoucherID), tallyUnits, int64(r.Quantity))
		p.HIncrBy(ctx, k.Meta(r.VoucherID), tallyEntries, 1)
		p.HSet(ctx, k.Buyers(r.VoucherID), user, string(r.OrderID))
		p.HSet(ctx, k.Orders(r.VoucherID), string(r.OrderID), encodeRecord(r))
		p.XAdd(ctx, &redis.XAddArgs{Stream: k.Stream(r.VoucherID), Values: entryValues(r, traceParent(ctx))})
		for _, key := range []string{k.Buyers(r.VoucherID), k.Orders(r.VoucherID), k.Stream(r.VoucherID)} {
			p.PExpireAt(ctx, key, time.UnixMilli(m.expire))
		}
		return nil
	})
	if err != nil {
		return err
	}
	*answer = nil
	return nil
}

// backlogged reports whether more of the voucher's reservations wait to be persisted
// than Options.MaxBacklog allows, as reserve.lua counts them: the stream's length, and
// when that is over the bound, the group's pending entries plus its lag. It is read,
// not watched: the bound is a brake, not a promise.
func (w *WatchStock) backlogged(ctx context.Context, tx *redis.Tx, id domain.VoucherID) (bool, error) {
	n, err := tx.XLen(ctx, w.keys.Stream(id)).Result()
	if err != nil || n <= int64(w.maxBacklog) {
		return false, err
	}
	groups, err := tx.XInfoGroups(ctx, w.keys.Stream(id)).Result()
	if err != nil {
		return false, err
	}
	for _, g := range groups {
		if g.Name == w.group {
			n = g.Pending + max(g.Lag, 0)
		}
	}
	return n > int64(w.maxBacklog), nil
}

// saleMeta is a voucher's sale state as the meta hash holds it (see Keys.Meta).
type saleMeta struct {
	remaining, begins, ends, limit, expire int64
	paused, restoring                      bool
}

// grabFields are the fields of the meta hash a grab reads, in saleState's order; the
// stock is read for its presence only.
var grabFields = []string{"remaining", "begins", "ends", "limit", "expire", "paused", "stock", "restoring"}

// saleState decodes HMGET meta grabFields…. It reports false when there is no sale
// state: like the scripts (sale_state in prelude.lua), it takes a hash missing any of
// the fields warm.lua loads for none (a stray write to an expired voucher leaves a
// partial hash).
func saleState(vals []any) (saleMeta, bool, error) {
	if len(vals) != len(grabFields) {
		return saleMeta{}, false, fmt.Errorf("sale state: %d fields, want %d", len(vals), len(grabFields))
	}
	var n [5]int64
	for i := range n {
		s, ok := vals[i].(string)
		if !ok {
			return saleMeta{}, false, nil
		}
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return saleMeta{}, false, fmt.Errorf("sale state field %s: %w", grabFields[i], err)
		}
		n[i] = v
	}
	if _, ok := vals[6].(string); !ok {
		return saleMeta{}, false, nil
	}
	paused, _ := vals[5].(string)
	restoring, _ := vals[7].(string)
	return saleMeta{remaining: n[0], begins: n[1], ends: n[2], limit: n[3], expire: n[4],
		paused: paused == "1", restoring: restoring == "1"}, true, nil
}
