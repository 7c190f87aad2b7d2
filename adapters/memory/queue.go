package memory

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/seckill/seckill/domain"
	"github.com/seckill/seckill/ports"
)

// Queue is an in-memory ports.Queue. Its consumers are one: Claim takes over every
// entry delivered and not acknowledged for at least minIdle (by time.Now, so a test in
// a synctest bubble controls it).
type Queue struct {
	mu      sync.Mutex
	seq     int
	entries []*entry
	// appended is closed by the next Append, waking the Reads waiting for it.
	appended chan struct{}
	// Dead holds the dead letters, with their reasons.
	Dead []DeadLetter
	// Err, when set, is returned by every call (Redis down).
	Err error
}

// DeadLetter is one dead-lettered delivery.
type DeadLetter struct {
	Delivery ports.Delivery
	Reason   string
}

type entry struct {
	d         ports.Delivery
	delivered bool
	acked     bool
	// deliveredAt is when the entry was last delivered.
	deliveredAt time.Time
}

var _ ports.Queue = (*Queue)(nil)

// SetErr sets Err while other goroutines use the queue.
func (q *Queue) SetErr(err error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.Err = err
}

// Append queues a delivery as the grab path would; an empty ID gets the next one.
func (q *Queue) Append(d ports.Delivery) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.seq++
	if d.ID == "" {
		d.ID = strconv.Itoa(q.seq)
	}
	q.entries = append(q.entries, &entry{d: d})
	if q.appended != nil {
		close(q.appended)
		q.appended = nil
	}
}

// Read hands out up to count entries never delivered from each voucher's queue,
// waiting at most block for one to be appended while there are none.
func (q *Queue) Read(ctx context.Context, count int, block time.Duration) ([]ports.Delivery, error) {
	var timeout <-chan time.Time
	for {
		ds, appended, err := q.take(ctx, count, true, func(e *entry) bool { return !e.delivered })
		if err != nil || len(ds) > 0 || block <= 0 {
			return ds, err
		}
		if timeout == nil {
			t := time.NewTimer(block)
			defer t.Stop()
			timeout = t.C
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("read queue: %w", ctx.Err())
		case <-timeout:
			return nil, nil
		case <-appended:
		}
	}
}

// Claim hands out again up to count entries delivered, not acknowledged, and idle for
// at least minIdle.
func (q *Queue) Claim(ctx context.Context, minIdle time.Duration, count int) ([]ports.Delivery, error) {
	now := time.Now()
	ds, _, err := q.take(ctx, count, false, func(e *entry) bool {
		return e.delivered && !e.acked && now.Sub(e.deliveredAt) >= minIdle
	})
	return ds, err
}

// take delivers up to count entries that want picks, of each voucher (perVoucher) or
// in all; when there are none it also returns a channel closed by the next Append.
func (q *Queue) take(ctx context.Context, count int, perVoucher bool, want func(*entry) bool) ([]ports.Delivery, <-chan struct{}, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.Err != nil {
		return nil, nil, q.Err
	}
	if err := ctx.Err(); err != nil {
		return nil, nil, fmt.Errorf("read queue: %w", err)
	}
	var out []ports.Delivery
	taken := map[domain.VoucherID]int{}
	now := time.Now()
	for _, e := range q.entries {
		if len(out) == count && !perVoucher {
			break
		}
		if want(e) && (!perVoucher || taken[e.d.VoucherID] < count) {
			taken[e.d.VoucherID]++
			e.delivered, e.deliveredAt = true, now
			e.d.Deliveries++
			out = append(out, e.d)
		}
	}
	if len(out) > 0 {
		return out, nil, nil
	}
	if q.appended == nil {
		q.appended = make(chan struct{})
	}
	return nil, q.appended, nil
}

// Ack acknowledges deliveries.
func (q *Queue) Ack(_ context.Context, ds ...ports.Delivery) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.Err != nil {
		return q.Err
	}
	for _, d := range ds {
		for _, e := range q.entries {
			if e.d.ID == d.ID {
				e.acked = true
			}
		}
	}
	return nil
}

// DeadLetter records d and acknowledges it.
func (q *Queue) DeadLetter(ctx context.Context, d ports.Delivery, reason string) error {
	if err := q.Ack(ctx, d); err != nil {
		return err
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	q.Dead = append(q.Dead, DeadLetter{Delivery: d, Reason: reason})
	return nil
}

// Refresh has nothing to do: the fake knows every entry at once.
func (q *Queue) Refresh(context.Context) error { return nil }

// Pending counts a voucher's entries not yet acknowledged.
func (q *Queue) Pending(voucher domain.VoucherID) int64 {
	q.mu.Lock()
	defer q.mu.Unlock()
	var n int64
	for _, e := range q.entries {
		if !e.acked && e.d.VoucherID == voucher {
			n++
		}
	}
	return n
}
