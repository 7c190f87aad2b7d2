package redisstore

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/adapters/breaker"
)

// BreakerHook is a go-redis hook that runs every command and pipeline of a client
// through a circuit breaker (package breaker): it opens when a share of the calls in a
// rolling window failed for want of Redis, and then every call fails at once, without
// touching the network, with an error wrapping domain.ErrUnavailable (the API answers
// 503 unavailable); after a while one probe goes through, and its success closes it
// again, so the client recovers by itself when Redis is back.
//
// Only the failures of Redis count (see classifyRedis): a refused or reset connection,
// and a server that says it cannot serve now (LOADING, BUSY, MASTERDOWN,
// CLUSTERDOWN); a timeout only when the call waited its whole patience (the client's
// read timeout, see TuneClientOptions) while this process was not saturated. Every
// other answer of the server proves it is up: redis.Nil, and error replies about the
// command itself (NOSCRIPT, BUSYGROUP, NOGROUP, WRONGTYPE, a script's own error …).
// This client's own pool running dry and a call its caller cancelled count as neither:
// they say this process is busy, not that Redis is down.
//
// A call that failed for want of Redis, that the open breaker refused, or that waited
// too long for a pooled connection returns an error wrapping domain.ErrUnavailable and
// its cause, so the API answers 503 with Retry-After.
//
// Install it with client.AddHook(NewBreakerHook(name, settings)) on a client whose
// options went through TuneClientOptions. The in-process server of the zero-setup mode
// needs none: it cannot be unreachable.
type BreakerHook struct {
	b *breaker.Breaker
}

var _ redis.Hook = (*BreakerHook)(nil)

// NewBreakerHook returns a hook guarding one Redis client with a breaker called name
// (it names the breaker in errors and in OnStateChange). A zero s.Patience is the
// tuned read timeout.
func NewBreakerHook(name string, s breaker.Settings) *BreakerHook {
	if s.Patience == 0 {
		s.Patience = TunedTimeout
	}
	return &BreakerHook{b: breaker.New(name, s, classifyRedis)}
}

// State returns the breaker's state: "closed", "open" or "half-open".
func (h *BreakerHook) State() string { return h.b.State() }

// DialHook passes dials through untouched. A dial made for a command already runs
// inside that command's breaker call, so guarding it here would count one failure
// twice; and the pool's own background redial, which clears its memory of failed
// dials once Redis is back, must not be refused by an open breaker, or the probe
// that should close the breaker would keep failing on the pool's stale dial error.
func (h *BreakerHook) DialHook(next redis.DialHook) redis.DialHook {
	return next
}

// ProcessHook runs one command through the breaker. It is also where a failure of
// Redis becomes domain.ErrUnavailable: a refused command, and one that failed for want
// of Redis or of a pooled connection, get an error wrapping it (and the original) set
// on them, so cmd.Err and cmd.Result report it.
func (h *BreakerHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := h.b.Do(func() error { return next(ctx, cmd) })
		if err != nil && (breaker.Refused(err) || busy(err) || classifyRedis(err) != breaker.Success) {
			err = h.unavailable(err)
			cmd.SetErr(err)
		}
		return err
	}
}

// ProcessPipelineHook runs one pipeline (or MULTI/EXEC transaction) through the
// breaker as one call, since it is one round trip, and marks its failures as
// ProcessHook does.
func (h *BreakerHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := h.b.Do(func() error { return next(ctx, cmds) })
		if err == nil {
			return nil
		}
		if breaker.Refused(err) {
			err = h.unavailable(err)
			for _, cmd := range cmds {
				cmd.SetErr(err)
			}
			return err
		}
		for _, cmd := range cmds {
			if cerr := cmd.Err(); busy(cerr) || (cerr != nil && classifyRedis(cerr) != breaker.Success && classifyRedis(cerr) != breaker.Ignore) {
				cmd.SetErr(h.unavailable(cerr))
			}
		}
		if busy(err) || (classifyRedis(err) != breaker.Success && classifyRedis(err) != breaker.Ignore) {
			err = h.unavailable(err)
		}
		return err
	}
}

// unavailable wraps a refusal or a failure in domain.ErrUnavailable, keeping err
// reachable through errors.Is and errors.As. A cancelled call keeps its own error.
func (h *BreakerHook) unavailable(err error) error {
	if errors.Is(err, context.Canceled) {
		return err
	}
	return h.b.Unavailable(err)
}

// classifyRedis says what an error of a Redis call tells about Redis.
func classifyRedis(err error) breaker.Verdict {
	switch {
	case err == nil, errors.Is(err, redis.Nil):
		return breaker.Success
	case errors.Is(err, context.Canceled), busy(err):
		return breaker.Ignore
	}
	var reply redis.Error
	if errors.As(err, &reply) {
		// The server answered. Only these replies say it cannot serve at all.
		msg := reply.Error()
		for _, prefix := range []string{"LOADING ", "BUSY ", "MASTERDOWN ", "CLUSTERDOWN "} {
			if strings.HasPrefix(msg, prefix) {
				return breaker.Failure
			}
		}
		return breaker.Success
	}
	var netErr net.Error
	if errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &netErr) && netErr.Timeout()) {
		return breaker.Timeout
	}
	if errors.As(err, &netErr) ||
		errors.Is(err, io.EOF) ||
		errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNREFUSED) ||
		errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.EPIPE) {
		return breaker.Failure
	}
	return breaker.Success
}

// busy reports whether err is this client's own pool running out of connections: the
// answer is 503 all the same, but it says the instance is saturated, not that Redis is
// down, so it does not count against Redis.
func busy(err error) bool {
	return errors.Is(err, redis.ErrPoolTimeout) || errors.Is(err, redis.ErrPoolExhausted)
}

// TunedTimeout is how long a tuned client waits on Redis for a dial, a reply or a
// write before it gives up on a call (see TuneClientOptions).
const TunedTimeout = time.Second

// tunedPoolTimeout is the longest a call waits for a pooled connection; the caller's
// deadline, when nearer, ends the wait first.
const tunedPoolTimeout = 5 * time.Second

// TuneClientOptions sets o's timeouts and retries for the grab path: a call follows its
// caller's deadline (the request's, SECKILL_REQUEST_TIMEOUT), and no call waits more
// than TunedTimeout (1 s) on a dead or hung Redis:
//
//   - deadlines come from the call's context (ContextTimeoutEnabled), capped at 1 s
//     for a dial, a reply or a write: a busy machine answers late, but not that late;
//   - two dial attempts (DialerRetries 2; go-redis would otherwise dial 5 times): a
//     dial that failed sent nothing, so one more is safe, and it saves a burst from a
//     SYN a busy machine dropped; a refused dial fails again at once;
//   - no command retries (MaxRetries -1; 0 would mean go-redis's default of 3): a failed
//     call is answered with 503 and Retry-After instead, and the breaker counts it;
//   - waiting for a free connection ends with the caller's deadline (5 s at most); it
//     is this process being busy, and the breaker does not count it;
//   - pipelines take their connections from the one pool (PipelinePoolSize -1):
//     go-redis's separate pipeline pool, when the fresh connection it dialed fails to
//     set up (a frozen Redis accepts the dial, then answers nothing), tries the
//     pipeline again on a connection of the main pool, so a call would wait out two
//     timeouts instead of one.
//
// Blocking reads (XREADGROUP BLOCK) keep go-redis's own allowance: their block time
// plus 10 s. Call it before redis.NewClient; it leaves the other options alone.
func TuneClientOptions(o *redis.Options) {
	o.ContextTimeoutEnabled = true
	o.DialTimeout = TunedTimeout
	o.DialerRetries = 2
	o.ReadTimeout = TunedTimeout
	o.WriteTimeout = TunedTimeout
	o.MaxRetries = -1
	// Unused while retries are off; small in case someone turns them back on.
	o.MinRetryBackoff = 8 * time.Millisecond
	o.MaxRetryBackoff = 64 * time.Millisecond
	o.PoolTimeout = tunedPoolTimeout
	o.PipelinePoolSize = -1
}
