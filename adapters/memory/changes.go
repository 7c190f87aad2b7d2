package memory

import (
	"context"
	"sync"

	"github.com/seckill/seckill/domain"
	"github.com/seckill/seckill/ports"
)

// Changes is an in-process fake of ports.Changes: it keeps every change published, in
// order, and calls the subscribers of its voucher at once.
type Changes struct {
	mu        sync.Mutex
	published []ports.Change
	subs      map[domain.VoucherID]map[*func(ports.Change)]bool
	// Err, when set, fails every Publish (nothing is kept or announced).
	Err error
}

var _ ports.Changes = (*Changes)(nil)

// NewChanges returns an empty fake.
func NewChanges() *Changes {
	return &Changes{subs: make(map[domain.VoucherID]map[*func(ports.Change)]bool)}
}

// Publish keeps changes and calls each one's subscribers, or returns Err.
func (c *Changes) Publish(_ context.Context, changes ...ports.Change) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.Err != nil {
		return c.Err
	}
	for _, ch := range changes {
		c.published = append(c.published, ch)
		for fn := range c.subs[ch.Voucher] {
			(*fn)(ch)
		}
	}
	return nil
}

// Subscribe calls fn with each change of v published until stop.
func (c *Changes) Subscribe(_ context.Context, v domain.VoucherID, fn func(ports.Change)) (func(), error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.subs[v] == nil {
		c.subs[v] = make(map[*func(ports.Change)]bool)
	}
	key := &fn
	c.subs[v][key] = true
	return func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		delete(c.subs[v], key)
	}, nil
}

// Published returns the changes published so far, in order.
func (c *Changes) Published() []ports.Change {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]ports.Change(nil), c.published...)
}
