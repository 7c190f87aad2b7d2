package redisstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/sony/gobreaker/v2"

	"github.com/seckill/seckill/domain"
)

// Defaults of BreakerSettings.
const (
	// DefaultBreakerFailures is how many consecutive failures open the breaker.
	DefaultBreakerFailures = 5
	// DefaultBreakerOpenFor is how long an open breaker refuses every call before it
	// lets one probe through.
	DefaultBreakerOpenFor = time.Second
)

// BreakerSettings tune a BreakerHook. The zero value uses the defaults.
type BreakerSettings struct {
	// Failures opens the breaker after this many consecutive failures of Redis;
	// DefaultBreakerFailures when 0.
	Failures uint32
	// OpenFor is how long the open breaker fails every call at once before it lets a
	// single probe through (half-open): the probe's success closes it, its failure
	// opens it again for as long. DefaultBreakerOpenFor when 0.
	OpenFor time.Duration
	// OnStateChange, when set, is called on every change of state ("closed", "open",
	// "half-open"), so the wiring can log an outage once instead of once per request.
	// It runs under the breaker's lock: it must be quick and must not call Redis.
	OnStateChange func(name, from, to string)
}

// BreakerHook is a go-redis hook that runs every command and pipeline of a client
// through a circuit breaker. After BreakerSettings.Failures consecutive failures of
// Redis itself, every call fails at once, without touching the network, with an error
// wrapping domain.ErrUnavailable (the API answers 503 unavailable), instead of each
// waiting out the client's timeouts; after BreakerSettings.OpenFor one probe goes
// through, and its success closes the breaker again, so the client recovers by itself
// when Redis is back.
//
// Only the failures of the dependency count (see redisFailure): a network error, a
// timeout, a refused or reset connection, and a server that says
// it cannot serve now (LOADING, BUSY, MASTERDOWN, CLUSTERDOWN). Every other answer of
// the server proves it is up, and counts as a success: redis.Nil, and error replies
// about the command itself (NOSCRIPT, BUSYGROUP, NOGROUP, WRONGTYPE, a script's own
// error …). A call the caller cancelled counts as neither.
//
// A call that failed for want of Redis, or that the open breaker refused, returns an
// error wrapping domain.ErrUnavailable and its cause (gobreaker.ErrOpenState when
// refused), so the API answers 503 from the first failure on.
//
// Install it with client.AddHook(NewBreakerHook(name, settings)) on a client whose
// options went through TuneClientOptions, so the calls that trip it fail quickly too.
type BreakerHook struct {
	name string
	cb   *gobreaker.CircuitBreaker[struct{}]
}

var _ redis.Hook = (*BreakerHook)(nil)

// NewBreakerHook returns a hook guarding one Redis client with a breaker called name
// (it names the breaker in errors and in OnStateChange).
func NewBreakerHook(name string, s BreakerSettings) *BreakerHook {
	failures := s.Failures
	if failures == 0 {
		failures = DefaultBreakerFailures
	}
	openFor := s.OpenFor
	if openFor <= 0 {
		openFor = DefaultBreakerOpenFor
	}
	settings := gobreaker.Settings{
		Name:        name,
		MaxRequests: 1,
		Timeout:     openFor,
		ReadyToTrip: func(c gobreaker.Counts) bool { return c.ConsecutiveFailures >= failures },
		IsSuccessful: func(err error) bool {
			return !redisFailure(err)
		},
		IsExcluded: func(err error) bool { return errors.Is(err, context.Canceled) },
	}
	if s.OnStateChange != nil {
		settings.OnStateChange = func(name string, from, to gobreaker.State) {
			s.OnStateChange(name, from.String(), to.String())
		}
	}
	return &BreakerHook{name: name, cb: gobreaker.NewCircuitBreaker[struct{}](settings)}
}

// State returns the breaker's state: "closed", "open" or "half-open".
func (h *BreakerHook) State() string { return h.cb.State().String() }

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
// of Redis, get an error wrapping it (and the original) set on them, so cmd.Err and
// cmd.Result report it and the API answers 503 from the first failure on, not only
// once the breaker is open.
func (h *BreakerHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		_, err := h.cb.Execute(func() (struct{}, error) {
			return struct{}{}, next(ctx, cmd)
		})
		if err != nil && (refused(err) || redisFailure(err) || busy(err)) {
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
		_, err := h.cb.Execute(func() (struct{}, error) {
			return struct{}{}, next(ctx, cmds)
		})
		if err == nil {
			return nil
		}
		if refused(err) {
			err = h.unavailable(err)
			for _, cmd := range cmds {
				cmd.SetErr(err)
			}
			return err
		}
		for _, cmd := range cmds {
			if cerr := cmd.Err(); redisFailure(cerr) || busy(cerr) {
				cmd.SetErr(h.unavailable(cerr))
			}
		}
		if redisFailure(err) || busy(err) {
			err = h.unavailable(err)
		}
		return err
	}
}

// refused reports whether err is the breaker's own refusal, not Redis's answer.
func refused(err error) bool {
	return errors.Is(err, gobreaker.ErrOpenState) || errors.Is(err, gobreaker.ErrTooManyRequests)
}

// unavailable wraps a refusal or a failure in domain.ErrUnavailable, keeping err
// reachable through errors.Is and errors.As.
func (h *BreakerHook) unavailable(err error) error {
	if errors.Is(err, domain.ErrUnavailable) {
		return err
	}
	return fmt.Errorf("redis %s: %w: %w", h.name, domain.ErrUnavailable, err)
}

// redisFailure reports whether err means Redis could not be reached or could not
// serve: those are the errors that trip the breaker. A nil error, redis.Nil and any
// error reply about the command itself are answers of a live server.
func redisFailure(err error) bool {
	if err == nil || errors.Is(err, redis.Nil) || errors.Is(err, context.Canceled) {
		return false
	}
	var reply redis.Error
	if errors.As(err, &reply) {
		// The server answered. Only these replies say it cannot serve at all.
		msg := reply.Error()
		for _, prefix := range []string{"LOADING ", "BUSY ", "MASTERDOWN ", "CLUSTERDOWN "} {
			if strings.HasPrefix(msg, prefix) {
				return true
			}
		}
		return false
	}
	var netErr net.Error
	return errors.As(err, &netErr) ||
		errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, io.EOF) ||
		errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNREFUSED) ||
		errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.EPIPE)
}

// busy reports whether err is this client's own pool running out of connections: the
// answer is 503 all the same, but it says the instance is saturated, not that Redis is
// down, so it does not trip the breaker (a flood would otherwise open it and turn
// every grab away for OpenFor).
func busy(err error) bool {
	return errors.Is(err, redis.ErrPoolTimeout) || errors.Is(err, redis.ErrPoolExhausted)
}

// Tuned client timeouts (see TuneClientOptions).
const (
	tunedDialTimeout  = 250 * time.Millisecond
	tunedReadTimeout  = 300 * time.Millisecond
	tunedWriteTimeout = 300 * time.Millisecond
	tunedPoolTimeout  = 400 * time.Millisecond
)

// TuneClientOptions sets o's timeouts and retries so that no call waits more than
// about 700 ms for a dead or hung Redis (the API promises an answer within 1 s):
//
//   - one dial attempt (DialerRetries 1) of at most 250 ms: go-redis would otherwise
//     dial 5 times, 100 ms apart, each for up to 5 s;
//   - reads and writes time out after 300 ms (a grab is one short script);
//   - no command retries (MaxRetries -1; 0 would mean go-redis's default of 3, each
//     waiting its timeout again, with up to 512 ms back-off between): a failed call
//     is answered with 503 and Retry-After instead, and the breaker counts it;
//   - at most 400 ms waiting for a free connection when all are busy.
//
// Worst case: 400 ms for a connection plus 300 ms for the answer. Blocking reads
// (XREADGROUP BLOCK) keep go-redis's own allowance: their block time plus 10 s.
// Call it before redis.NewClient; it leaves the other options alone.
func TuneClientOptions(o *redis.Options) {
	o.DialTimeout = tunedDialTimeout
	o.DialerRetries = 1
	o.ReadTimeout = tunedReadTimeout
	o.WriteTimeout = tunedWriteTimeout
	o.MaxRetries = -1
	// Unused while retries are off; small in case someone turns them back on.
	o.MinRetryBackoff = 8 * time.Millisecond
	o.MaxRetryBackoff = 64 * time.Millisecond
	o.PoolTimeout = tunedPoolTimeout
}
