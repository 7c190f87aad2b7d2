package redisstore_test

import (
	"context"
	"errors"
	"maps"
	"strconv"
	"testing"
	"time"

	"github.com/seckill/seckill/adapters/redisstore"
	"github.com/seckill/seckill/adapters/strategies/watchstock"
	"github.com/seckill/seckill/domain"
	"github.com/seckill/seckill/ports"
)

// TestEveryScriptTakesAPartialHashForNoSaleState: a meta hash missing one of the
// fields warm.lua loads (a stray write to an expired voucher) is no sale state to every
// script alike (prelude.lua's sale_state), and to the WATCH strategy (its Go twin):
// each refuses and writes nothing, and a warm-up replaces the hash whole.
func TestEveryScriptTakesAPartialHashForNoSaleState(t *testing.T) {
	ctx := context.Background()
	client, s := newStock(t, 0)
	a := newAudit(client, s)
	k := s.Keys()
	v := voucher(5, 10, 2)
	cleanup(t, client, s, v.ID)

	ms := func(at time.Time) string { return strconv.FormatInt(at.UnixMilli(), 10) }
	// Every field but the stock, a stray one, and a user holding an order.
	partial := map[string]string{"remaining": "10", "begins": ms(v.BeginsAt), "ends": ms(v.EndsAt),
		"limit": "2", "expire": ms(v.EndsAt.Add(redisstore.DefaultGrace)), "restoring": "0"}
	r := grab(v.ID, 1, 1)
	check(t, client.HSet(ctx, k.Meta(v.ID), partial).Err())
	check(t, client.HSet(ctx, k.Buyers(v.ID), r.UserID.String(), string(r.OrderID)).Err())
	check(t, client.HSet(ctx, k.Orders(v.ID), string(r.OrderID), "1:1:"+ms(r.At)).Err())

	for _, stock := range []ports.Stock{s, watchstock.New(s, 0)} {
		if err := stock.Reserve(ctx, grab(v.ID, 2, 1)); !errors.Is(err, domain.ErrNotFound) {
			t.Errorf("%T.Reserve = %v, want %v", stock, err, domain.ErrNotFound)
		}
	}
	if ok, err := s.SetPaused(ctx, v.ID, true); ok || err != nil {
		t.Errorf("SetPaused = %v, %v; want false", ok, err)
	}
	if ok, err := s.Release(ctx, domain.Order{ID: r.OrderID, VoucherID: v.ID, UserID: r.UserID, Quantity: 1}); ok || err != nil {
		t.Errorf("Release = %v, %v; want false", ok, err)
	}
	if _, err := a.Recount(ctx, v.ID); !errors.Is(err, domain.ErrNotFound) {
		t.Errorf("Recount = %v, want %v", err, domain.ErrNotFound)
	}
	if ok, err := a.Restore(ctx, live(grab(v.ID, 3, 1))...); len(ok) != 1 || ok[0] || err != nil {
		t.Errorf("Restore = %v, %v; want [false]", ok, err)
	}
	if err := a.Requeue(ctx, r); !errors.Is(err, domain.ErrNotFound) {
		t.Errorf("Requeue = %v, want %v", err, domain.ErrNotFound)
	}
	check(t, a.Restoring(ctx, v.ID))

	meta, err := client.HGetAll(ctx, k.Meta(v.ID)).Result()
	check(t, err)
	if !maps.Equal(meta, partial) {
		t.Errorf("meta = %v after the refusals, want it untouched: %v", meta, partial)
	}
	buyers, err := client.HLen(ctx, k.Buyers(v.ID)).Result()
	check(t, err)
	orders, err := client.HLen(ctx, k.Orders(v.ID)).Result()
	check(t, err)
	stream, err := client.Exists(ctx, k.Stream(v.ID)).Result()
	check(t, err)
	if buyers != 1 || orders != 1 || stream != 0 {
		t.Errorf("after the refusals: %d buyers, %d orders, stream exists %d; want 1, 1, 0", buyers, orders, stream)
	}

	loaded, err := s.Warm(ctx, v)
	check(t, err)
	meta, err = client.HGetAll(ctx, k.Meta(v.ID)).Result()
	check(t, err)
	if _, stray := meta["restoring"]; loaded != ports.WarmLoaded || stray || meta["stock"] != "10" {
		t.Fatalf("Warm over a partial hash: loaded %v, meta %v; want it loaded whole, without the stray field", loaded, meta)
	}
	check(t, s.Reserve(ctx, grab(v.ID, 2, 1)))
}
