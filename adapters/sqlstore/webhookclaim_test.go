package sqlstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/seckill/seckill/adapters/memory"
	"github.com/seckill/seckill/adapters/testenv"
	"github.com/seckill/seckill/application"
	"github.com/seckill/seckill/domain"
)

// hangingSender holds every attempt until its context ends, telling sending which
// delivery it holds: a receiver that never answers, or an attempt in flight when
// its instance dies.
type hangingSender struct{ sending chan string }

func (s hangingSender) Send(ctx context.Context, id string, _ time.Time, _ []byte) (int, error) {
	s.sending <- id
	<-ctx.Done()
	return 0, ctx.Err()
}

// recordingSender answers every attempt 204 and tells sent which delivery it took.
type recordingSender struct{ sent chan string }

func (s recordingSender) Send(_ context.Context, id string, _ time.Time, _ []byte) (int, error) {
	s.sent <- id
	return 204, nil
}

// A dispatcher that stops in the middle of an attempt (an instance killed, or shut
// down) leaves the delivery claimed; another instance's dispatcher sends it again,
// under the same id, as soon as the attempt could no longer be running — the attempt
// timeout and a margin of 5 s after the claim — and not while it still could. The
// dispatchers' clocks are set by the test; the outbox is the real database's.
func TestAStoppedDispatchersDeliveryIsSentAgainOnceItsClaimLapses(t *testing.T) {
	f := newOutboxFixture(t)
	v := f.voucher(t, 10)
	f.persisted(t, reserve(1, v, 1, 1))
	const timeout, margin = 10 * time.Second, 5 * time.Second
	claimed := time.Now().Add(time.Second) // after the event's row was written
	clock := memory.NewClock(claimed)
	render := func(domain.Event) ([]byte, error) { return []byte(`{}`), nil }
	opts := application.WebhookOptions{Timeout: timeout, Poll: 10 * time.Millisecond, Concurrency: 1}

	hang := hangingSender{sending: make(chan string, 1)}
	first := application.NewDeliverWebhooks(f.hooks, hang, render, clock, opts, application.WebhookObserver{})
	ctx, stop := context.WithCancel(context.Background())
	stopped := make(chan error, 1)
	go func() { stopped <- first.Run(ctx) }()
	var id string
	select {
	case id = <-hang.sending:
	case <-time.After(10 * time.Second):
		t.Fatal("the first dispatcher sent nothing")
	}
	stop() // mid-attempt: nothing is recorded, the claim stays
	if err := <-stopped; err != nil {
		t.Fatal(err)
	}

	rec := recordingSender{sent: make(chan string, 10)}
	second := application.NewDeliverWebhooks(f.hooks, rec, render, clock, opts, application.WebhookObserver{})
	ctx2, stop2 := context.WithCancel(context.Background())
	defer stop2()
	go func() { _ = second.Run(ctx2) }()
	// While the first attempt could still run, nobody sends it again (any other
	// delivery may be sent).
	clock.Set(claimed.Add(timeout))
	for quiet := time.After(300 * time.Millisecond); ; {
		select {
		case got := <-rec.sent:
			if got == id {
				t.Fatalf("delivery %s sent again while the first attempt could still run", got)
			}
			continue
		case <-quiet:
		}
		break
	}
	clock.Set(claimed.Add(timeout + margin + time.Millisecond))
	testenv.Eventually(t, 10*time.Second, "the delivery sent again", func() (bool, string) {
		for {
			select {
			case got := <-rec.sent:
				if got == id {
					return true, ""
				}
			default:
				return false, "not sent again"
			}
		}
	})
}
