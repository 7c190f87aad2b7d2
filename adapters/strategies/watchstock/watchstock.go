// Package watchstock is the WATCH/MULTI stock strategy (SECKILL_STOCK_STRATEGY=watch):
// a grab taken by an optimistic Redis transaction over the reserve script's own keys,
// kept to measure against the script (`seckill-lab compare`). Only cmd/seckill's
// strategy choice imports it (ports/architecture_test.go); the default path, the
// script, does not.
package watchstock

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/adapters/redisstore"
	"github.com/seckill/seckill/domain"
	"github.com/seckill/seckill/ports"
)

// DefaultAttempts bounds the optimistic transactions one Stock.Reserve tries when New
// is given no bound.
const DefaultAttempts = 10

// Stock is a ports.Stock whose Reserve is the classic optimistic transaction
// instead of the reserve script: WATCH the voucher's sale state and buyers, read them,
// judge the grab in Go, and take it with MULTI … EXEC, which Redis refuses when a
// watched key changed since the WATCH; a refused transaction starts over, a bounded
// number of times. It keeps the same keys, judges by the same rules and writes the
// same records as redisstore.Stock (the same stream entry, so the same fulfillment
// worker persists it), so the two can serve one sale; everything but Reserve is
// redisstore.Stock's.
//
// It is correct — a grab is taken only by a transaction that saw the state it
// changes — but not fast under contention: every grab of a voucher changes its sale
// state, so of all the transactions racing for one voucher only one commits per round
// and the rest read and try again. Each attempt is three round trips (WATCH, the
// reads, then MULTI … EXEC, or UNWATCH for a refusal) where the script takes one. It
// exists to measure that against the script (`seckill-lab compare`).
type Stock struct {
	*redisstore.Stock
	attempts int
}

var _ ports.Stock = (*Stock)(nil)

// New returns a Stock over the keys, options and client of s; s serves everything but
// Reserve. attempts bounds the transactions one Reserve tries before it gives up with
// domain.ErrUnavailable; DefaultAttempts when below 1.
func New(s *redisstore.Stock, attempts int) *Stock {
	if attempts < 1 {
		attempts = DefaultAttempts
	}
	return &Stock{Stock: s, attempts: attempts}
}

// Reserve takes r.Quantity units of r.VoucherID for r.UserID and appends the
// reservation to the voucher's stream in one MULTI … EXEC, judged by what the
// transaction read under WATCH, with the answers of redisstore.Stock.Reserve:
// domain.ErrChallengeRequired, domain.ErrQueueRequired, domain.ErrSoldOut,
// an *domain.AlreadyPurchasedError naming the existing order, domain.ErrNotStarted,
// domain.ErrEnded, domain.ErrNotFound (no sale state), a *domain.ValidationError
// (quantity below 1 or above the per-user limit), a *domain.RateLimitedError,
// domain.ErrPaused, or an error wrapping domain.ErrUnavailable (backlog over
// Options.MaxBacklog); for a campaign's voucher, domain.ErrCampaignSoldOut and an
// *domain.AlreadyPurchasedError naming the user's orders across the campaign, judged
// with the campaign's keys watched too (redisstore.Stock.WatchCampaign). When
// concurrent writes to the voucher (or its campaign) made every one of its attempts
// fail, it returns an error wrapping domain.ErrUnavailable and has taken nothing: the
// caller may retry.
func (w *Stock) Reserve(ctx context.Context, r domain.Reservation) error {
	if r.Quantity < 1 {
		return domain.Invalid("quantity", "must be at least 1")
	}
	k := w.Keys()
	// The user's index first, as on a cluster (redisstore.Stock.IndexGrabs): the
	// transaction watches the voucher's keys only.
	if err := w.IndexGrabs(ctx, []domain.Reservation{r}); err != nil {
		return fmt.Errorf("reserve stock: %w", err)
	}
	g := &watchGrab{r: r}
	for attempt := 1; attempt <= w.attempts; attempt++ {
		var answer error
		// A campaign's voucher is judged against every voucher of the campaign too, so
		// the transaction watches them (as many as the campaign is known to hold).
		watched := []string{k.Meta(r.VoucherID), k.Buyers(r.VoucherID)}
		cw := w.WatchCampaign(r.VoucherID)
		if cw != nil {
			watched = append(watched, cw.Keys...)
		}
		err := w.Client().Watch(ctx, func(tx *redis.Tx) error {
			return w.attempt(ctx, tx, g, cw, &answer)
		}, watched...)
		switch {
		case err == nil:
			return answer
		case errors.Is(err, redisstore.ErrCampaignGrew):
			// The campaign holds more vouchers than were watched: nothing was written;
			// the next attempt watches them all.
		case !errors.Is(err, redis.TxFailedErr):
			return fmt.Errorf("reserve stock: %w", err)
		case attempt < w.attempts:
			// Another grab changed the voucher first. A short random pause spreads
			// the losers out, so the next round is not the same crowd at once.
			if err := pause(ctx, time.Duration(rand.Int64N(int64(attempt)*int64(200*time.Microsecond)))); err != nil {
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

// attempt is one optimistic transaction on a connection that watches the voucher's
// meta and buyers (and, for a campaign's voucher, cw's keys). A waiting room's grab is taken with its pass (see read), which the
// transaction uses up: the user's member leaves the passes set. It sets *answer to the grab's answer (nil: reserved) and returns
// nil, or returns an error: redis.TxFailedErr when a watched key changed, so nothing
// was written and the grab must be judged again. It judges in the order of
// reserve.lua — the rate (by rate.lua, reserve.lua's own limiter, once per grab), the
// grab rule (domain.Sale.Judge), the backlog — and writes nothing for a refusal. A
// grab without a time is judged by the sale's clock (Redis's TIME), read with the
// state.
func (w *Stock) attempt(ctx context.Context, tx *redis.Tx, g *watchGrab, cw *redisstore.CampaignWatch, answer *error) error {
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
		*answer = redisstore.RestoringAnswer(r)
		return nil
	}
	// The campaign's side, judged before the rate as reserve.lua judges it: no terms
	// is no sale state, a voucher of it being restored is restoring.
	var campaign *domain.CampaignSale
	if cw != nil {
		cs, ok, restoring, err := w.ReadCampaign(ctx, tx, cw, r.VoucherID, r.UserID)
		switch {
		case err != nil:
			return err
		case !ok:
			*answer = domain.ErrNotFound
			return nil
		case restoring:
			*answer = redisstore.RestoringAnswer(r)
			return nil
		}
		campaign = &cs
	}
	if !g.counted {
		// On the transaction's own connection: a second one per grab would drain the
		// pool while every grab holds one under WATCH. The counter is not watched.
		retry, err := w.RateWait(ctx, tx, r)
		if err != nil {
			return err
		}
		g.counted = true
		if retry > 0 {
			*answer = &domain.RateLimitedError{RetryAfter: retry}
			return nil
		}
	}
	state := domain.Sale{Admission: m.admission, Challenge: m.challenge, Drawn: m.drawn, PassOutstanding: !r.Pass.IsZero() && pass == r.Pass.UnixMilli(),
		Paused: m.paused, BeginsAt: time.UnixMilli(m.begins), EndsAt: time.UnixMilli(m.ends),
		PerUserLimit: int(m.limit), Remaining: int(m.remaining), Campaign: campaign}
	if m.settled {
		// The queue is done with the sale (settle.lua): its window has closed, as the
		// script judges it.
		state.EndsAt = r.At
	}
	if refusal := state.Judge(r, existing); refusal != nil {
		*answer = refusal
		return nil //nolint:nilerr // the refusal is the grab's answer, not the transaction's failure
	}
	// The backlog is read, not watched: the bound is a brake, not a promise.
	over, err := w.Backlogged(ctx, tx, r.VoucherID)
	if err != nil {
		return err
	}
	if over {
		*answer = redisstore.BackloggedAnswer(r)
		return nil
	}

	// The pass that admitted a waiting room's grab is used up with it (reserve.lua's
	// ZREM).
	_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
		w.RecordReservation(ctx, p, r, m.admission == domain.AdmissionWaitingRoom, time.UnixMilli(m.expire))
		if cw != nil {
			w.RecordCampaignHolder(ctx, p, r, time.UnixMilli(m.expire))
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
func (w *Stock) read(ctx context.Context, tx *redis.Tx, g *watchGrab) (m saleMeta, held domain.OrderID, pass int64, ok bool, err error) {
	k := w.Keys()
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
			passed = p.ZScore(ctx, k.Passes(g.r.VoucherID.Room()), g.r.UserID.String())
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

// pause waits d, or until ctx is done, when it returns ctx's error.
func pause(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
