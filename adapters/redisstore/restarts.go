package redisstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/domain"
)

// Restarts notices that a Redis server behind a client is not the one it was: it
// restarted (perhaps from an older snapshot, or empty, missing the latest grabs) or a
// replica took over (perhaps behind). Every new connection reads the server's run_id
// (Observe, as the client's OnConnect), and a connection is new after any restart or
// failover, since the old ones broke: so the first command after it already knows.
// On a Redis Cluster each master is watched on its own, by its node id: a master that
// comes back with another run_id, or a node that serves as a master now and did not
// when last seen (a replica promoted in a failover), is a change. From then on Healing
// reports true — a Stock given these Restarts answers grabs unavailable — until
// Healed, which the caller says once it has repaired the sale state from the database.
type Restarts struct {
	healing atomic.Bool
	// gen counts the changes seen, so a heal that a newer change overtook does not
	// end the gate (Healed).
	gen     atomic.Uint64
	changed chan struct{}

	mu sync.Mutex
	// servers holds what was last seen of each server, by node id on a cluster and
	// under the key "" for the one server otherwise.
	servers map[string]server
	// watching: Watch has read the run_ids; until then Observe does nothing.
	watching bool
	// cluster: the client is a Redis Cluster's, whose servers are told apart by node id.
	cluster bool
}

// server is what Restarts saw of one Redis server.
type server struct {
	runID  string
	master bool
}

// NewRestarts returns a Restarts that watches nothing until Watch.
func NewRestarts() *Restarts {
	return &Restarts{changed: make(chan struct{}, 1), servers: make(map[string]server)}
}

// Watch starts watching the servers client talks to: the one server (or Sentinel's
// master), or every node of a Redis Cluster. It reads their run_ids now, and Observe
// compares every new connection's with them from then on.
func (r *Restarts) Watch(ctx context.Context, client redis.UniversalClient) error {
	seen := make(map[string]server)
	var mu sync.Mutex
	read := func(ctx context.Context, c redis.Cmdable, cluster bool) error {
		key, s, err := identify(ctx, c, cluster)
		if err != nil {
			return fmt.Errorf("read redis's run_id: %w", err)
		}
		mu.Lock()
		defer mu.Unlock()
		seen[key] = s
		return nil
	}
	cc, cluster := client.(*redis.ClusterClient)
	var err error
	if cluster {
		err = cc.ForEachShard(ctx, func(ctx context.Context, node *redis.Client) error { return read(ctx, node, true) })
	} else {
		err = read(ctx, client, false)
	}
	if err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.servers, r.watching, r.cluster = seen, true, cluster
	return nil
}

// identify reads who the server behind c is: its key in Restarts.servers (its node id
// on a cluster), its run_id and whether it is a master.
func identify(ctx context.Context, c redis.Cmdable, cluster bool) (string, server, error) {
	var info *redis.StringCmd
	var myID *redis.StringCmd
	_, err := c.Pipelined(ctx, func(p redis.Pipeliner) error {
		info = p.Info(ctx, "server", "replication")
		if cluster {
			myID = p.ClusterMyID(ctx)
		}
		return nil
	})
	if err != nil {
		return "", server{}, err
	}
	key := ""
	if cluster {
		key = myID.Val()
	}
	return key, server{runID: infoField(info.Val(), "run_id"), master: infoField(info.Val(), "role") == "master"}, nil
}

// infoField reads field from the text of INFO; "" when it has none.
func infoField(info, field string) string {
	for line := range strings.Lines(info) {
		if value, ok := strings.CutPrefix(line, field+":"); ok {
			return strings.TrimRight(value, "\r\n")
		}
	}
	return ""
}

// Observe reads the run_id of the server cn is connected to. It has the shape of
// redis.Options.OnConnect. The connection that first meets a changed server is
// refused (an error wrapping domain.ErrUnavailable): the command that dialed it may
// be a grab that passed the gate a moment before, and must not be judged by the state
// to be healed. A server that refuses to say who it is (an error reply: INFO not
// allowed) fails nothing. A connection that did not answer (a timeout, a reset) is
// refused too: the command would only wait out a timeout of its own after the one
// the check waited out, and a reply that came late would be read as the command's.
func (r *Restarts) Observe(ctx context.Context, cn *redis.Conn) error {
	r.mu.Lock()
	watching, cluster := r.watching, r.cluster
	r.mu.Unlock()
	if !watching {
		return nil
	}
	key, now, err := identify(ctx, cn, cluster)
	var reply redis.Error
	switch {
	case errors.As(err, &reply):
		return nil //nolint:nilerr // a server that will not say who it is fails nothing: the command will tell
	case err != nil:
		return fmt.Errorf("redis %w: read the run_id of a new connection: %w", domain.ErrUnavailable, err)
	}
	if now.runID == "" || !r.see(key, now) {
		return nil
	}
	return fmt.Errorf("redis %w: the server changed (run_id %s): its sale state is being healed", domain.ErrUnavailable, now.runID)
}

// Recheck reads every master of a cluster client now, as Observe reads a new
// connection's server: a failover may promote a replica the client already holds a
// connection to (it asks any node for the slots), which no new connection would
// reveal. Serve calls it every second on a cluster. It returns the error of a master
// that did not answer; the others are still read.
func (r *Restarts) Recheck(ctx context.Context, client *redis.ClusterClient) error {
	r.mu.Lock()
	watching := r.watching
	r.mu.Unlock()
	if !watching {
		return nil
	}
	return client.ForEachMaster(ctx, func(ctx context.Context, node *redis.Client) error {
		key, now, err := identify(ctx, node, true)
		if err != nil {
			return fmt.Errorf("read redis's run_id: %w", err)
		}
		if now.runID != "" {
			r.see(key, now)
		}
		return nil
	})
}

// see records what was just read of the server under key, and reports whether it is
// a change to heal from — then Healing holds and Changed is signaled.
func (r *Restarts) see(key string, now server) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	before, known := r.servers[key]
	r.servers[key] = now
	switch {
	case known && before.runID != "" && before.runID != now.runID:
		// The same server (or node) restarted, or another took the one server's place.
	case r.cluster && now.master && !before.master:
		// A node that was a replica, or unknown, serves slots as a master now.
	default:
		return false
	}
	r.changedLocked()
	return true
}

// changedLocked records a change to heal from; r.mu is held.
func (r *Restarts) changedLocked() {
	r.gen.Add(1)
	r.healing.Store(true)
	select {
	case r.changed <- struct{}{}:
	default:
	}
}

// Servers returns the run_id of each server watched, by its key (its node id on a
// cluster, "" for the one server): what a heal done now makes whole. It is empty
// until Watch.
func (r *Restarts) Servers() map[string]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string]string, len(r.servers))
	for key, s := range r.servers {
		if s.runID != "" {
			out[key] = s.runID
		}
	}
	return out
}

// Suspect says the servers' sale state may be stale although no change was seen —
// they were last healed under other run_ids (see sqlstore.Heals): Healing holds and
// Changed is signaled, as for a change seen.
func (r *Restarts) Suspect() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.changedLocked()
}

// Healing reports whether the server changed since the last Healed.
func (r *Restarts) Healing() bool { return r.healing.Load() }

// Changed is signaled when a change of server is first seen.
func (r *Restarts) Changed() <-chan struct{} { return r.changed }

// Generation returns a token of the changes seen so far; a heal takes one before it
// starts and hands it to Healed.
func (r *Restarts) Generation() uint64 { return r.gen.Load() }

// Healed says the sale state is repaired as of generation gen: grabs are taken again,
// unless the server changed again since gen (then another heal is due). It reports
// whether the heal stands.
func (r *Restarts) Healed(gen uint64) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.gen.Load() != gen {
		return false
	}
	r.healing.Store(false)
	return true
}
