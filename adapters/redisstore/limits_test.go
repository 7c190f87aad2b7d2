package redisstore_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/seckill/seckill/adapters/redisstore"
	"github.com/seckill/seckill/adapters/testenv"
	"github.com/seckill/seckill/domain"
	"github.com/seckill/seckill/ports"
)

// limitedStock is a Stock with the grab path's limits set.
func limitedStock(t *testing.T, opts redisstore.Options) *redisstore.Stock {
	t.Helper()
	client, base := newStock(t, 0)
	opts.Prefix = base.Keys().Prefix
	return redisstore.NewStock(client, opts)
}

func TestReserveUserRate(t *testing.T) {
	ctx := context.Background()
	s := limitedStock(t, redisstore.Options{UserRate: 2, UserBurst: 3})
	client := testenv.Redis(t)
	warm(t, client, s, voucher(1, 100, 1))
	at := grab(1, 7, 1).At
	attempt := func(user domain.UserID, ms int) error {
		r := grab(1, user, 1)
		r.OrderID = domain.OrderID(r.OrderID + domain.OrderID(time.Duration(ms).String()))
		r.At = at.Add(time.Duration(ms) * time.Millisecond)
		return s.Reserve(ctx, r)
	}
	// Three at once pass (one reservation, then already purchased); the fourth is
	// refused with the wait until the next is allowed (500 ms at 2 a second).
	check(t, attempt(7, 0))
	for i := 0; i < 2; i++ {
		if err := attempt(7, 0); !errors.Is(err, domain.ErrAlreadyPurchased) {
			t.Fatalf("attempt %d: %v", i+2, err)
		}
	}
	err := attempt(7, 0)
	var rl *domain.RateLimitedError
	if !errors.As(err, &rl) || rl.RetryAfter != 500*time.Millisecond {
		t.Fatalf("fourth attempt: %v, want rate limited for 500ms", err)
	}
	if err := attempt(7, 499); !errors.Is(err, domain.ErrRateLimited) {
		t.Fatalf("just before the wait is over: %v", err)
	}
	if err := attempt(7, 500); !errors.Is(err, domain.ErrAlreadyPurchased) {
		t.Fatalf("after the wait: %v", err)
	}
	// Another user has a budget of its own.
	check(t, attempt(8, 0))
	if got := remaining(t, s, 1); got != 98 {
		t.Fatalf("remaining = %d, want 98", got)
	}
}

func TestReserveBackpressure(t *testing.T) {
	ctx := context.Background()
	s := limitedStock(t, redisstore.Options{MaxBacklog: 3})
	client := testenv.Redis(t)
	warm(t, client, s, voucher(1, 100, 1))
	q := redisstore.NewQueue(client, redisstore.QueueOptions{Prefix: s.Keys().Prefix, Consumer: "c"})
	for u := domain.UserID(1); u <= 4; u++ {
		check(t, s.Reserve(ctx, grab(1, u, 1)))
	}
	// Four wait (one more than the bound): the next grab is refused, and changes nothing.
	err := s.Reserve(ctx, grab(1, 5, 1))
	if !errors.Is(err, domain.ErrUnavailable) {
		t.Fatalf("reserve over the backlog: %v", err)
	}
	if got := remaining(t, s, 1); got != 96 {
		t.Fatalf("remaining = %d, want 96", got)
	}
	// Delivered but unacknowledged entries still count ...
	ds, err := q.Read(ctx, 10, time.Millisecond)
	check(t, err)
	if err := s.Reserve(ctx, grab(1, 5, 1)); !errors.Is(err, domain.ErrUnavailable) {
		t.Fatalf("reserve with entries pending: %v", err)
	}
	// ... acknowledged ones do not, trimmed or not.
	check(t, q.Ack(ctx, ds[:2]...))
	check(t, s.Reserve(ctx, grab(1, 5, 1)))
}

// TestReserveLimitsRuleOrder holds the script and the WATCH strategy to the order of
// their own limits around the grab rule (domain.Sale.Judge): the user's rate before
// it, the backlog after it.
func TestReserveLimitsRuleOrder(t *testing.T) {
	ctx := context.Background()
	// One attempt a second per user, and a backlog of at most one entry.
	opts := redisstore.Options{UserRate: 1, UserBurst: 1, MaxBacklog: 1}
	lua := limitedStock(t, opts)
	client, w := newWatchStock(t, opts)
	for _, c := range []struct {
		name  string
		stock ports.Stock
		base  *redisstore.Stock
	}{{"script", lua, lua}, {"watch", w, w.Stock}} {
		t.Run(c.name, func(t *testing.T) {
			s := c.stock
			warm(t, client, c.base, voucher(1, 2, 1))
			steps := []struct {
				name  string
				user  domain.UserID
				qty   int
				at    time.Duration
				pause bool
				want  error
			}{
				{"taken", 1, 1, 0, false, nil},
				{"taken, the last unit", 2, 1, 0, false, nil},
				// Sold out, and two entries wait: over the backlog from now on.
				{"sold out, backlog", 3, 1, 0, false, domain.ErrSoldOut},
				{"held, sold out, backlog", 1, 1, time.Second, false, domain.ErrAlreadyPurchased},
				{"over the limit, sold out, backlog", 4, 2, 0, false, domain.ErrInvalid},
				{"not started, sold out, backlog", 5, 1, -2 * time.Hour, false, domain.ErrNotStarted},
				{"paused, sold out, backlog", 6, 1, 0, true, domain.ErrPaused},
				{"rate, paused, sold out, backlog", 6, 1, 0, true, domain.ErrRateLimited},
			}
			for i, st := range steps {
				if st.pause {
					if _, err := s.SetPaused(ctx, 1, true); err != nil {
						t.Fatal(err)
					}
				}
				r := grab(1, st.user, st.qty)
				r.OrderID = domain.OrderID(fmt.Sprintf("o%d-%d", st.user, i))
				r.At = now.Add(st.at)
				err := s.Reserve(ctx, r)
				if st.want == nil && err != nil || st.want != nil && !errors.Is(err, st.want) {
					t.Fatalf("%s: Reserve = %v, want %v", st.name, err, st.want)
				}
			}
		})
	}
}
