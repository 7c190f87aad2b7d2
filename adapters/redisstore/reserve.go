package redisstore

import (
	"context"
	_ "embed"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/domain"
)

// Outcomes of reserveScript, per grab.
const (
	reserved = iota
	alreadyPurchased
	soldOut
	notStarted
	ended
	unknownVoucher
	overLimit
	rateLimited
	paused
	backlogged
	restoring
	challengeRequired
	queueRequired
	campaignSoldOut
	campaignChanged
	campaignLimit
	campaignKeysNeeded
)

// reserveScript judges a batch of grabs of one voucher in order and takes each one
// that passes: it takes the units, records the buyer and the order, and appends the
// reservation to the stream, all in one step. A single grab is a batch of one. Its
// KEYS, ARGV and reply are documented at the top of reserve.lua.
//
//go:embed reserve.lua
var reserveSrc string
var reserveScript = newScript(reserveSrc)

// Reserve takes r.Quantity units of r.VoucherID for r.UserID atomically and appends
// the reservation to the voucher's stream. The sale window and the user's rate are
// judged at r.At — or, when r.At is zero, by the sale's clock (Redis's TIME) at the
// moment the script runs, which also stamps the reservation (its order's created_at).
// Concurrent Reserves of one voucher share Redis calls (see Options.MaxBatch): while
// one call is in flight, the grabs that arrive go together in the next.
// A grab of a waiting room is taken only with an outstanding pass (its user's member of
// Keys.Passes scored with r.Pass, not expired by the sale's clock), which the
// reservation uses up: the member leaves the set in the same step.
// It returns domain.ErrChallengeRequired, domain.ErrQueueRequired (the gates of
// domain.Sale.Judge), domain.ErrSoldOut, an *domain.AlreadyPurchasedError naming the
// existing order, domain.ErrNotStarted, domain.ErrEnded, domain.ErrNotFound (no sale
// state), a *domain.ValidationError (quantity below 1 or above the per-user limit), a
// *domain.RateLimitedError (the user is over Options.UserRate), domain.ErrPaused, or
// an error wrapping domain.ErrUnavailable (backlog over Options.MaxBacklog, Redis
// unreachable, or ctx ended while the grab waited for its turn, before it was sent).
func (s *Stock) Reserve(ctx context.Context, r domain.Reservation) error {
	// A negative quantity would put units back on sale; refuse it before Redis does.
	if r.Quantity < 1 {
		return domain.Invalid("quantity", "must be at least 1")
	}
	if s.restarts != nil && s.restarts.Healing() {
		return fmt.Errorf("reserve stock: %w: redis restarted or failed over; its sale state is being healed", domain.ErrUnavailable)
	}
	if s.batches == nil {
		reply, err := s.reserveBatch(ctx, []domain.Reservation{r}, []string{traceParent(ctx)})
		if err != nil {
			return err
		}
		return reply.errs[0]
	}
	return s.batches.reserve(ctx, r)
}

// BatchSizes returns how many reserve calls carried each number of grabs since s was
// made: element n counts the calls of n grabs, up to Options.MaxBatch. It is nil when
// grabs are not shared (MaxBatch 1).
func (s *Stock) BatchSizes() []int64 {
	if s.batches == nil {
		return nil
	}
	return s.batches.batchSizes()
}

// ReserveBatch judges rs, grabs of one voucher, in order in one Redis call, as
// Reserve judges each: the answers are Reserve's, one per grab (nil: reserved), and a
// grab sees what the earlier ones took (a user's second grab is answered with the
// first one's order). The error is for the call as a whole: nothing was judged.
// Every grab must have a quantity of at least 1 and the same voucher.
func (s *Stock) ReserveBatch(ctx context.Context, rs []domain.Reservation) ([]error, error) {
	reply, err := s.reserveBatch(ctx, rs, nil)
	return reply.errs, err
}

// reserveBatch judges rs in one call; tps, when not nil, holds each grab's W3C
// traceparent ("" when untraced) for its stream entry. A campaign's voucher's batch
// is sent lean first — the campaign's terms and holders without its vouchers' keys,
// which a batch of first grabs judged by the units taken the campaign keeps does not
// read — and again with them when the script asks for them.
func (s *Stock) reserveBatch(ctx context.Context, rs []domain.Reservation, tps []string) (batchReply, error) {
	return s.reserveJudged(ctx, rs, tps, true)
}

// reserveJudged is reserveBatch, lean or not.
func (s *Stock) reserveJudged(ctx context.Context, rs []domain.Reservation, tps []string, lean bool) (batchReply, error) {
	if len(rs) == 0 {
		return batchReply{remaining: -1}, nil
	}
	id := rs[0].VoucherID
	keys := make([]string, 5, 6+len(rs))
	keys[0], keys[1], keys[2], keys[3], keys[4] = s.keys.Meta(id), s.keys.Buyers(id), s.keys.Orders(id), s.keys.Stream(id), s.keys.Passes(id.Room())
	if s.interval > 0 {
		keys = append(keys, s.keys.Rates(id))
	}
	// On one server the script adds each reservation to its user's index; on a cluster
	// it cannot reach the users' slots, and the index is written first (indexGrabs).
	var indexTTL int64
	if !s.sharded {
		indexTTL = max(s.grace.Milliseconds(), 1)
	}
	campaign, number := id.Campaign()
	variants := s.campaignVariants(campaign, number)
	told := variants
	if lean {
		told = -variants
	}
	args, err := s.reserveArgs(rs, tps, indexTTL, told, number)
	if err != nil {
		return batchReply{}, err
	}
	if indexTTL > 0 {
		for _, r := range rs {
			keys = append(keys, s.keys.UserOrders(r.UserID))
		}
	} else if err := s.indexGrabs(ctx, rs); err != nil {
		// Each user's index first: then every reservation has its entry.
		return batchReply{}, fmt.Errorf("reserve stock: %w", err)
	}
	switch {
	case variants > 0 && lean:
		keys = append(keys, s.keys.Campaign(campaign), s.keys.CampaignHolders(campaign))
	case variants > 0:
		keys = append(keys, s.campaignKeys(campaign, variants)...)
	}
	// A grab that found no heal under way (Reserve) may still reach a server that
	// changed: another command's new connection saw the change first, and this one's
	// connection, dialed after it, was let through. Its answers were judged by a state
	// not healed yet, so none is given: the reservations the call made are healed like
	// any other, and a retry, once the heal is done, tells the truth.
	var gen uint64
	if s.restarts != nil {
		gen = s.restarts.Generation()
	}
	reply, acked, err := s.runReserve(ctx, keys, args)
	if err != nil {
		return batchReply{}, fmt.Errorf("reserve stock: %w", err)
	}
	if s.restarts != nil && s.restarts.Generation() != gen {
		return batchReply{}, fmt.Errorf("reserve stock: %w: redis restarted or failed over while the grabs were judged; its sale state is being healed", domain.ErrUnavailable)
	}
	// The script answers the units left, then a code and an extra value per grab; a
	// reply of any other shape becomes an error rather than a panic on the grab path.
	if len(reply) != 1+2*len(rs) {
		return batchReply{}, fmt.Errorf("reserve stock: unexpected reply %v", reply)
	}
	if again, err := s.campaignGrew(reply, id, variants); again || err != nil {
		if err != nil {
			return batchReply{}, err
		}
		return s.reserveJudged(ctx, rs, tps, lean)
	}
	if code, _ := reply[1].(int64); code == campaignKeysNeeded && lean {
		return s.reserveJudged(ctx, rs, tps, false)
	}
	return s.outcomes(rs, reply, acked), nil
}

// outcomes reads reserveScript's reply to the batch rs, confirmed by acked replicas:
// the units left, then each grab's outcome (reserveOutcome), a reservation too few
// replicas confirmed answered as unavailable.
func (s *Stock) outcomes(rs []domain.Reservation, reply []any, acked int) batchReply {
	left, _ := reply[0].(int64)
	out := batchReply{errs: make([]error, len(rs)), remaining: int(left)}
	for i, r := range rs {
		code, ok := reply[1+2*i].(int64)
		extra, _ := reply[2+2*i].(string)
		if !ok {
			code = -1
		}
		out.errs[i] = reserveOutcome(r, code, extra)
		if out.errs[i] == nil && acked < s.minReplicas {
			out.errs[i] = fmt.Errorf("reserve stock: order %s: %w: %d of %d replicas confirmed it within %v; a retry tells whether it stands",
				r.OrderID, domain.ErrUnavailable, acked, s.minReplicas, s.replicaTimeout)
		}
	}
	return out
}

// reserveArgs returns reserveScript's ARGV for the batch rs of one voucher (reserve.lua
// documents them), or an error for a grab of another voucher or below one unit.
func (s *Stock) reserveArgs(rs []domain.Reservation, tps []string, indexTTL int64, variants, number int) ([]any, error) {
	id := rs[0].VoucherID
	args := make([]any, 9, 9+7*len(rs))
	args[0], args[1], args[2], args[3], args[4], args[5], args[6] = id.String(), s.interval, s.tolerance, s.maxBacklog, s.group, indexTTL, s.window
	args[7], args[8] = variants, number
	for i, r := range rs {
		if r.VoucherID != id || r.Quantity < 1 {
			return nil, fmt.Errorf("reserve stock: a batch of voucher %s holds %+v", id, r)
		}
		tp := ""
		if tps != nil {
			tp = tps[i]
		}
		args = append(args, r.UserID.String(), string(r.OrderID), r.Quantity, atMillis(r.At), tp, atMillis(r.Pass), luaFlag(r.Proven))
	}
	return args, nil
}

// runReserve runs reserveScript and, with Options.MinReplicas, a WAIT on the same
// connection right after it (a pipeline of a node's own client), returning the
// script's reply and how many replicas acknowledged it.
func (s *Stock) runReserve(ctx context.Context, keys []string, args []any) ([]any, int, error) {
	if s.minReplicas <= 0 {
		reply, err := reserveScript.Run(ctx, s.client, keys, args...).Slice()
		return reply, 0, err
	}
	// On a cluster, the master of the voucher's slot; elsewhere the client itself,
	// whose pipeline holds one connection.
	var node redis.Cmdable = s.client
	if c, ok := s.client.(interface {
		MasterForKey(context.Context, string) (*redis.Client, error)
	}); ok {
		m, err := c.MasterForKey(ctx, keys[0])
		if err != nil {
			return nil, 0, err
		}
		node = m
	}
	for attempt := 0; ; attempt++ {
		pipe := node.Pipeline()
		script := pipe.EvalSha(ctx, reserveScript.Hash(), keys, args...)
		wait := pipe.Do(ctx, "WAIT", s.minReplicas, s.replicaTimeout.Milliseconds())
		// Each command's own error is checked below.
		_, _ = pipe.Exec(ctx)
		if attempt == 0 && redis.HasErrorPrefix(script.Err(), "NOSCRIPT") {
			if err := reserveScript.Load(ctx, node).Err(); err != nil {
				return nil, 0, err
			}
			continue
		}
		if err := script.Err(); err != nil {
			return nil, 0, err
		}
		reply, err := script.Slice()
		if err != nil {
			return nil, 0, err
		}
		// The script ran; a WAIT that failed leaves only the replicas' count unknown,
		// which counts as none.
		acked, _ := wait.Int()
		return reply, acked, nil
	}
}

// atMillis is how a script takes the time a grab is judged at: Unix ms, or 0 for the
// sale's clock (sale_now in prelude.lua) when t is zero.
func atMillis(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

// reserveOutcome turns one grab's code and extra value from reserveScript into
// Reserve's answer.
func reserveOutcome(r domain.Reservation, code int64, extra string) error {
	switch code {
	case reserved:
		return nil
	case alreadyPurchased:
		return &domain.AlreadyPurchasedError{OrderID: domain.OrderID(extra)}
	case soldOut:
		return domain.ErrSoldOut
	case notStarted:
		return domain.ErrNotStarted
	case ended:
		return domain.ErrEnded
	case unknownVoucher:
		return domain.ErrNotFound
	case overLimit:
		return domain.Invalid("quantity", "exceeds the per-user limit")
	case rateLimited:
		ms, _ := strconv.ParseInt(extra, 10, 64)
		return &domain.RateLimitedError{RetryAfter: time.Duration(ms) * time.Millisecond}
	case paused:
		return domain.ErrPaused
	case backlogged:
		return fmt.Errorf("reserve stock: voucher %s: %w: too many reservations wait to be persisted", r.VoucherID, domain.ErrUnavailable)
	case restoring:
		return fmt.Errorf("reserve stock: voucher %s: %w: its sale state is being restored", r.VoucherID, domain.ErrUnavailable)
	case challengeRequired:
		return domain.ErrChallengeRequired
	case queueRequired:
		return domain.ErrQueueRequired
	case campaignSoldOut:
		return domain.ErrCampaignSoldOut
	case campaignLimit:
		var held []domain.OrderID
		for _, id := range strings.Fields(extra) {
			held = append(held, domain.OrderID(id))
		}
		if len(held) == 0 {
			break
		}
		return &domain.AlreadyPurchasedError{OrderID: held[0], Orders: held}
	}
	return fmt.Errorf("reserve stock: unexpected outcome %d %q", code, extra)
}

// campaignGrew reports whether reply says the campaign holds more vouchers than the
// variants the batch was judged with (nothing was judged), and learns the count: the
// batch is to be judged again with the campaign as it is.
func (s *Stock) campaignGrew(reply []any, id domain.VoucherID, variants int) (bool, error) {
	if code, _ := reply[1].(int64); code != campaignChanged {
		return false, nil
	}
	if err := s.learnVariants(id, variants, reply[2]); err != nil {
		return false, fmt.Errorf("reserve stock: %w", err)
	}
	return true, nil
}
