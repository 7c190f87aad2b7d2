//go:build seckilltestclock

package main

import (
	"os"
	"time"

	"github.com/seckill/seckill/adapters/system"
)

// In a build with the seckilltestclock tag — the end-to-end tests build one to play a
// host whose clock is off; releases never carry it — SECKILL_TEST_CLOCK_SKEW (a Go
// duration, e.g. 10s or -10s) shifts the host's clock (hostClock).
func init() {
	if skew, err := time.ParseDuration(os.Getenv("SECKILL_TEST_CLOCK_SKEW")); err == nil {
		hostClock = skewedClock{skew: skew}
	}
}

// skewedClock is the host's clock, off by skew.
type skewedClock struct {
	system.Clock
	skew time.Duration
}

func (c skewedClock) Now() time.Time { return c.Clock.Now().Add(c.skew) }
