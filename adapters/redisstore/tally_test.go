package redisstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/seckill/seckill/adapters/redisstore"
	"github.com/seckill/seckill/domain"
	"github.com/seckill/seckill/ports"
)

// wantTallyAsSnapshot fails unless a's Tally of id counts what its Snapshot lists.
func wantTallyAsSnapshot(t *testing.T, a *redisstore.Audit, id domain.VoucherID) ports.StockTally {
	t.Helper()
	got, err := a.Tally(context.Background(), id)
	check(t, err)
	snap := snapshot(t, a, id)
	want := ports.StockTally{Present: snap.Present, Stock: snap.Stock, Remaining: snap.Remaining,
		Queued: held(snap.Unacked), Pending: int64(len(snap.Unacked))}
	if len(snap.Unacked) > 0 {
		want.Oldest = snap.Unacked[0].At // the first in the queue's order
	}
	if !got.Oldest.Equal(want.Oldest) {
		t.Fatalf("Tally oldest = %v, Snapshot's = %v", got.Oldest, want.Oldest)
	}
	if want.Oldest = got.Oldest; got != want {
		t.Fatalf("Tally = %+v, Snapshot counts %+v", got, want)
	}
	return got
}

func TestTallyCountsWhatTheQueueHolds(t *testing.T) {
	ctx := context.Background()
	client, s := newStock(t, 0)
	v := voucher(1, 50, 3)
	a := newAudit(client, s)
	if got, err := a.Tally(ctx, v.ID); err != nil || got.Present {
		t.Fatalf("Tally before warm-up = %+v, %v; want not present", got, err)
	}
	warm(t, client, s, v)
	wantTallyAsSnapshot(t, a, v.ID)

	var rs []domain.Reservation
	for user := domain.UserID(1); user <= 6; user++ {
		r := grab(v.ID, user, int(user)%3+1)
		r.At = now.Add(time.Duration(user) * time.Millisecond)
		check(t, s.Reserve(ctx, r))
		rs = append(rs, r)
	}
	if got := wantTallyAsSnapshot(t, a, v.ID); got.Pending != 6 || !got.Oldest.Equal(rs[0].At) {
		t.Fatalf("Tally after 6 grabs = %+v", got)
	}

	q := newQueue(client, s, "a")
	ds := read(t, q, 3)
	if len(ds) != 3 {
		t.Fatalf("read %d entries, want 3", len(ds))
	}
	// Delivered, not acknowledged: still waiting, and the oldest.
	if got := wantTallyAsSnapshot(t, a, v.ID); !got.Oldest.Equal(rs[0].At) {
		t.Fatalf("oldest = %v, want %v", got.Oldest, rs[0].At)
	}
	check(t, q.Ack(ctx, ds[0], ds[1]))
	check(t, q.Ack(ctx, ds[0], ds[1])) // twice: counted off once
	if got := wantTallyAsSnapshot(t, a, v.ID); got.Pending != 4 || !got.Oldest.Equal(rs[2].At) {
		t.Fatalf("Tally after 2 acks = %+v", got)
	}
	check(t, q.DeadLetter(ctx, ds[2], "test"))
	check(t, q.DeadLetter(ctx, ds[2], "test"))
	if got := wantTallyAsSnapshot(t, a, v.ID); got.Pending != 3 || !got.Oldest.Equal(rs[3].At) {
		t.Fatalf("Tally after a dead letter = %+v", got)
	}
	// Requeued: counted again, once per entry.
	check(t, a.Requeue(ctx, rs[0]))
	if got := wantTallyAsSnapshot(t, a, v.ID); got.Pending != 4 {
		t.Fatalf("Tally after a requeue = %+v", got)
	}
	// All read and acknowledged: nothing waits.
	ds = read(t, q, 10)
	check(t, q.Ack(ctx, ds...))
	if got := wantTallyAsSnapshot(t, a, v.ID); got.Pending != 0 || got.Queued != 0 || !got.Oldest.IsZero() {
		t.Fatalf("Tally with all acknowledged = %+v", got)
	}
}

// TestAckTakesOffOnlyWhatWasPending: ack.lua acknowledges a batch in one XACK per
// number of units, and takes off what those XACKs say were pending: each consumer's
// own entries once, whatever other consumers hold between them, and nothing for an
// entry acknowledged before, in a batch of several quantities.
func TestAckTakesOffOnlyWhatWasPending(t *testing.T) {
	ctx := context.Background()
	client, s := newStock(t, 0)
	v := voucher(1, 500, 3)
	a := newAudit(client, s)
	warm(t, client, s, v)
	qa, qb := newQueue(client, s, "a"), newQueue(client, s, "b")
	readAll := func(q *redisstore.Queue, n int) []ports.Delivery {
		t.Helper()
		var ds []ports.Delivery
		for len(ds) < n {
			got := read(t, q, n-len(ds))
			if len(got) == 0 {
				t.Fatalf("read %d of %d entries", len(ds), n)
			}
			ds = append(ds, got...)
		}
		return ds
	}
	// Users 1 to 12 reserve 1, 2, 3, 1, 2, 3, … units: 24 in all.
	for user := domain.UserID(1); user <= 12; user++ {
		check(t, s.Reserve(ctx, grab(v.ID, user, int(user-1)%3+1)))
	}
	// b's entries between a's.
	a1 := readAll(qa, 3)
	b1 := readAll(qb, 3)
	a1 = append(a1, readAll(qa, 3)...)
	b2 := readAll(qb, 3)
	check(t, qa.Ack(ctx, a1...))
	if got := wantTallyAsSnapshot(t, a, v.ID); got.Pending != 6 || got.Queued != 12 {
		t.Fatalf("Tally after a's 6 of 12 = %+v, want b's 6 entries of 12 units waiting", got)
	}
	// Some of the batch acknowledged before, of several quantities: taken off once.
	// (The tally is checked while entries still wait: once none does, tally.lua sets
	// it right whatever it was.)
	check(t, qb.Ack(ctx, b1[0], b1[2]))
	check(t, qb.Ack(ctx, append(append(append([]ports.Delivery{}, b1...), b2[0]), a1...)...))
	left := b2[1].Reservation.Quantity + b2[2].Reservation.Quantity
	if got := wantTallyAsSnapshot(t, a, v.ID); got.Pending != 2 || got.Queued != left {
		t.Fatalf("Tally with b's last 2 entries waiting = %+v, want 2 entries of %d units", got, left)
	}
	check(t, qb.Ack(ctx, b2...))
	if got := wantTallyAsSnapshot(t, a, v.ID); got.Pending != 0 || got.Queued != 0 {
		t.Fatalf("Tally with all acknowledged = %+v", got)
	}
}

func TestWatchStrategyKeepsTheTally(t *testing.T) {
	ctx := context.Background()
	client, w := newWatchStock(t, redisstore.Options{})
	v := voucher(1, 10, 3)
	cleanup(t, client, w.Stock, v.ID)
	if _, err := w.Warm(ctx, v); err != nil {
		t.Fatal(err)
	}
	a := newAudit(client, w.Stock)
	for user := domain.UserID(1); user <= 3; user++ {
		check(t, w.Reserve(ctx, grab(v.ID, user, 2)))
	}
	if got := wantTallyAsSnapshot(t, a, v.ID); got.Queued != 6 || got.Pending != 3 {
		t.Fatalf("Tally after 3 grabs of 2 = %+v", got)
	}
}

// TestTallyForgetsALostEntryOnceTheQueueIsDrained deletes an entry before any worker
// read it: the tally counts it until the queue holds nothing to acknowledge.
func TestTallyForgetsALostEntryOnceTheQueueIsDrained(t *testing.T) {
	ctx := context.Background()
	client, s := newStock(t, 0)
	v := voucher(1, 10, 3)
	warm(t, client, s, v)
	a := newAudit(client, s)
	rs := []domain.Reservation{grab(v.ID, 1, 2), grab(v.ID, 2, 1)}
	for _, r := range rs {
		check(t, s.Reserve(ctx, r))
	}
	entries, err := client.XRange(ctx, s.Keys().Stream(v.ID), "-", "+").Result()
	check(t, err)
	check(t, client.XDel(ctx, s.Keys().Stream(v.ID), entries[0].ID).Err())
	// Its reservation requeued, as reconciliation does, and everything persisted.
	check(t, a.Requeue(ctx, rs[0]))
	q := newQueue(client, s, "a")
	check(t, q.Ack(ctx, read(t, q, 10)...))
	_, err = q.Trim(ctx)
	check(t, err)
	got, err := a.Tally(ctx, v.ID)
	check(t, err)
	if got.Queued != 0 || got.Pending != 0 || !got.Oldest.IsZero() {
		t.Fatalf("Tally with the queue drained = %+v, want nothing queued", got)
	}
	// And the tally itself was set right: a new grab counts from 0.
	check(t, s.Reserve(ctx, grab(v.ID, 3, 1)))
	if got := wantTallyAsSnapshot(t, a, v.ID); got.Queued != 1 || got.Pending != 1 {
		t.Fatalf("Tally after one more grab = %+v", got)
	}
}
