package application

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/seckill/seckill/domain"
	"github.com/seckill/seckill/ports"
)

// PersistedOrders lets a grab wait, in this process, until the order its reservation
// becomes is committed, before it is answered. It is for a stock that lives in this
// process's memory (the zero-setup mode's in-process Redis): there a reservation not
// yet persisted dies with the process, and a 202 answered before the commit is one a
// kill -9 can take back. The workers of the same process tell it what they committed
// through the Changes they announce on (Changes), so waiting costs a grab the time to
// the worker's next commit, not a poll. A nil *PersistedOrders waits for nothing.
type PersistedOrders struct {
	within time.Duration

	mu      sync.Mutex
	waiting map[domain.OrderID]chan struct{}
}

// NewPersistedOrders returns a PersistedOrders whose grabs wait at most within for
// their order's commit.
func NewPersistedOrders(within time.Duration) *PersistedOrders {
	return &PersistedOrders{within: within, waiting: make(map[domain.OrderID]chan struct{})}
}

// Changes returns next, with every change published through it also marking its
// order committed (FulfillOrder announces each order it commits, awaiting payment or
// failed). On a nil receiver it returns next.
func (p *PersistedOrders) Changes(next ports.Changes) ports.Changes {
	if p == nil {
		return next
	}
	return committedChanges{Changes: next, p: p}
}

// expect registers order before its reservation is made, so a commit that comes
// before the grab waits is not missed; forget drops it.
func (p *PersistedOrders) expect(order domain.OrderID) <-chan struct{} {
	done := make(chan struct{})
	p.mu.Lock()
	p.waiting[order] = done
	p.mu.Unlock()
	return done
}

func (p *PersistedOrders) forget(order domain.OrderID) {
	p.mu.Lock()
	delete(p.waiting, order)
	p.mu.Unlock()
}

// committed wakes the grabs waiting for orders.
func (p *PersistedOrders) committed(orders ...ports.Change) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range orders {
		if done, ok := p.waiting[c.Order]; ok {
			close(done)
			delete(p.waiting, c.Order)
		}
	}
}

// wait waits for done, at most p.within or until ctx ends. A grab whose order is not
// committed by then answers unavailable: it holds its reservation (a retry answers
// it with its order), but no 202 was said that a crash could take back.
func (p *PersistedOrders) wait(ctx context.Context, order domain.OrderID, done <-chan struct{}) error {
	timer := time.NewTimer(p.within)
	defer timer.Stop()
	select {
	case <-done:
		return nil
	case <-timer.C:
	case <-ctx.Done():
	}
	return fmt.Errorf("order %s: %w: reserved, not yet persisted; ask again for it", order, domain.ErrUnavailable)
}

// committedChanges is a ports.Changes that tells PersistedOrders what it publishes.
type committedChanges struct {
	ports.Changes
	p *PersistedOrders
}

// Publish marks changes committed, then announces them.
func (c committedChanges) Publish(ctx context.Context, changes ...ports.Change) error {
	c.p.committed(changes...)
	return c.Changes.Publish(ctx, changes...)
}
