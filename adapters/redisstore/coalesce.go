package redisstore

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/seckill/seckill/domain"
)

// DefaultMaxBatch bounds the grabs of one voucher that one reserve call carries when
// Options.MaxBatch is zero.
const DefaultMaxBatch = 128

// coalescer makes the concurrent grabs of one voucher share Redis calls. While a call
// for a voucher is in flight, the grabs that arrive wait in the voucher's lane and go
// together in the next call, up to max of them, so the batch size follows the load by
// itself and a grab that finds its lane idle goes at once, alone, with no added delay.
//
// Each call is made by the goroutine of one of its grabs (the first of the batch): when
// a call comes back, the goroutine that made it hands the next batch to the first grab
// waiting, so no goroutine works for more than its own batch and none is started.
type coalescer struct {
	max int
	// maxWait bounds how long a grab waits for its turn; 0: until its context ends.
	maxWait time.Duration
	call    func(ctx context.Context, rs []domain.Reservation, tps []string) (batchReply, error)

	mu    sync.Mutex
	lanes map[domain.VoucherID]*lane

	// sizes[n] counts the calls that carried n grabs.
	sizes []atomic.Int64
}

// batchReply is what one reserve call answered: one error (nil: reserved) per grab,
// and the units left after it (-1 when the voucher has no sale state).
type batchReply struct {
	errs      []error
	remaining int
}

// lane is one voucher's queue: busy while a call for it is in flight.
type lane struct {
	busy    bool
	waiting []*grab
}

// grab is one Reserve waiting for its answer.
type grab struct {
	ctx context.Context
	r   domain.Reservation
	err error
	// done is closed when err is set, or when lead is: then this grab's goroutine
	// makes the call for lead, a batch that starts with this grab. Only a grab that
	// waits has one: a grab that finds its lane idle makes its call at once.
	done chan struct{}
	lead []*grab
}

// maxIdleLanes is how many idle lanes are kept for the next grabs of their vouchers;
// beyond it a lane that falls idle is dropped.
const maxIdleLanes = 1024

func newCoalescer(maxBatch int, maxWait time.Duration, call func(context.Context, []domain.Reservation, []string) (batchReply, error)) *coalescer {
	return &coalescer{max: maxBatch, maxWait: maxWait, call: call, lanes: make(map[domain.VoucherID]*lane), sizes: make([]atomic.Int64, maxBatch+1)}
}

// reserve judges r in the next call for its voucher and returns its answer. A grab
// that still waits in a lane when ctx ends, or once it has waited maxWait, is withdrawn
// and answered with an error wrapping domain.ErrUnavailable: it never reached Redis. It
// is answered then, not when the call in flight comes back, which may take longer on a
// busy machine. A grab already sent waits for its answer whatever ctx does, so a grab
// that was judged is never answered as if it had not been (the call has its own
// deadline: see send).
func (c *coalescer) reserve(ctx context.Context, r domain.Reservation) error {
	g := &grab{ctx: ctx, r: r}
	c.mu.Lock()
	l := c.lanes[r.VoucherID]
	if l == nil {
		l = &lane{}
		c.lanes[r.VoucherID] = l
	}
	if !l.busy {
		l.busy = true
		c.mu.Unlock()
		c.run(r.VoucherID, l, []*grab{g})
		return g.err
	}
	g.done = make(chan struct{})
	l.waiting = append(l.waiting, g)
	c.mu.Unlock()

	// Only a grab that waits has a timer: one that finds its lane idle pays for none.
	var late <-chan time.Time
	if c.maxWait > 0 {
		t := time.NewTimer(c.maxWait)
		defer t.Stop()
		late = t.C
	}
	select {
	case <-g.done:
	case <-ctx.Done():
		if c.withdraw(l, g) {
			return fmt.Errorf("reserve stock: waited for redis until the request ended: %w: %w", domain.ErrUnavailable, ctx.Err())
		}
		<-g.done
	case <-late:
		if c.withdraw(l, g) {
			return fmt.Errorf("reserve stock: waited %v for redis: %w", c.maxWait, domain.ErrUnavailable)
		}
		<-g.done
	}
	if g.lead != nil {
		c.run(r.VoucherID, l, g.lead)
	}
	return g.err
}

// withdraw takes g out of l's waiting grabs and reports whether it was still there:
// false when it was handed a batch or an answer meanwhile.
func (c *coalescer) withdraw(l *lane, g *grab) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	i := slices.Index(l.waiting, g)
	if i < 0 {
		return false
	}
	l.waiting = slices.Delete(l.waiting, i, i+1)
	return true
}

// run makes the call for batch, answers batch's grabs, and only then hands the lane's
// next batch to the first grab waiting (or marks the lane idle). The order matters on
// a busy machine: waking a goroutine puts it next in line to run on this processor
// and sends the one woken before it to the back of the run queue, behind every
// request still being read and parsed. Woken last, the grab that makes the next call
// runs as soon as this goroutine blocks, instead of after that backlog (which made
// the grabs waiting behind it reach maxWait with Redis idle).
func (c *coalescer) run(id domain.VoucherID, l *lane, batch []*grab) {
	reply, err := c.send(batch)
	for i, g := range batch {
		if err != nil {
			g.err = err
		} else {
			g.err = reply.errs[i]
		}
		if i > 0 {
			close(g.done)
		}
	}
	c.next(id, l, reply, err)
}

// next hands the lane's next batch to the first grab waiting, or marks the lane idle,
// once a call that answered reply and err has come back.
func (c *coalescer) next(id domain.VoucherID, l *lane, reply batchReply, err error) {
	c.mu.Lock()
	if err == nil && reply.remaining >= 0 {
		// The voucher has fewer units than these grabs want: they are answered now,
		// without another call, as the grab path's sold-out flag would answer them.
		l.waiting = slices.DeleteFunc(l.waiting, func(g *grab) bool {
			if g.r.Quantity <= reply.remaining {
				return false
			}
			g.err = domain.ErrSoldOut
			close(g.done)
			return true
		})
	}
	if len(l.waiting) == 0 {
		l.busy = false
		// The lane is kept for the voucher's next grab (most grabs of a voucher on
		// sale find its lane idle), unless too many are kept already.
		if len(c.lanes) > maxIdleLanes {
			delete(c.lanes, id)
		}
		c.mu.Unlock()
		return
	}
	n := min(len(l.waiting), c.max)
	next := slices.Clone(l.waiting[:n])
	l.waiting = slices.Delete(l.waiting, 0, n)
	c.mu.Unlock()
	next[0].lead = next
	close(next[0].done)
}

// batchSizes returns how many calls carried each number of grabs so far: element n
// counts the calls of n grabs (element 0 is always 0).
func (c *coalescer) batchSizes() []int64 {
	out := make([]int64, len(c.sizes))
	for n := range c.sizes {
		out[n] = c.sizes[n].Load()
	}
	return out
}

// send makes one call for batch. Its context keeps the first grab's values but none of
// the grabs' cancellations or deadlines: a client that hangs up must not fail the
// others' call, and a grab that reached Redis is answered with what Redis decided, not
// with a timeout of its request while the answer is on its way. The client's own
// timeouts bound the call (a second at most on a tuned client: TuneClientOptions).
func (c *coalescer) send(batch []*grab) (batchReply, error) {
	rs := make([]domain.Reservation, len(batch))
	var tps []string // nil while no grab of the batch is traced
	for i, g := range batch {
		rs[i] = g.r
		// Only a valid span context has a traceparent to carry: an untraced grab
		// (tracing off) skips the propagator.
		if !trace.SpanContextFromContext(g.ctx).IsValid() {
			continue
		}
		if tps == nil {
			tps = make([]string, len(batch))
		}
		tps[i] = traceParent(g.ctx)
	}
	c.sizes[len(batch)].Add(1)
	return c.call(context.WithoutCancel(batch[0].ctx), rs, tps)
}
