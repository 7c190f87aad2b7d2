package httpapi

import (
	"context"
	"errors"
	"hash/fnv"
	"math/rand/v2"
	"net/http"
	"os"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"
)

// DefaultRetry is StreamOptions.Retry's default: the mean of the reconnection delay
// a stream tells its client (the delay a browser's EventSource takes when it is told
// none is 3 s, the same for every client).
const DefaultRetry = 3 * time.Second

// headerLastEventID is the header a reconnecting EventSource names the last event
// it received with.
const headerLastEventID = "Last-Event-ID"

// event is one event of a stream: its id (the SSE "id:" field, which the client
// sends back as Last-Event-ID when it reconnects), kind and data (one line of JSON).
// A final event is the stream's last.
type event struct {
	id, kind string
	data     []byte
	final    bool
}

// contentEvent is an event whose id names its data: the same state has the same id
// on every instance and every connection.
func contentEvent(kind string, data []byte) event {
	h := fnv.New64a()
	_, _ = h.Write(data) // a hash's Write never fails
	return event{id: strconv.FormatUint(h.Sum64(), 16), kind: kind, data: data}
}

// feed is what one stream sends after its first event: read is called on each value
// of wake, every every (when not 0) and answers the next event, or false when there
// is nothing new; the stream ends when gone closes (nil: never).
type feed[T any] struct {
	wake  <-chan T
	every time.Duration
	gone  <-chan struct{}
	read  func(ctx context.Context, woken T) (event, bool)
}

// pump is every stream's loop: it sends f's events, and a ping when it has nothing to
// say, until the client leaves, the hub closes, f's gone closes or a final event is
// sent. The client then reconnects after the stream's retry (a final order's
// reconnect is answered 204).
func pump[T any](ctx context.Context, s *Streams, w *eventWriter, f feed[T]) error {
	ping := time.NewTicker(s.opts.Ping)
	defer ping.Stop()
	var every <-chan time.Time
	if f.every > 0 {
		t := time.NewTicker(f.every)
		defer t.Stop()
		every = t.C
	}
	for {
		var woken T
		select {
		case <-ctx.Done():
			return nil
		case <-s.closed:
			return nil
		case <-f.gone:
			return nil // dropped as too slow: the client reconnects
		case <-ping.C:
			if w.ping() != nil {
				return nil
			}
			continue
		case woken = <-f.wake:
		case <-every:
		}
		ev, ok := f.read(ctx, woken)
		if !ok {
			continue
		}
		if w.send(ev) != nil || ev.final {
			return nil
		}
	}
}

// admit holds one of the hub's streams for the request next answers. At the limit,
// or once the hub is closed, it answers 200 with a stream holding only a retry: (between
// one and two Retry) and closes it: a browser's EventSource takes any
// other status as final and never reconnects. It comes before authentication, so a
// refused stream spends no ticket.
func (s *Streams) admit(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if s == nil {
			return errNoStreams
		}
		if !s.acquire() {
			w := s.begin(c)
			_ = w.retry(jitter(s.opts.Retry, 2*s.opts.Retry)) // the client reconnects either way
			return nil
		}
		defer s.release()
		return next(c)
	}
}

// jitter is a delay drawn evenly from [lo, hi).
func jitter(lo, hi time.Duration) time.Duration {
	return lo + rand.N(hi-lo)
}

// eventWriter writes one stream's events, each flushed at once under the write
// timeout.
type eventWriter struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration
	metrics *Metrics
}

// begin answers 200 with the event stream's headers. The stream lives as long as its
// client listens: the server's read deadline (for a request's body) is lifted.
func (s *Streams) begin(c echo.Context) *eventWriter {
	res := c.Response()
	h := res.Header()
	h.Set(echo.HeaderContentType, "text/event-stream")
	h.Set(echo.HeaderCacheControl, "no-cache")
	// nginx would buffer the stream otherwise.
	h.Set("X-Accel-Buffering", "no")
	res.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(res)
	// Not every ResponseWriter can (a test recorder cannot); the stream works without.
	_ = rc.SetReadDeadline(time.Time{})
	return &eventWriter{w: res, rc: rc, timeout: s.opts.WriteTimeout, metrics: s.metrics}
}

// start begins a stream that will send events: its first line tells the client to
// reconnect after the mean Retry, jittered by half of it either way, so the clients
// of an instance that goes away do not all come back at once.
func (s *Streams) start(c echo.Context) (*eventWriter, error) {
	w := s.begin(c)
	return w, w.retry(jitter(s.opts.Retry/2, s.opts.Retry*3/2))
}

// startWith starts a stream (start) and sends it first; it reports false when the client
// is gone already (a write failed), and there is nothing more to answer.
func (s *Streams) startWith(c echo.Context, first event) (*eventWriter, bool) {
	w, err := s.start(c)
	if err != nil {
		return nil, false
	}
	return w, w.send(first) == nil
}

// retry writes the stream's reconnection delay.
func (w *eventWriter) retry(d time.Duration) error {
	return w.write([]byte("retry: " + strconv.FormatInt(d.Milliseconds(), 10) + "\n\n"))
}

// send writes ev.
func (w *eventWriter) send(ev event) error {
	buf := make([]byte, 0, len(ev.id)+len(ev.kind)+len(ev.data)+24)
	buf = append(append(buf, "id: "...), ev.id...)
	buf = append(append(buf, "\nevent: "...), ev.kind...)
	buf = append(append(buf, "\ndata: "...), ev.data...)
	if err := w.write(append(buf, "\n\n"...)); err != nil {
		return err
	}
	w.metrics.streamEvents.WithLabelValues(ev.kind).Inc()
	return nil
}

// ping writes the comment that keeps a quiet stream open.
func (w *eventWriter) ping() error {
	return w.write([]byte(": ping\n\n"))
}

// write writes b and flushes it within the write timeout. A client that does not
// take it in time is counted dropped.
func (w *eventWriter) write(b []byte) error {
	_ = w.rc.SetWriteDeadline(time.Now().Add(w.timeout))
	_, err := w.w.Write(b)
	if err == nil {
		err = w.rc.Flush()
	}
	if errors.Is(err, os.ErrDeadlineExceeded) {
		w.metrics.streamsDropped.Inc()
	}
	return err
}
