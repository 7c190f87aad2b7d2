package main

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/gommon/bytes"
)

// day is 24 hours, for the ranges below.
const day = 24 * time.Hour

// ranges are serve's numeric settings, each with the range where it makes sense:
// outside it a value is a mistake (a 1 ns request timeout answers every call 503, a
// 10 GB body limit is memory no machine has), and start-up stops with one line naming
// it. The table of settings in docs/operations.md lists the same ranges.
func (c *Config) ranges() []bounded {
	const off = true // 0 turns the setting off
	return []bounded{
		durationSetting("SECKILL_REQUEST_TIMEOUT (--request-timeout)", c.RequestTimeout, 10*time.Millisecond, 5*time.Minute, false),
		durationSetting("SECKILL_SHUTDOWN_TIMEOUT (--shutdown-timeout)", c.ShutdownTimeout, time.Second, time.Hour, false),
		durationSetting("SECKILL_WARM_INTERVAL (--warm-interval)", c.WarmInterval, time.Second, time.Hour, false),
		sizeSetting("SECKILL_BODY_LIMIT (--body-limit)", c.BodyLimit, 1e3, 10e6),
		durationSetting("SECKILL_SOLD_OUT_TTL (--sold-out-ttl)", c.SoldOutTTL, time.Millisecond, time.Minute, off),
		countSetting("SECKILL_BATCH_SIZE (--batch-size)", int64(c.BatchSize), 1, 10_000, false),
		durationSetting("SECKILL_CLAIM_IDLE (--claim-idle)", c.ClaimIdle, time.Second, day, false),
		countSetting("SECKILL_MAX_DELIVERIES (--max-deliveries)", c.MaxDeliveries, 1, 1000, false),
		durationSetting("SECKILL_TRIM_INTERVAL (--trim-interval)", c.TrimInterval, 100*time.Millisecond, time.Hour, false),
		countSetting("SECKILL_MAX_INFLIGHT (--max-inflight)", int64(c.MaxInflight), 1, 1_000_000, off),
		countSetting("SECKILL_MAX_STREAMS (--max-streams)", int64(c.MaxStreams), 1, 1_000_000, false),
		countSetting("SECKILL_GRAB_BURST (--grab-burst)", int64(c.GrabBurst), 1, maxGrabRate, off),
		countSetting("SECKILL_IP_RATE (--ip-rate)", int64(c.IPRate), 1, 1_000_000, off),
		countSetting("SECKILL_IP_BURST (--ip-burst)", int64(c.IPBurst), 1, 1_000_000, off),
		countSetting("SECKILL_USER_BURST (--user-burst)", int64(c.UserBurst), 1, 1000, false),
		countSetting("SECKILL_REDIS_MIN_REPLICAS (--redis-min-replicas)", int64(c.RedisMinReplicas), 1, 100, off),
		countSetting("SECKILL_MAX_BACKLOG (--max-backlog)", int64(c.MaxBacklog), 1, 100_000_000, off),
		durationSetting("SECKILL_PAYMENT_TIMEOUT (--payment-timeout)", c.PaymentTimeout, time.Second, 30*day, false),
		durationSetting("SECKILL_RECONCILE_INTERVAL (--reconcile-interval)", c.ReconcileInterval, 100*time.Millisecond, day, off),
		countSetting("SECKILL_DRAW_BATCH (--draw-batch)", int64(c.DrawBatch), 1, 100_000, false),
		durationSetting("SECKILL_DRAW_LEASE (--draw-lease)", c.DrawLease, time.Second, time.Hour, false),
		durationSetting("SECKILL_PUBLIC_MAX_AGE (--public-max-age)", c.PublicMaxAge, time.Second, time.Hour, true),
	}
}

// maxGrabRate bounds SECKILL_GRAB_RATE: far above what one instance can serve, and
// low enough that the token bucket's arithmetic stays exact.
const maxGrabRate = 10_000_000

// rate is a named number for finite.
type rate struct {
	name string
	v    float64
}

// finite returns an error naming the first rate that is NaN or infinite.
func finite(rates ...rate) error {
	for _, r := range rates {
		if math.IsNaN(r.v) || math.IsInf(r.v, 0) {
			return fmt.Errorf("%s: %v is not a finite number", r.name, r.v)
		}
	}
	return nil
}

// bounded is a numeric setting and its range, for inRange: its value, how to show a
// number of it, and whether 0 turns it off.
type bounded struct {
	name        string
	v, min, max int64
	off         bool
	show        func(int64) string
	// invalid, when set, says what is wrong with a value that is no number at all.
	invalid string
}

// durationSetting is a duration setting between lo and hi; off allows 0 too.
func durationSetting(name string, v, lo, hi time.Duration, off bool) bounded {
	return bounded{name: name, v: int64(v), min: int64(lo), max: int64(hi), off: off,
		show: func(n int64) string { return shortDuration(time.Duration(n)) }}
}

// countSetting is a count between lo and hi; off allows 0 too.
func countSetting(name string, v, lo, hi int64, off bool) bounded {
	return bounded{name: name, v: v, min: lo, max: hi, off: off, show: func(n int64) string { return strconv.FormatInt(n, 10) }}
}

// sizeSetting is a size in Echo's notation (16K, 1M, 512B) between lo and hi bytes.
func sizeSetting(name, v string, lo, hi int64) bounded {
	n, err := bytes.Parse(v)
	b := bounded{name: name, v: n, min: lo, max: hi, show: shortSize}
	if err != nil {
		b.invalid = fmt.Sprintf("%q is not a size like 16K or 1M", v)
	}
	return b
}

// inRange returns one line naming the first setting outside its range.
func inRange(settings ...bounded) error {
	for _, s := range settings {
		if s.invalid != "" {
			return fmt.Errorf("%s: %s", s.name, s.invalid)
		}
		if (s.off && s.v == 0) || (s.v >= s.min && s.v <= s.max) {
			continue
		}
		offNote := ""
		if s.off {
			offNote = ", or 0 (off)"
		}
		return fmt.Errorf("%s: %s is not between %s and %s%s", s.name, s.show(s.v), s.show(s.min), s.show(s.max), offNote)
	}
	return nil
}

// shortDuration writes d as Go's duration syntax without its zero tails ("5m", not
// "5m0s"), so a range reads as the values one would set.
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// shortSize writes n bytes in the notation SECKILL_BODY_LIMIT takes (16K, 1M, 512B;
// decimal units, as Echo reads them: 1K is 1000 bytes).
func shortSize(n int64) string {
	for _, u := range []struct {
		suffix string
		size   int64
	}{{"G", 1e9}, {"M", 1e6}, {"K", 1e3}} {
		if n != 0 && n%u.size == 0 {
			return strconv.FormatInt(n/u.size, 10) + u.suffix
		}
	}
	return strconv.FormatInt(n, 10) + "B"
}
