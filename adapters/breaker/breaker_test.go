package breaker_test

import (
	"errors"
	"testing"
	"time"

	"github.com/sony/gobreaker/v2"

	"github.com/seckill/seckill/adapters/breaker"
	"github.com/seckill/seckill/domain"
)

var (
	errDown    = errors.New("connection refused")
	errTimeout = errors.New("i/o timeout")
	errMine    = errors.New("pool exhausted")
	errReply   = errors.New("WRONGTYPE")
)

func classify(err error) breaker.Verdict {
	switch {
	case err == nil, errors.Is(err, errReply):
		return breaker.Success
	case errors.Is(err, errDown):
		return breaker.Failure
	case errors.Is(err, errTimeout):
		return breaker.Timeout
	}
	return breaker.Ignore
}

func call(b *breaker.Breaker, err error) error { return b.Do(func() error { return err }) }

// TestOpensOnARatioOverMinCalls: failures open the breaker only once they are the set
// share of at least MinCalls calls; errors the dependency answered count as successes
// and this process's own troubles as nothing.
func TestOpensOnARatioOverMinCalls(t *testing.T) {
	b := breaker.New("dep", breaker.Settings{MinCalls: 6, FailureRatio: 0.5, OpenFor: time.Hour}, classify)
	for range 4 {
		if err := call(b, errReply); !errors.Is(err, errReply) || errors.Is(err, domain.ErrUnavailable) {
			t.Fatalf("an answer of the dependency came back as %v", err)
		}
	}
	for range 100 {
		if err := call(b, errMine); errors.Is(err, domain.ErrUnavailable) {
			t.Fatalf("an ignored error came back as %v", err)
		}
	}
	for i := range 3 {
		if err := call(b, errDown); !errors.Is(err, domain.ErrUnavailable) || !errors.Is(err, errDown) {
			t.Fatalf("failure %d came back as %v, want ErrUnavailable wrapping it", i, err)
		}
		if got := b.State(); got != "closed" {
			t.Fatalf("open after %d failures of %d calls, want closed below the ratio", i+1, 4+i+1)
		}
	}
	_ = call(b, errDown) // 4 of 8
	if got := b.State(); got != "open" {
		t.Fatalf("breaker %s with half of 8 calls failed, want open", got)
	}
	ran := false
	err := b.Do(func() error { ran = true; return nil })
	if ran || !breaker.Refused(err) || !errors.Is(err, domain.ErrUnavailable) || !errors.Is(err, gobreaker.ErrOpenState) {
		t.Fatalf("open breaker: ran %v, err %v; want a refusal without the call", ran, err)
	}
}

// TestShortTimeoutsDoNotCount: a timeout counts only after the whole patience.
func TestShortTimeoutsDoNotCount(t *testing.T) {
	b := breaker.New("dep", breaker.Settings{MinCalls: 1, FailureRatio: 0.01, Patience: time.Hour}, classify)
	for range 10 {
		if err := call(b, errTimeout); !errors.Is(err, domain.ErrUnavailable) {
			t.Fatalf("a timeout came back as %v, want ErrUnavailable", err)
		}
	}
	if got := b.State(); got != "closed" {
		t.Fatalf("breaker %s after timeouts shorter than the patience, want closed", got)
	}
	patient := breaker.New("dep", breaker.Settings{MinCalls: 1, FailureRatio: 0.01}, classify)
	_ = call(patient, errTimeout)
	if got := patient.State(); got != "open" && !breaker.Saturated() {
		t.Fatalf("breaker %s after a timeout past its patience, want open", got)
	}
}
