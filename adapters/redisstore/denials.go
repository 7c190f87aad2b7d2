package redisstore

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/ports"
)

// DenyChanges announces the changes of the deny list on one Pub/Sub channel
// (Keys.Denials) with classic PUBLISH, on one server and on Redis Cluster alike: a
// cluster broadcasts a classic message to every node, so a subscriber connected to
// any node hears it. Sharded Pub/Sub would need a channel per shard for a message that
// every instance wants; the deny list changes a few times a day, so the broadcast
// costs nothing worth saving.
type DenyChanges struct {
	client redis.UniversalClient
	keys   Keys
}

var _ ports.DenyChanges = (*DenyChanges)(nil)

// NewDenyChanges returns the announcer on client.
func NewDenyChanges(client redis.UniversalClient, opts Options) *DenyChanges {
	return &DenyChanges{client: client, keys: Keys{Prefix: opts.Prefix}}
}

// AnnounceDenials publishes a change of the deny list. It carries no state: every
// subscriber reads the list again. It returns an error wrapping domain.ErrUnavailable
// when Redis did not take it.
func (d *DenyChanges) AnnounceDenials(ctx context.Context) error {
	if err := d.client.Publish(ctx, d.keys.Denials(), "changed").Err(); err != nil {
		return unavailable("announce a change of the deny list", err)
	}
	return nil
}

// SubscribeDenials calls fn once the subscription is confirmed and then for every
// change announced, one call at a time, until ctx is done; then it returns nil. It
// returns an error only when the first subscription fails; afterwards go-redis
// reconnects and resubscribes by itself, and what is announced meanwhile is lost
// (the caller reloads on a timer too). Keep fn quick.
func (d *DenyChanges) SubscribeDenials(ctx context.Context, fn func()) error {
	sub := d.client.Subscribe(ctx, d.keys.Denials())
	defer sub.Close()
	if _, err := sub.Receive(ctx); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("subscribe to deny list changes: %w", err)
	}
	// A change made before the subscription was confirmed is not announced to it.
	fn()
	msgs := sub.Channel()
	for {
		select {
		case <-ctx.Done():
			return nil
		case _, ok := <-msgs:
			if !ok {
				return nil
			}
			fn()
		}
	}
}
