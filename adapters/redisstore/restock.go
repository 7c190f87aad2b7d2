package redisstore

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/domain"
)

// restockChannel returns the channel on which id's restocks are announced and the
// scripts' sharded flag: Keys.VoucherRestock and "1" on Redis Cluster (sharded Pub/Sub),
// Keys.Restock and "0" on one server, where sharded and classic Pub/Sub are the same
// (and the embedded server has only the classic).
func restockChannel(k Keys, sharded bool, id domain.VoucherID) (string, string) {
	if sharded {
		return k.VoucherRestock(id), "1"
	}
	return k.Restock(), "0"
}

// RestockChannel returns the Pub/Sub channel on which the restocks of voucher id are
// announced: Keys.VoucherRestock (sharded Pub/Sub) on Redis Cluster, Keys.Restock on one
// server.
func (s *Stock) RestockChannel(id domain.VoucherID) string {
	channel, _ := restockChannel(s.keys, s.sharded, id)
	return channel
}

// SubscribeRestocks calls fn with the voucher id of every restock announced on the
// restock channel (Keys.Restock: a Release that gave units back, a Recount that
// raised the remaining units, or an Edit that put units on sale), one call at a time, until ctx is done; then it returns
// nil. It returns an error only when the first subscription fails. Afterwards it rides
// out Redis restarts and network failures: the subscription reconnects and
// resubscribes by itself. Messages that are not a voucher id are ignored.
//
// Pub/Sub delivers at most once: announcements made while the subscriber is
// disconnected (or reconnecting) are lost, and so is one that waits more than a minute
// behind a slow fn. A restock is a hint, not a ledger: the grab path's sold-out flag
// must also expire by itself, and its TTL bounds how long a lost announcement leaves an
// instance answering sold out while units are back on sale. Keep fn quick.
//
// On Redis Cluster it subscribes (SSUBSCRIBE) to the channel of each voucher whose sale
// has not ended (Keys.Active), one connection each, to the node owning the voucher's
// slot; it looks at the active vouchers every RestockRefresh, and subscribes at once
// to a voucher this Stock warms. A voucher warmed elsewhere is heard of within
// RestockRefresh; until then, as with any lost announcement, its flag lapses by its TTL.
func (s *Stock) SubscribeRestocks(ctx context.Context, fn func(domain.VoucherID)) error {
	if s.sharded {
		return s.subscribeSharded(ctx, fn)
	}
	sub := s.client.Subscribe(ctx, s.keys.Restock())
	defer sub.Close()
	// Subscribe sends SUBSCRIBE without waiting; the confirmation tells a subscription
	// that works from one that never did.
	if _, err := sub.Receive(ctx); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("subscribe to restocks: %w", err)
	}
	msgs := sub.Channel()
	for {
		select {
		case <-ctx.Done():
			return nil
		case m, ok := <-msgs:
			if !ok {
				return nil
			}
			if id, err := domain.ParseVoucherID(m.Payload); err == nil {
				fn(id)
			}
		}
	}
}

// RestockRefresh is how often SubscribeRestocks looks at the active vouchers on Redis
// Cluster, to subscribe to the channels of new ones and leave those of ended ones.
const RestockRefresh = time.Second

// subscribeSharded is SubscribeRestocks on Redis Cluster: one sharded subscription per
// active voucher.
func (s *Stock) subscribeSharded(ctx context.Context, fn func(domain.VoucherID)) error {
	var mu sync.Mutex // one call of fn at a time
	var pumps sync.WaitGroup
	subs := make(map[domain.VoucherID]*redis.PubSub)
	defer func() {
		for _, sub := range subs {
			_ = sub.Close()
		}
		pumps.Wait() // no call of fn after returning
	}()
	add := func(id domain.VoucherID) {
		if _, ok := subs[id]; ok {
			return
		}
		sub := s.client.SSubscribe(ctx, s.keys.VoucherRestock(id))
		subs[id] = sub
		pumps.Add(1)
		go func() {
			defer pumps.Done()
			for m := range sub.Channel() {
				if got, err := domain.ParseVoucherID(m.Payload); err == nil {
					mu.Lock()
					fn(got)
					mu.Unlock()
				}
			}
		}()
	}
	refresh := func() error {
		members, err := s.client.ZRangeByScore(ctx, s.keys.Active(), &redis.ZRangeBy{
			Min: "(" + strconv.FormatInt(time.Now().UnixMilli(), 10), Max: "+inf",
		}).Result()
		if err != nil {
			return err
		}
		active := make(map[domain.VoucherID]bool, len(members))
		for _, m := range members {
			if id, err := domain.ParseVoucherID(m); err == nil {
				active[id] = true
				add(id)
			}
		}
		for id, sub := range subs {
			if !active[id] {
				_ = sub.Close()
				delete(subs, id)
			}
		}
		return nil
	}
	if err := refresh(); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("subscribe to restocks: %w", err)
	}
	t := time.NewTicker(RestockRefresh)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case id := <-s.warmed:
			add(id)
		case <-t.C:
			// A failed look keeps the subscriptions there are; the next one may succeed.
			_ = refresh()
		}
	}
}
