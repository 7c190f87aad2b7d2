package redisstore_test

import (
	"testing"
	"time"

	"github.com/seckill/seckill/adapters/redisstore"
	"github.com/seckill/seckill/adapters/testenv"
)

// offClock is a host's clock that is off by skew.
type offClock time.Duration

func (c offClock) Now() time.Time { return time.Now().Add(time.Duration(c)) }

// TestClockTellsRedissTimeWhateverTheHostSays: a host whose clock is ten seconds off
// tells Redis's time once the clock is measured, reports its offset, and carries the
// time forward between measurements.
func TestClockTellsRedissTimeWhateverTheHostSays(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	client := testenv.Redis(t)
	for _, skew := range []time.Duration{10 * time.Second, -10 * time.Second} {
		c := redisstore.NewClock(client, offClock(skew))
		if got := time.Until(c.Now()); (got - skew).Abs() > time.Second {
			t.Fatalf("before its first measurement the clock is %v off the host's, want the host's (%v)", got, skew)
		}
		offset, err := c.Sync(ctx)
		check(t, err)
		// Generous: the measurement is off by at most half a round trip, which a busy
		// machine may stretch, never to seconds.
		if (offset + skew).Abs() > time.Second {
			t.Fatalf("offset with the host %v off = %v, want about %v", skew, offset, -skew)
		}
		redisNow, err := client.Time(ctx).Result()
		check(t, err)
		if d := c.Now().Sub(redisNow); d.Abs() > time.Second {
			t.Fatalf("the sale clock is %v off Redis's time with the host %v off", d, skew)
		}
		before := c.Now()
		testenv.Eventually(t, testenv.Patience, "the sale clock moving on", func() (bool, string) {
			return c.Now().Sub(before) >= 10*time.Millisecond, ""
		})
	}
}

// TestLocalClockTellsTheHostsTime: the clock of a Redis whose time is this host's
// (the in-process one) tells the host's time and measures nothing.
func TestLocalClockTellsTheHostsTime(t *testing.T) {
	t.Parallel()
	c := redisstore.NewLocalClock(offClock(10 * time.Second))
	offset, err := c.Sync(t.Context())
	check(t, err)
	if offset != 0 {
		t.Fatalf("offset = %v, want 0: nothing to measure", offset)
	}
	if got := time.Until(c.Now()); (got - 10*time.Second).Abs() > time.Second {
		t.Fatalf("the clock is %v off the host's, want the host's (10s)", got)
	}
}
