// Package breaker is the circuit breaker that guards each dependency (Redis, the
// database): it opens on the dependency's failures, not on this process's own load.
//
// It counts the calls of a rolling window and opens when, over at least MinCalls calls,
// the share that failed reaches FailureRatio: a ratio, not a run of consecutive
// failures, so a few unlucky calls among many good ones never open it. Each adapter
// says what its errors mean (a Classify function); besides, a timeout counts only when
// the call waited the dependency's whole patience while this process was not
// saturated (see Saturated): a call that timed out because its request had little time
// left, or because this process's goroutines could not run, says nothing about the
// dependency. Waiting for a pooled connection and a call cancelled by its client never
// count (the adapters classify them Ignore).
//
// While open, every call fails at once, without touching the network, with an error
// wrapping domain.ErrUnavailable; after OpenFor one probe goes through, and its success
// closes the breaker again.
package breaker

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sony/gobreaker/v2"

	"github.com/seckill/seckill/domain"
)

// Defaults of Settings.
const (
	// DefaultMinCalls is how many calls the window must hold before failures can open
	// the breaker.
	DefaultMinCalls = 10
	// DefaultFailureRatio is the share of failed calls in the window that opens it.
	DefaultFailureRatio = 0.5
	// DefaultWindow is how far back the rolling window counts.
	DefaultWindow = 10 * time.Second
	// DefaultOpenFor is how long an open breaker refuses every call before it lets one
	// probe through.
	DefaultOpenFor = time.Second
)

// Settings tune a Breaker. The zero value uses the defaults.
type Settings struct {
	// MinCalls is the fewest calls in the window for failures to open the breaker;
	// DefaultMinCalls when 0.
	MinCalls uint32
	// FailureRatio is the share of the window's calls that must have failed;
	// DefaultFailureRatio when 0.
	FailureRatio float64
	// Window is how far back calls are counted, in ten buckets; DefaultWindow when 0.
	Window time.Duration
	// OpenFor is how long the open breaker fails every call at once before it lets a
	// single probe through (half-open): the probe's success closes it, its failure
	// opens it again for as long. DefaultOpenFor when 0.
	OpenFor time.Duration
	// Patience is how long a call may wait on the dependency before its timeout is
	// evidence against it; a call that timed out sooner (its caller's deadline was
	// nearer) does not count. 0 counts every timeout made while not saturated.
	Patience time.Duration
	// OnStateChange, when set, is called on every change of state ("closed", "open",
	// "half-open"), so the wiring can log an outage once instead of once per call. It
	// runs under the breaker's lock: it must be quick and must not call the dependency.
	OnStateChange func(name, from, to string)
}

// Verdict is what one call's error says about the dependency.
type Verdict int

// The verdicts a Classify function gives.
const (
	// Success: the dependency answered (nil, or an answer about the call itself).
	Success Verdict = iota
	// Failure: the dependency could not be reached or could not serve.
	Failure
	// Timeout: the call ran out of time waiting for the dependency; it counts as a
	// Failure only when it waited the whole Patience while this process was not
	// saturated, and is ignored otherwise.
	Timeout
	// Ignore: the error says nothing about the dependency (a cancelled call, this
	// process's pool running dry).
	Ignore
)

// Breaker is one dependency's circuit breaker.
type Breaker struct {
	name     string
	cb       *gobreaker.CircuitBreaker[struct{}]
	classify func(error) Verdict
	patience time.Duration
}

// New returns a breaker called name (it names the dependency in errors and in
// OnStateChange) that judges errors with classify.
func New(name string, s Settings, classify func(error) Verdict) *Breaker {
	minCalls := s.MinCalls
	if minCalls == 0 {
		minCalls = DefaultMinCalls
	}
	ratio := s.FailureRatio
	if ratio <= 0 {
		ratio = DefaultFailureRatio
	}
	window := s.Window
	if window <= 0 {
		window = DefaultWindow
	}
	openFor := s.OpenFor
	if openFor <= 0 {
		openFor = DefaultOpenFor
	}
	b := &Breaker{name: name, classify: classify, patience: s.Patience}
	settings := gobreaker.Settings{
		Name:         name,
		MaxRequests:  1,
		Interval:     window,
		BucketPeriod: window / 10,
		Timeout:      openFor,
		ReadyToTrip: func(c gobreaker.Counts) bool {
			// Requests include the excluded calls, which count for nothing.
			counted := c.TotalSuccesses + c.TotalFailures
			return counted >= minCalls && float64(c.TotalFailures) >= ratio*float64(counted)
		},
		IsSuccessful: func(err error) bool { return b.classify(err) == Success },
		IsExcluded: func(err error) bool {
			var ig ignored
			return errors.As(err, &ig) || b.classify(err) == Ignore
		},
	}
	if s.OnStateChange != nil {
		settings.OnStateChange = func(name string, from, to gobreaker.State) {
			s.OnStateChange(name, from.String(), to.String())
		}
	}
	b.cb = gobreaker.NewCircuitBreaker[struct{}](settings)
	return b
}

// ignored marks a timeout that does not count (too short a wait, or a saturated
// process), so the breaker excludes it; Do unwraps it again.
type ignored struct{ err error }

func (i ignored) Error() string { return i.err.Error() }
func (i ignored) Unwrap() error { return i.err }

// Do runs fn through the breaker and returns its error. While the breaker is open it
// returns, without calling fn, an error wrapping domain.ErrUnavailable and
// gobreaker.ErrOpenState (Refused reports it); a failure of the dependency comes back
// wrapping domain.ErrUnavailable too, so the API answers 503 from the first one on.
func (b *Breaker) Do(fn func() error) error {
	_, err := b.cb.Execute(func() (struct{}, error) {
		start := time.Now()
		err := fn()
		if err != nil && b.classify(err) == Timeout && !b.counts(time.Since(start)) {
			return struct{}{}, ignored{err}
		}
		return struct{}{}, err
	})
	var ig ignored
	if errors.As(err, &ig) {
		err = ig.err
	}
	if err == nil {
		return nil
	}
	if Refused(err) {
		return b.Unavailable(err)
	}
	if v := b.classify(err); v == Failure || v == Timeout {
		return b.Unavailable(err)
	}
	return err
}

// counts reports whether a timeout after waiting took is evidence against the
// dependency.
func (b *Breaker) counts(took time.Duration) bool {
	return took >= b.patience && !Saturated()
}

// Unavailable wraps err in domain.ErrUnavailable naming the dependency, keeping err
// reachable through errors.Is and errors.As. An error that already wraps it is
// returned as it is.
func (b *Breaker) Unavailable(err error) error {
	if errors.Is(err, domain.ErrUnavailable) {
		return err
	}
	return fmt.Errorf("%s: %w: %w", b.name, domain.ErrUnavailable, err)
}

// State returns the breaker's state: "closed", "open" or "half-open".
func (b *Breaker) State() string { return b.cb.State().String() }

// Refused reports whether err is a breaker's own refusal, not the dependency's answer.
func Refused(err error) bool {
	return errors.Is(err, gobreaker.ErrOpenState) || errors.Is(err, gobreaker.ErrTooManyRequests)
}

// Bound gives ctx the deadline d from now when it has none, so no call waits forever on
// a hung server; cancel is nil when it added none (d <= 0 adds none either).
func Bound(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if d <= 0 {
		return ctx, nil
	}
	if _, ok := ctx.Deadline(); ok {
		return ctx, nil
	}
	return context.WithTimeout(ctx, d)
}
