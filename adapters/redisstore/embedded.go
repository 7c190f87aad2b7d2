package redisstore

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/domain"
)

// Bounds of how often an Embedded server reads the wall clock (see Embedded).
const (
	embeddedMinStep = 10 * time.Millisecond
	embeddedMaxStep = time.Second
	// embeddedClockShare: the clock step is at least this many times what the last
	// step cost, so expiry takes at most about a tenth of the server's time.
	embeddedClockShare = 10
)

// Embedded is an in-process, Redis-compatible server (github.com/alicebob/miniredis)
// listening on a random port of 127.0.0.1, for running seckill with nothing else
// installed. The same adapters and Lua scripts talk to it over TCP as to Redis.
//
// It is for trying and testing, not for production: it keeps everything in this
// process's memory and nothing across restarts (a restart starts empty, so the sale
// state must be rebuilt from the database), it runs every command and script under
// one lock, and it implements only part of Redis; scripts run in gopher-lua, a Lua 5.1
// of its own.
//
// Keys expire by the wall clock. miniredis keeps a TTL per key, not an expiry instant:
// with miniredis.ClockTTL(true), the first command after its clock moved takes the
// time elapsed off every TTL and drops the keys that ran out, so no command sees an
// expired key. Left to time.Now(), that clock moves before every command (every
// redis.call in a script too), and each move visits and sorts every key: about 0.13 ms
// at 1,000 keys, 2 ms at 10,000. It also reads the clock twice per command, so a TTL
// set with PEXPIREAT comes out microseconds short and PEXPIRETIME answers a
// millisecond early. So a goroutine sets the server's clock (miniredis.SetTime) from
// the wall clock in whole milliseconds and takes the step itself: every 10 ms while
// that is cheap (idle, this costs about 1% of a core), less often as it gets dearer
// (at least once a second: TIME is the sale's clock), so it costs about a tenth of the
// server's time at most while a step costs under 100 ms. Past that it costs more: a
// sale to 200,000 buyers leaves a key with a TTL per buyer (its index, its rate), and a
// step then takes a few hundred milliseconds — a second on a busy machine — holding
// every command meanwhile; one more reason this server is for trying and testing.
// Between steps the clock stands still, as Redis's does during a command or script:
// expiry, TIME, stream ids and idle times are exact to within a step, an expiry set
// with PEXPIREAT reads back exactly, and expired keys are freed within a step even
// when no command comes. So the server's time trails the wall clock by up to a step;
// Now tells it, for the sale's clock on the Go side.
type Embedded struct {
	srv  *miniredis.Miniredis
	addr string // kept: miniredis cannot tell its address once closed
	// now is the server's time (Unix ms), stored after each step has set it.
	now atomic.Int64

	stop    chan struct{}
	stopped chan struct{}

	// mu guards closed and conns: Dial serves no connection once Close began, and
	// Close ends every connection Dial served, and waits for the server to let go of
	// them, before it closes the server (miniredis's own bookkeeping of connections is
	// not safe against a connection served while it closes).
	mu      sync.Mutex
	closed  bool
	conns   map[net.Conn]struct{}
	serving sync.WaitGroup
	once    sync.Once
}

// StartEmbedded starts an Embedded server on a random port of 127.0.0.1 and the
// goroutine that keeps its clock. It returns an error when it cannot listen. Call
// Close to stop both.
func StartEmbedded() (*Embedded, error) {
	srv := miniredis.NewMiniRedis()
	// The clock first: ClockTTL counts the TTLs down from it.
	now := wallMillis()
	srv.SetTime(now)
	srv.ClockTTL(true)
	if err := srv.StartAddr("127.0.0.1:0"); err != nil {
		return nil, fmt.Errorf("start embedded redis: %w", err)
	}
	e := &Embedded{srv: srv, addr: srv.Addr(), stop: make(chan struct{}), stopped: make(chan struct{})}
	e.now.Store(now.UnixMilli())
	go e.runClock(now)
	return e, nil
}

// wallMillis returns the wall clock in whole milliseconds, as Redis keeps time, and
// without the monotonic reading: miniredis turns a PEXPIREAT into a TTL by the wall
// clock, so the steps must be measured by it too, or the two readings' jitter makes
// PEXPIRETIME answer a millisecond early.
func wallMillis() time.Time { return time.Now().Truncate(time.Millisecond) }

// runClock moves the server's clock from last to the wall clock and expires the keys
// due, one step at a time, until Close. Each step waits embeddedClockShare times as
// long as the last one took (lock wait included), within [embeddedMinStep,
// embeddedMaxStep]. When the wall clock is set back, the server's clock stands still
// until the wall clock catches up: keys then expire late, as in Redis, which expires
// at absolute times, rather than early.
func (e *Embedded) runClock(last time.Time) {
	defer close(e.stopped)
	t := time.NewTimer(embeddedMinStep)
	defer t.Stop()
	for {
		select {
		case <-e.stop:
			return
		case <-t.C:
		}
		began := time.Now()
		if now := wallMillis(); now.After(last) {
			last = now
			e.srv.SetTime(now)
			e.now.Store(now.UnixMilli())
			// Any access to the data takes the step now, here rather than in the next
			// command, so its cost is measured and the expired keys are freed.
			e.srv.DB(0)
		}
		t.Reset(min(max(embeddedClockShare*time.Since(began), embeddedMinStep), embeddedMaxStep))
	}
}

// Now returns the server's time: what TIME answers and its scripts judge a sale by
// (sale_now), which stands still between the steps of its clock. A time read here is
// never ahead of the time a script run after the read sees, as the wall clock can be
// by up to a step.
func (e *Embedded) Now() time.Time { return time.UnixMilli(e.now.Load()) }

// Addr returns the server's address, host:port.
func (e *Embedded) Addr() string { return e.addr }

// Dial connects to the server in memory, without TCP: the server serves one end of a
// synchronous pipe (net.Pipe) and the caller gets the other. It has the shape of
// redis.Options.Dialer, so a client in this process reaches the server with no
// listener, no dial timeout and nothing a busy machine could make fail. Each call is
// a new connection; Close ends them all.
//
// The server's replies are buffered (bufferedConn): a pipelining client writes every
// command before it reads a reply, and a pipe has no buffer of its own, so a server
// blocked writing its first reply would never read the rest.
func (e *Embedded) Dial(context.Context, string, string) (net.Conn, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return nil, fmt.Errorf("dial the in-process redis: %w", net.ErrClosed)
	}
	client, server := net.Pipe()
	if e.conns == nil {
		e.conns = make(map[net.Conn]struct{})
	}
	e.conns[server] = struct{}{}
	e.serving.Add(1)
	go func() {
		defer e.serving.Done()
		e.srv.Server().ServeConn(newBufferedConn(server))
		e.mu.Lock()
		delete(e.conns, server)
		e.mu.Unlock()
	}()
	return client, nil
}

// bufferedConn is a net.Conn whose writes never wait for the reader: they are queued
// and written to the underlying connection, in order, by a goroutine of their own.
// Close closes the connection once what was written before it is delivered (or the
// reader has gone).
type bufferedConn struct {
	net.Conn
	mu      sync.Mutex
	ready   *sync.Cond
	pending []byte
	closed  bool
	err     error
}

func newBufferedConn(c net.Conn) *bufferedConn {
	b := &bufferedConn{Conn: c}
	b.ready = sync.NewCond(&b.mu)
	go b.deliver()
	return b
}

// Write queues p and returns at once; it fails once the connection is closed or a
// delivery failed.
func (b *bufferedConn) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.err != nil {
		return 0, b.err
	}
	if b.closed {
		return 0, net.ErrClosed
	}
	b.pending = append(b.pending, p...)
	b.ready.Signal()
	return len(p), nil
}

// Close closes the connection after the queued writes.
func (b *bufferedConn) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.closed = true
	b.ready.Signal()
	return nil
}

// deliver writes what is queued until the connection is closed and drained, or a
// write fails (the reader is gone); then it closes the underlying connection.
func (b *bufferedConn) deliver() {
	defer b.Conn.Close()
	var out []byte
	for {
		b.mu.Lock()
		for len(b.pending) == 0 && !b.closed {
			b.ready.Wait()
		}
		if len(b.pending) == 0 {
			b.mu.Unlock()
			return
		}
		out, b.pending = b.pending, out[:0]
		b.mu.Unlock()
		if _, err := b.Conn.Write(out); err != nil {
			b.mu.Lock()
			b.err, b.pending = err, nil
			b.mu.Unlock()
			return
		}
	}
}

// BusyHook returns a redis.Hook for the clients of an Embedded server. The server runs
// one command at a time, in this process: under a flood on a busy machine a call may
// wait for its turn past its deadline (a request's), or for a pooled connection. Such a
// call fails with an error wrapping domain.ErrUnavailable that says the server was
// busy — answered 503 like any overload — rather than with the pipe's "i/o timeout",
// which reads as a Redis out of reach and is no error the API knows (a 500).
func (e *Embedded) BusyHook() redis.Hook { return busyHook{} }

type busyHook struct{}

func (busyHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (busyHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if late(err) {
			err = tooBusy(err)
			cmd.SetErr(err)
		}
		return err
	}
}

func (busyHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		for _, cmd := range cmds {
			if cerr := cmd.Err(); late(cerr) {
				cmd.SetErr(tooBusy(cerr))
			}
		}
		if late(err) {
			err = tooBusy(err)
		}
		return err
	}
}

// late reports whether err is a call that ran out of time — its read or write deadline
// passed, or no pooled connection came free in time — and does not say so already.
func late(err error) bool {
	var netErr net.Error
	return (busy(err) || (errors.As(err, &netErr) && netErr.Timeout())) && !errors.Is(err, domain.ErrUnavailable)
}

func tooBusy(err error) error {
	return fmt.Errorf("the in-process redis was busy past the call's deadline: %w: %w", domain.ErrUnavailable, err)
}

// URL returns the server's address as a redis:// URL, for redis.ParseURL.
func (e *Embedded) URL() string { return "redis://" + e.addr }

// Close stops the server and its clock, closes its connections and forgets its data.
// Calling it again does nothing.
func (e *Embedded) Close() {
	e.once.Do(func() {
		close(e.stop)
		<-e.stopped
		e.mu.Lock()
		e.closed = true
		// The pipes themselves, not their buffered writers: a reply still waiting for
		// a reader must not keep the server serving.
		for conn := range e.conns {
			_ = conn.Close()
		}
		e.mu.Unlock()
		e.serving.Wait()
		e.srv.Close()
	})
}
