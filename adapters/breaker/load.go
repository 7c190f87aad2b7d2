package breaker

import (
	"sync"
	"sync/atomic"
	"time"
)

// The saturation monitor: a goroutine that asks to wake every lagTick and measures
// how late it does. A process whose goroutines wait for a CPU (a flood it cannot keep
// up with, or other processes holding the cores) wakes late; one that is merely busy
// does not.
const (
	lagTick = 25 * time.Millisecond
	// lagSaturated is the lateness from which the process counts as saturated.
	lagSaturated = 100 * time.Millisecond
	// lagMemory is how long a late wake-up keeps the process counted as saturated:
	// long enough to cover the calls that were waiting when it happened.
	lagMemory = 2 * time.Second
)

var (
	monitorOnce sync.Once
	// lateAt is when the monitor last woke later than lagSaturated (Unix ns); 0 never.
	lateAt atomic.Int64
	// wokeAt is when the monitor last woke (Unix ns).
	wokeAt atomic.Int64
)

// Saturated reports whether this process has lately been unable to run its goroutines
// on time: a wake-up more than 100 ms late in the last 2 s, or one overdue by that much
// now (the caller may run before the monitor, after the same stall). A timeout seen
// meanwhile may be this process's own doing, so the breakers do not count it against
// the dependency. The monitor starts with the first call and runs for the life of the
// process (one timer wake-up every 25 ms).
func Saturated() bool {
	monitorOnce.Do(func() {
		wokeAt.Store(time.Now().UnixNano())
		go monitor()
	})
	now := time.Now().UnixNano()
	if now-wokeAt.Load() > int64(lagTick+lagSaturated) {
		return true
	}
	at := lateAt.Load()
	return at != 0 && now-at < int64(lagMemory)
}

func monitor() {
	t := time.NewTicker(lagTick)
	defer t.Stop()
	last := time.Now()
	for range t.C {
		// The time of the wake-up, not of the tick: a starved goroutine receives its
		// tick late, and the gap since the last wake-up tells by how much.
		now := time.Now()
		if late := now.Sub(last) - lagTick; late > lagSaturated {
			lateAt.Store(now.UnixNano())
		}
		wokeAt.Store(now.UnixNano())
		last = now
	}
}
