// Package memory holds in-memory implementations of the ports, for use-case tests.
// They follow the same contracts as the Redis and PostgreSQL adapters but keep
// everything in maps behind one mutex; they are not for production.
package memory

import (
	"crypto/sha256"
	"fmt"
	"sync"
	"time"

	"github.com/seckill/seckill/domain"
	"github.com/seckill/seckill/ports"
)

// Clock is a ports.Clock that tells the time it is set to.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

var _ ports.Clock = (*Clock)(nil)

// NewClock returns a clock stopped at now.
func NewClock(now time.Time) *Clock { return &Clock{now: now} }

// Now returns the set time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Set moves the clock to now.
func (c *Clock) Set(now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = now
}

// OrderIDs mints predictable ids: o1, o2, …
type OrderIDs struct {
	mu sync.Mutex
	n  int
}

var _ ports.OrderIDs = (*OrderIDs)(nil)

// NewOrderID returns the next id.
func (g *OrderIDs) NewOrderID() domain.OrderID {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.n++
	return domain.OrderID(fmt.Sprintf("o%d", g.n))
}

// DerivedOrderID returns "d" and the hex of at's milliseconds and key's SHA-256 head,
// the same for the same two.
func (g *OrderIDs) DerivedOrderID(at time.Time, key []byte) domain.OrderID {
	sum := sha256.Sum256(key)
	return domain.OrderID(fmt.Sprintf("d%x-%x", at.UnixMilli(), sum[:8]))
}
