package redisstore

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/domain"
	"github.com/seckill/seckill/ports"
)

// Changes announces the changes of orders and sales on Redis Pub/Sub, one channel per
// voucher (Keys.Changes): sharded Pub/Sub (SPUBLISH, SSUBSCRIBE) on Redis Cluster, so
// an announcement travels only within the voucher's shard, and classic Pub/Sub on one
// server (the in-process server has only the classic).
type Changes struct {
	client  redis.UniversalClient
	keys    Keys
	sharded bool
}

var _ ports.Changes = (*Changes)(nil)

// NewChanges returns the announcer on client.
func NewChanges(client redis.UniversalClient, opts Options) *Changes {
	_, sharded := client.(*redis.ClusterClient)
	return &Changes{client: client, keys: Keys{Prefix: opts.Prefix}, sharded: sharded}
}

// Publish announces each change on its voucher's channel, all in one pipeline (on a
// cluster, one per shard). It returns an error wrapping domain.ErrUnavailable when
// Redis did not take them.
func (c *Changes) Publish(ctx context.Context, changes ...ports.Change) error {
	if len(changes) == 0 {
		return nil
	}
	pipe := c.client.Pipeline()
	for _, ch := range changes {
		if c.sharded {
			pipe.SPublish(ctx, c.keys.Changes(ch.Voucher), encodeChange(ch))
		} else {
			pipe.Publish(ctx, c.keys.Changes(ch.Voucher), encodeChange(ch))
		}
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return unavailable("publish changes", err)
	}
	return nil
}

// Subscribe subscribes to voucher v's channel, waits for Redis to confirm it, and
// then calls fn with each change announced on it, from one goroutine, until stop.
// stop closes the subscription's connection and returns once fn is no longer called.
// Messages that are not a change of v are ignored. go-redis reconnects and
// resubscribes a subscription whose connection failed; what is announced meanwhile
// is lost.
func (c *Changes) Subscribe(ctx context.Context, v domain.VoucherID, fn func(ports.Change)) (func(), error) {
	channel := c.keys.Changes(v)
	var sub *redis.PubSub
	if c.sharded {
		sub = c.client.SSubscribe(ctx, channel)
	} else {
		sub = c.client.Subscribe(ctx, channel)
	}
	// Subscribe sends the command without waiting; the confirmation tells a
	// subscription that works from one that never did.
	if _, err := sub.Receive(ctx); err != nil {
		_ = sub.Close()
		return nil, unavailable("subscribe to changes of voucher "+v.String(), err)
	}
	msgs := sub.Channel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for m := range msgs {
			if ch, ok := decodeChange(m.Payload); ok && ch.Voucher == v {
				fn(ch)
			}
		}
	}()
	return func() {
		_ = sub.Close()
		<-done
	}, nil
}

// encodeChange writes a change as its channel carries it: "<voucher>" or
// "<voucher>:<order>".
func encodeChange(ch ports.Change) string {
	if ch.Order == "" {
		return ch.Voucher.String()
	}
	return ch.Voucher.String() + ":" + string(ch.Order)
}

// decodeChange reads what encodeChange wrote.
func decodeChange(s string) (ports.Change, bool) {
	v, o, hasOrder := strings.Cut(s, ":")
	id, err := domain.ParseVoucherID(v)
	if err != nil {
		return ports.Change{}, false
	}
	ch := ports.Change{Voucher: id}
	if hasOrder {
		order, err := domain.ParseOrderID(o)
		if err != nil {
			return ports.Change{}, false
		}
		ch.Order = order
	}
	return ch, true
}

// unavailable wraps err, a failure to reach Redis, so it reads domain.ErrUnavailable
// (the breaker hook has done so already for the commands it guards).
func unavailable(op string, err error) error {
	if errors.Is(err, domain.ErrUnavailable) {
		return fmt.Errorf("%s: %w", op, err)
	}
	return fmt.Errorf("%s: %w: %w", op, domain.ErrUnavailable, err)
}
