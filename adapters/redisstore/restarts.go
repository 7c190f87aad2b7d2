package redisstore

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/domain"
)

// Restarts notices that the Redis server behind a client is not the one it was: it
// restarted (perhaps from an older snapshot, missing the latest grabs) or a replica
// took over (perhaps behind). Every new connection reads the server's run_id (Observe,
// as the client's OnConnect), and a connection is new after any restart or failover,
// since the old ones broke: so the first command after it already knows. From then on
// Healing reports true — a Stock given these Restarts answers grabs unavailable — until
// Healed, which the caller says once it has repaired the sale state from the database.
type Restarts struct {
	healing atomic.Bool
	// gen counts the changes seen, so a heal that a newer change overtook does not
	// end the gate (Healed).
	gen     atomic.Uint64
	changed chan struct{}

	mu   sync.Mutex
	last string
	// watching: Watch has read the server's run_id; until then Observe does nothing.
	watching bool
}

// NewRestarts returns a Restarts that watches nothing until Watch.
func NewRestarts() *Restarts {
	return &Restarts{changed: make(chan struct{}, 1)}
}

// Watch starts watching the one server client talks to (a single server, or
// Sentinel's master): it reads its run_id now, and Observe compares every new
// connection's with it from then on. Not for a Redis Cluster's client: each node has
// a run_id of its own (Observe stays idle there).
func (r *Restarts) Watch(ctx context.Context, client *redis.Client) error {
	info, err := client.Info(ctx, "server").Result()
	if err != nil {
		return fmt.Errorf("read redis's run_id: %w", err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.last, r.watching = runID(info), true
	return nil
}

// runID reads run_id from the text of INFO server; "" when it has none.
func runID(info string) string {
	_, rest, ok := strings.Cut(info, "run_id:")
	if !ok {
		return ""
	}
	id, _, _ := strings.Cut(rest, "\r\n")
	return id
}

// Observe reads the run_id of the server cn is connected to. It has the shape of
// redis.Options.OnConnect. The connection that first meets a changed server is
// refused (an error wrapping domain.ErrUnavailable): the command that dialed it may
// be a grab that passed the gate a moment before, and must not be judged by the state
// to be healed. Failing to read the run_id fails nothing.
func (r *Restarts) Observe(ctx context.Context, cn *redis.Conn) error {
	r.mu.Lock()
	watching := r.watching
	r.mu.Unlock()
	if !watching {
		return nil
	}
	info, err := cn.Info(ctx, "server").Result()
	if err != nil {
		return nil
	}
	id := runID(info)
	r.mu.Lock()
	defer r.mu.Unlock()
	if id == "" || r.last == "" || id == r.last {
		r.last = id
		return nil
	}
	r.last = id
	r.gen.Add(1)
	r.healing.Store(true)
	select {
	case r.changed <- struct{}{}:
	default:
	}
	return fmt.Errorf("redis %w: the server changed (run_id %s): its sale state is being healed", domain.ErrUnavailable, id)
}

// Healing reports whether the server changed since the last Healed.
func (r *Restarts) Healing() bool { return r.healing.Load() }

// Changed is signaled when a change of server is first seen.
func (r *Restarts) Changed() <-chan struct{} { return r.changed }

// Generation returns a token of the changes seen so far; a heal takes one before it
// starts and hands it to Healed.
func (r *Restarts) Generation() uint64 { return r.gen.Load() }

// Healed says the sale state is repaired as of generation gen: grabs are taken again,
// unless the server changed again since gen (then another heal is due).
func (r *Restarts) Healed(gen uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.gen.Load() == gen {
		r.healing.Store(false)
	}
}
