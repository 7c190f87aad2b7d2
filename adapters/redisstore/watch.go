package redisstore

import (
	"context"
	_ "embed"
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
// transaction read under WATCH, with the answers of Stock.Reserve:
// domain.ErrChallengeRequired, domain.ErrQueueRequired, domain.ErrSoldOut,
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
	// The user's index first, as on a cluster (Stock.indexGrabs): the transaction
	// watches the voucher's keys only.
	if err := w.indexGrabs(ctx, []domain.Reservation{r}); err != nil {
		return fmt.Errorf("reserve stock: %w", err)
	}
	g := &watchGrab{r: r}
	for attempt := 1; attempt <= w.attempts; attempt++ {
		var answer error
		err := w.client.Watch(ctx, func(tx *redis.Tx) error {
			return w.attempt(ctx, tx, g, &answer)
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

// watchGrab is one grab across its optimistic attempts: it is judged at one moment,
// and counted against its user's rate once, however many attempts it takes.
type watchGrab struct {
	r       domain.Reservation
	counted bool
}

// rateScript counts a grab against its user's rate with reserve.lua's limiter; its
// contract is at the top of rate.lua.
//
//go:embed rate.lua
var rateSrc string
var rateScript = newScript(rateSrc)

// attempt is one optimistic transaction on a connection that watches the voucher's
// meta and buyers. A waiting room's grab is taken with its pass (see read), which the
// transaction uses up: the user's member leaves the passes set. It sets *answer to the grab's answer (nil: reserved) and returns
// nil, or returns an error: redis.TxFailedErr when a watched key changed, so nothing
// was written and the grab must be judged again. It judges in the order of
// reserve.lua — the rate (by rate.lua, reserve.lua's own limiter, once per grab), the
// grab rule (domain.Sale.Judge), the backlog — and writes nothing for a refusal. A
// grab without a time is judged by the sale's clock (Redis's TIME), read with the
// state.
func (w *WatchStock) attempt(ctx context.Context, tx *redis.Tx, g *watchGrab, answer *error) error {
	k := w.keys
	m, existing, pass, ok, err := w.read(ctx, tx, g)
	if err != nil {
		return err
	}
	r := g.r
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
	if w.interval > 0 && !g.counted {
		// On the transaction's own connection: a second one per grab would drain the
		// pool while every grab holds one under WATCH. The counter is not watched.
		ms, err := rateScript.Run(ctx, tx, []string{k.Rates(r.VoucherID), k.Meta(r.VoucherID)},
			r.UserID.String(), w.interval, w.tolerance, atMillis(r.At)).Int64()
		if err != nil {
			return err
		}
		g.counted = true
		if ms > 0 {
			*answer = &domain.RateLimitedError{RetryAfter: time.Duration(ms) * time.Millisecond}
			return nil
		}
	}
	state := domain.Sale{Admission: m.admission, Challenge: m.challenge, Drawn: m.drawn, PassOutstanding: !r.Pass.IsZero() && pass == r.Pass.UnixMilli(),
		Paused: m.paused, BeginsAt: time.UnixMilli(m.begins), EndsAt: time.UnixMilli(m.ends),
		PerUserLimit: int(m.limit), Remaining: int(m.remaining)}
	if m.settled {
		// The queue is done with the sale (settle.lua): its window has closed, as the
		// script judges it.
		state.EndsAt = r.At
	}
	if refusal := state.Judge(r, existing); refusal != nil {
		*answer = refusal
		return nil //nolint:nilerr // the refusal is the grab's answer, not the transaction's failure
	}
	if w.maxBacklog > 0 {
		over, err := w.backlogged(ctx, tx, r.VoucherID)
		if err != nil {
			return err
		}
		if over {
			*answer = reserveOutcome(r, backlogged, "")
			return nil
		}
	}

	if r.Expires.IsZero() && w.window > 0 {
		// Recorded with its deadline, as reserve.lua records it (add_reservation).
		r.Expires = r.At.Add(time.Duration(w.window) * time.Millisecond)
	}
	_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.HIncrBy(ctx, k.Meta(r.VoucherID), "remaining", -int64(r.Quantity))
		p.HIncrBy(ctx, k.Meta(r.VoucherID), "gen", 1)
		p.HIncrBy(ctx, k.Meta(r.VoucherID), tallyUnits, int64(r.Quantity))
		p.HIncrBy(ctx, k.Meta(r.VoucherID), tallyEntries, 1)
		p.HSet(ctx, k.Buyers(r.VoucherID), r.UserID.String(), string(r.OrderID))
		p.HSet(ctx, k.Orders(r.VoucherID), string(r.OrderID), encodeRecord(r))
		p.XAdd(ctx, &redis.XAddArgs{Stream: k.Stream(r.VoucherID), Values: entryValues(r, traceParent(ctx))})
		if m.admission == domain.AdmissionWaitingRoom {
			// The pass that admitted the grab is used up with it (reserve.lua's ZREM).
			p.ZRem(ctx, k.Passes(r.VoucherID), r.UserID.String())
		}
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

// read reads, on the connection that watches them, what the grab is judged by: the
// voucher's sale state (ok false when it has none) and the order the user's buyer
// entry names ("" for none) — and, for a grab without a time, the sale's clock
// (Redis's TIME), which then becomes the grab's time; for a grab with a pass, the
// expiry of the user's outstanding pass (pass, Unix ms; -1 for none).
//
// The passes set is read, not watched: the one write that matters to this grab, a
// concurrent reservation that uses the user's pass up, changes the watched sale state
// too, so it fails this transaction all the same.
func (w *WatchStock) read(ctx context.Context, tx *redis.Tx, g *watchGrab) (m saleMeta, held domain.OrderID, pass int64, ok bool, err error) {
	k := w.keys
	var meta *redis.SliceCmd
	var buyer *redis.StringCmd
	var clock *redis.TimeCmd
	var passed *redis.FloatCmd
	_, err = tx.Pipelined(ctx, func(p redis.Pipeliner) error {
		meta = p.HMGet(ctx, k.Meta(g.r.VoucherID), grabFields...)
		buyer = p.HGet(ctx, k.Buyers(g.r.VoucherID), g.r.UserID.String())
		if g.r.At.IsZero() {
			clock = p.Time(ctx)
		}
		if !g.r.Pass.IsZero() {
			passed = p.ZScore(ctx, k.Passes(g.r.VoucherID), g.r.UserID.String())
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return m, "", -1, false, err
	}
	if err := meta.Err(); err != nil {
		return m, "", -1, false, err
	}
	if clock != nil {
		now, err := clock.Result()
		if err != nil {
			return m, "", -1, false, err
		}
		g.r.At = now.Truncate(time.Millisecond).UTC()
	}
	order, err := buyer.Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		return m, "", -1, false, err
	}
	pass = -1
	if passed != nil {
		score, err := passed.Result()
		switch {
		case err == nil:
			pass = int64(score)
		case !errors.Is(err, redis.Nil):
			return m, "", -1, false, err
		}
	}
	m, ok, err = saleState(meta.Val())
	return m, domain.OrderID(order), pass, ok, err
}

// backlogged reports whether more of the voucher's reservations wait to be persisted
// than Options.MaxBacklog allows, as reserve.lua counts them: the stream's length
// bounds them, and only past the bound are they counted (unacked.lua). It is read,
// not watched: the bound is a brake, not a promise.
func (w *WatchStock) backlogged(ctx context.Context, tx *redis.Tx, id domain.VoucherID) (bool, error) {
	n, err := tx.XLen(ctx, w.keys.Stream(id)).Result()
	if err != nil || n <= int64(w.maxBacklog) {
		return false, err
	}
	ws, err := unackedOf(ctx, tx, w.group, int64(w.maxBacklog)+1, []string{w.keys.Stream(id)})
	if err != nil {
		return false, err
	}
	return ws[0].total() > int64(w.maxBacklog), nil
}

// saleMeta is a voucher's sale state as the meta hash holds it (see Keys.Meta).
type saleMeta struct {
	remaining, begins, ends, limit, expire int64
	paused, restoring, settled             bool
	// admission and challenge are "" in a state loaded without them: first come, none.
	admission domain.Admission
	challenge domain.ChallengeKind
	// drawn: the voucher's draw has been carried out (draw.lua).
	drawn bool
}

// grabFields are the fields of the meta hash a grab reads, in saleState's order; the
// stock is read for its presence only.
var grabFields = []string{"remaining", "begins", "ends", "limit", "expire", "paused", "stock", "restoring", "settled", "admission", "challenge", "drawn"}

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
	settled, _ := vals[8].(string)
	admission, _ := vals[9].(string)
	challenge, _ := vals[10].(string)
	drawn, _ := vals[11].(string)
	return saleMeta{drawn: drawn == "1", remaining: n[0], begins: n[1], ends: n[2], limit: n[3], expire: n[4],
		paused: paused == "1", restoring: restoring == "1", settled: settled == "1",
		admission: domain.Admission(admission), challenge: domain.ChallengeKind(challenge)}, true, nil
}
