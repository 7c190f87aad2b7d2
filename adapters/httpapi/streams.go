package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/seckill/seckill/application"
	"github.com/seckill/seckill/domain"
	"github.com/seckill/seckill/ports"
)

// The defaults of StreamOptions.
const (
	// DefaultMaxStreams is SECKILL_MAX_STREAMS's default.
	DefaultMaxStreams = 10000
	// DefaultPing is how often a quiet stream sends a comment: the contract's bound,
	// 15 s, which also keeps proxies from closing it as idle.
	DefaultPing = 15 * time.Second
	// DefaultResync is how often a stream reads its order or its voucher again while
	// no change is announced: the bound on how long a lost announcement (Pub/Sub
	// delivers at most once) can keep a change from a stream.
	DefaultResync = 5 * time.Second
	// DefaultWriteTimeout bounds the write of one event to a client.
	DefaultWriteTimeout = 10 * time.Second
)

// VoucherEvery is how often a voucher stream's units are read while it has
// listeners: the contract's at most 10 events a second. The grab path announces
// nothing (an announcement per grab would cost the hot path a command); the units it
// takes are seen by this read, one per voucher per instance, whatever the number of
// its listeners.
const VoucherEvery = 100 * time.Millisecond

// clientBuffer is how many voucher events a client may have waiting: a client that
// falls that far behind (over 3 s at 10 a second) is dropped, and reconnects.
const clientBuffer = 32

// StreamOptions tune the event streams.
type StreamOptions struct {
	// Changes tells of the changes of orders and sales made by any instance
	// (required).
	Changes ports.Changes
	// Tickets redeems the single-use tickets a browser opens a stream with
	// (required).
	Tickets *application.RedeemStreamTicket
	// Max bounds the streams open at once on this instance; beyond it a stream is
	// answered with only a retry: (see Streams.admit). 0 means DefaultMaxStreams.
	Max int
	// Retry is the mean reconnection delay a stream tells its client (its retry:
	// field, jittered by half of it either way); a stream refused at Max is told
	// between one and two Retry. 0 means DefaultRetry.
	Retry time.Duration
	// Ping is how often a stream with nothing to say sends a ": ping" comment; 0
	// means DefaultPing.
	Ping time.Duration
	// Resync is how often a stream reads its order (or its voucher's terms) again
	// while no change is announced; 0 means DefaultResync.
	Resync time.Duration
	// WriteTimeout bounds the write of one event: a client slower than that is
	// dropped. 0 means DefaultWriteTimeout.
	WriteTimeout time.Duration
	// Log logs the subscriptions that fail (the streams then rely on Resync);
	// nil logs nothing.
	Log *zap.Logger
}

// Streams holds the event streams of one API: how many are open, and one topic per
// voucher that has listeners on this instance, which holds the voucher's one
// subscription to the announced changes (ports.Changes) and fans them out to its
// listeners. Make it with NewStreams, give it to New (Options.Streams), and Close it
// when the server shuts down: its streams end, so the server can drain.
type Streams struct {
	opts   StreamOptions
	open   atomic.Int64
	mu     sync.Mutex
	topics map[domain.VoucherID]*topic
	closed chan struct{}
	once   sync.Once

	// Set by New: the voucher reads and the instruments.
	getVoucher *application.GetVoucher
	metrics    *Metrics
}

// NewStreams returns the streams' hub; opts' zero durations take their defaults.
func NewStreams(opts StreamOptions) *Streams {
	if opts.Max <= 0 {
		opts.Max = DefaultMaxStreams
	}
	if opts.Ping <= 0 {
		opts.Ping = DefaultPing
	}
	if opts.Resync <= 0 {
		opts.Resync = DefaultResync
	}
	if opts.Retry <= 0 {
		opts.Retry = DefaultRetry
	}
	if opts.WriteTimeout <= 0 {
		opts.WriteTimeout = DefaultWriteTimeout
	}
	if opts.Log == nil {
		opts.Log = zap.NewNop()
	}
	return &Streams{opts: opts, topics: make(map[domain.VoucherID]*topic), closed: make(chan struct{})}
}

// Close ends every stream and refuses new ones (as at the limit: their clients
// reconnect after a retry, to another instance), at once; it returns without waiting
// for them. Closing twice is harmless.
func (s *Streams) Close() {
	s.once.Do(func() { close(s.closed) })
}

// acquire takes one of the Max streams; it reports false (and counts the refusal)
// when they are all taken or the hub is closed. release gives it back.
func (s *Streams) acquire() bool {
	select {
	case <-s.closed:
		return false
	default:
	}
	if s.open.Add(1) > int64(s.opts.Max) {
		s.open.Add(-1)
		s.metrics.streamsRefused.Inc()
		return false
	}
	s.metrics.streamsOpen.Inc()
	return true
}

func (s *Streams) release() {
	s.open.Add(-1)
	s.metrics.streamsOpen.Dec()
}

// listener is one stream waiting on its topic.
type listener struct {
	// order is the order an order stream follows; empty for a voucher stream.
	order domain.OrderID
	// wake tells an order stream to read its order again (a change of it was
	// announced); wakes that find one waiting are one.
	wake chan struct{}
	// events are a voucher stream's voucher, rendered, waiting to be sent.
	events chan []byte
	// gone is closed when the listener is dropped for falling behind.
	gone    chan struct{}
	dropped bool
}

func orderListener(id domain.OrderID) *listener {
	return &listener{order: id, wake: make(chan struct{}, 1), gone: make(chan struct{})}
}

func voucherListener() *listener {
	return &listener{events: make(chan []byte, clientBuffer), gone: make(chan struct{})}
}

// topic is one voucher's listeners on this instance, with the voucher's one
// subscription and, while voucher streams listen, its reader.
type topic struct {
	id    domain.VoucherID
	refs  int // guarded by Streams.mu
	ready chan struct{}
	stop  context.CancelFunc

	mu       sync.Mutex
	orders   map[domain.OrderID]map[*listener]bool
	vouchers map[*listener]bool
	// notified says a change of the voucher was announced: its next read is a whole
	// one (GetVoucher.Handle), not only its units.
	notified atomic.Bool
}

// join adds l to voucher v's topic, making the topic (and its subscription) if it is
// the first, and returns once the subscription is made (or failed: the streams then
// rely on their timers), so no change announced after join returns is missed.
func (s *Streams) join(ctx context.Context, v domain.VoucherID, l *listener) *topic {
	s.mu.Lock()
	t := s.topics[v]
	if t == nil {
		tctx, stop := context.WithCancel(context.Background())
		t = &topic{id: v, ready: make(chan struct{}), stop: stop,
			orders: make(map[domain.OrderID]map[*listener]bool), vouchers: make(map[*listener]bool)}
		s.topics[v] = t
		go s.run(tctx, t)
	}
	t.refs++
	s.mu.Unlock()
	t.mu.Lock()
	if l.order != "" {
		if t.orders[l.order] == nil {
			t.orders[l.order] = make(map[*listener]bool)
		}
		t.orders[l.order][l] = true
	} else {
		t.vouchers[l] = true
		// The newcomer's first event was read before it joined: the next read is a
		// whole one, sent to every voucher listener (each skips what it sent already).
		t.notified.Store(true)
	}
	t.mu.Unlock()
	select {
	case <-t.ready:
	case <-ctx.Done():
	}
	return t
}

// leave takes l off t; the last to leave ends the topic and its subscription.
func (s *Streams) leave(t *topic, l *listener) {
	t.mu.Lock()
	if l.order != "" {
		delete(t.orders[l.order], l)
		if len(t.orders[l.order]) == 0 {
			delete(t.orders, l.order)
		}
	} else {
		delete(t.vouchers, l)
	}
	t.mu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	if t.refs--; t.refs == 0 {
		delete(s.topics, t.id)
		t.stop()
	}
}

// run subscribes to t's voucher and reads the voucher for its voucher listeners until
// ctx ends, then ends the subscription.
func (s *Streams) run(ctx context.Context, t *topic) {
	stop, err := s.opts.Changes.Subscribe(ctx, t.id, t.notify)
	close(t.ready)
	if err != nil {
		if ctx.Err() == nil {
			s.opts.Log.Warn("event streams: no subscription to the voucher's changes; its streams read again every resync",
				zap.Stringer("voucher", t.id), zap.Duration("resync", s.opts.Resync), zap.Error(err))
		}
	} else {
		defer stop()
	}
	s.readVoucher(ctx, t)
}

// notify hands an announced change to the listeners it concerns: an order's wakes
// its streams; a voucher's has its next read be a whole one. It never blocks.
func (t *topic) notify(ch ports.Change) {
	if ch.Order == "" {
		t.notified.Store(true)
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for l := range t.orders[ch.Order] {
		select {
		case l.wake <- struct{}{}:
		default: // a wake is waiting already: the read it brings sees this change too
		}
	}
}

// readVoucher reads t's voucher every VoucherEvery while voucher streams listen —
// its units (GetVoucher.Refresh: one read of Redis), or all of it (GetVoucher.Handle)
// after an announced change, for the first read and every Resync — and sends it to
// them when it differs from what it sent last: at most one event per VoucherEvery,
// the last state always sent.
func (s *Streams) readVoucher(ctx context.Context, t *topic) {
	tick := time.NewTicker(VoucherEvery)
	defer tick.Stop()
	var (
		cur      application.LiveVoucher
		have     bool
		last     []byte
		lastFull time.Time
	)
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if !t.listened() {
			have, last = false, nil
			continue
		}
		full := t.notified.Swap(false) || !have || time.Since(lastFull) >= s.opts.Resync
		var (
			v   application.LiveVoucher
			err error
		)
		if full {
			v, err = s.getVoucher.Handle(ctx, t.id)
			lastFull = time.Now()
		} else {
			v, err = s.getVoucher.Refresh(ctx, cur)
		}
		if err != nil {
			continue // the next tick reads again
		}
		cur, have = v, true
		b, err := json.Marshal(toVoucherJSON(v))
		if err != nil || (!full && bytes.Equal(b, last)) {
			continue
		}
		last = b
		t.broadcast(b, s.metrics)
	}
}

// listened reports whether voucher streams listen to t.
func (t *topic) listened() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.vouchers) > 0
}

// broadcast hands b to every voucher listener, dropping those whose buffer is full.
func (t *topic) broadcast(b []byte, m *Metrics) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for l := range t.vouchers {
		if l.dropped {
			continue
		}
		select {
		case l.events <- b:
		default:
			l.dropped = true
			close(l.gone)
			m.streamsDropped.Inc()
		}
	}
}
