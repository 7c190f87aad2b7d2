package memory

import (
	"context"
	"sync"
	"time"

	"github.com/seckill/seckill/ports"
)

// Leases is an in-memory ports.Leases on a clock: each lease names its holder and
// runs until its ttl from the clock's reading when taken or renewed. It keeps no
// state for the holders (Acquire returns "").
type Leases struct {
	mu     sync.Mutex
	clock  ports.Clock
	holder map[string]string
	until  map[string]time.Time
}

var _ ports.Leases = (*Leases)(nil)

// NewLeases returns leases judged by clock.
func NewLeases(clock ports.Clock) *Leases {
	return &Leases{clock: clock, holder: map[string]string{}, until: map[string]time.Time{}}
}

// Acquire takes lease name for holder until ttl from now, or renews it when holder
// holds it; it reports false while another holder's lease runs.
func (l *Leases) Acquire(_ context.Context, name, holder string, ttl time.Duration) (string, bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.clock.Now()
	if h, ok := l.holder[name]; ok && h != holder && now.Before(l.until[name]) {
		return "", false, nil
	}
	l.holder[name], l.until[name] = holder, now.Add(ttl)
	return "", true, nil
}

// Release ends holder's lease name now.
func (l *Leases) Release(_ context.Context, name, holder string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.holder[name] == holder {
		l.until[name] = l.clock.Now()
	}
	return nil
}

// Holder returns who holds lease name now; "" when no lease runs.
func (l *Leases) Holder(name string) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.clock.Now().Before(l.until[name]) {
		return ""
	}
	return l.holder[name]
}

// Expire ends lease name now, as if its holder had died and its ttl run out.
func (l *Leases) Expire(name string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.until[name] = l.clock.Now()
}
