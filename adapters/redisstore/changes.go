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

// Publish announces the changes on their vouchers' channels, all in one pipeline (on a
// cluster, one per shard): one message per voucher for the changes of its orders (a
// batch of persisted orders is one message, not one per order), and one for each
// change of a voucher itself. It returns an error wrapping domain.ErrUnavailable when
// Redis did not take them.
func (c *Changes) Publish(ctx context.Context, changes ...ports.Change) error {
	if len(changes) == 0 {
		return nil
	}
	pipe := c.client.Pipeline()
	for _, msg := range encodeChanges(changes) {
		if c.sharded {
			pipe.SPublish(ctx, c.keys.Changes(msg.voucher), msg.payload)
		} else {
			pipe.Publish(ctx, c.keys.Changes(msg.voucher), msg.payload)
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
			chs, ok := decodeChanges(m.Payload)
			if !ok {
				continue
			}
			for _, ch := range chs {
				if ch.Voucher == v {
					fn(ch)
				}
			}
		}
	}()
	return func() {
		_ = sub.Close()
		<-done
	}, nil
}

// message is one announcement: its voucher's channel and what it carries.
type message struct {
	voucher domain.VoucherID
	payload string
}

// encodeChanges writes changes as the channels carry them: "<voucher>" for a change of
// the voucher itself, "<voucher>:<order>,<order>,…" for the changes of its orders, one
// message per voucher in the order the vouchers first appear.
func encodeChanges(changes []ports.Change) []message {
	var out []message
	at := map[domain.VoucherID]int{} // index in out of each voucher's orders message
	for _, ch := range changes {
		if ch.Order == "" {
			out = append(out, message{voucher: ch.Voucher, payload: ch.Voucher.String()})
			continue
		}
		if i, ok := at[ch.Voucher]; ok {
			out[i].payload += "," + string(ch.Order)
			continue
		}
		at[ch.Voucher] = len(out)
		out = append(out, message{voucher: ch.Voucher, payload: ch.Voucher.String() + ":" + string(ch.Order)})
	}
	return out
}

// decodeChanges reads a message encodeChanges wrote; false when it is not one.
func decodeChanges(s string) ([]ports.Change, bool) {
	v, orders, hasOrders := strings.Cut(s, ":")
	id, err := domain.ParseVoucherID(v)
	if err != nil {
		return nil, false
	}
	if !hasOrders {
		return []ports.Change{{Voucher: id}}, true
	}
	var out []ports.Change
	for o := range strings.SplitSeq(orders, ",") {
		order, err := domain.ParseOrderID(o)
		if err != nil {
			return nil, false
		}
		out = append(out, ports.Change{Voucher: id, Order: order})
	}
	return out, true
}

// unavailable wraps err, a failure to reach Redis, so it reads domain.ErrUnavailable
// (the breaker hook has done so already for the commands it guards).
func unavailable(op string, err error) error {
	if errors.Is(err, domain.ErrUnavailable) {
		return fmt.Errorf("%s: %w", op, err)
	}
	return fmt.Errorf("%s: %w: %w", op, domain.ErrUnavailable, err)
}
