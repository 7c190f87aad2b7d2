//go:build seckilltestclock

package main

import (
	"os"
	"time"
)

// shuffleSaved, in a build with the seckilltestclock tag (the end-to-end tests'),
// sleeps for SECKILL_TEST_SHUFFLE_PAUSE (a Go duration) between a waiting room's
// shuffle saved and its install, so a test can kill the instance there.
func shuffleSaved() {
	if d, err := time.ParseDuration(os.Getenv("SECKILL_TEST_SHUFFLE_PAUSE")); err == nil {
		time.Sleep(d)
	}
}
