package redisstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/seckill/seckill/ports"
)

// Backlog counts every reservation not yet acknowledged, delivered or not, across
// vouchers, and dates the oldest; it is empty once all are acknowledged.
func TestBacklogCountsUnacknowledgedEntriesAcrossVouchers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	client, s := newStock(t, 0)
	q := newQueue(client, s, "a")
	if b, err := q.Backlog(ctx); err != nil || b.Unacked != 0 || !b.Oldest.IsZero() {
		t.Fatalf("backlog with no voucher = %+v, %v; want empty", b, err)
	}
	warm(t, client, s, voucher(1, 10, 1))
	warm(t, client, s, voucher(2, 10, 1))
	before := time.Now().Add(-time.Second) // the entry ids come from Redis's clock
	reserve(t, s, 1, 1, 2)
	reserve(t, s, 2, 3)

	b, err := q.Backlog(ctx)
	check(t, err)
	if b.Unacked != 3 || b.Oldest.Before(before) || b.Oldest.After(time.Now().Add(time.Second)) {
		t.Fatalf("backlog of 3 undelivered = %+v, want 3 dated about now", b)
	}
	ds := read(t, q, 1) // one per stream: two delivered and pending, one not delivered
	if len(ds) != 2 {
		t.Fatalf("read %d entries, want 2", len(ds))
	}
	again, err := q.Backlog(ctx)
	check(t, err)
	if again.Unacked != 3 || !again.Oldest.Equal(b.Oldest) {
		t.Fatalf("backlog with two pending and one undelivered = %+v, want %+v", again, b)
	}
	rest := read(t, q, 10)
	check(t, q.Ack(ctx, append(append([]ports.Delivery{}, ds...), rest...)...))
	if b, err := q.Backlog(ctx); err != nil || b.Unacked != 0 || !b.Oldest.IsZero() {
		t.Fatalf("backlog after every ack = %+v, %v; want empty", b, err)
	}
}
