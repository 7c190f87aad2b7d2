package redisstore

import (
	"context"
	_ "embed"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// unackedScript counts what the consumer group has not acknowledged of a stream; its
// contract is at the top of unacked.lua, and the count is unacked in prelude.lua.
//
//go:embed unacked.lua
var unackedSrc string
var unackedScript = newScript(unackedSrc)

// waiting is what the queue has not acknowledged of one stream.
type waiting struct {
	// pending were delivered and not acknowledged; undelivered wait after the group's
	// position (at least the cap asked for, when Redis cannot tell how many).
	pending, undelivered int64
	// oldest is the id of the oldest of them; "" when none.
	oldest string
}

// total is every entry not yet acknowledged.
func (w waiting) total() int64 { return w.pending + w.undelivered }

// pipeliner is a client that can pipeline: a UniversalClient, or a *redis.Tx under
// WATCH.
type pipeliner interface {
	Pipeline() redis.Pipeliner
}

// unackedOf asks the script about each of streams, limit being the cap (see
// unacked.lua), in one round trip. A stream that is missing waits for nothing; a
// reply of any other shape is an error.
func unackedOf(ctx context.Context, client pipeliner, group string, limit int64, streams []string) ([]waiting, error) {
	cmds := make([]*redis.Cmd, len(streams))
	p := client.Pipeline()
	for i, s := range streams {
		// EVAL, not EVALSHA: a pipeline cannot fall back when the script is not cached.
		cmds[i] = unackedScript.Eval(ctx, p, []string{s}, group, limit)
	}
	if _, err := p.Exec(ctx); err != nil {
		return nil, fmt.Errorf("count unacknowledged entries: %w", err)
	}
	out := make([]waiting, len(streams))
	for i, cmd := range cmds {
		vals, err := cmd.Slice()
		if err != nil || len(vals) != 3 {
			return nil, fmt.Errorf("count unacknowledged entries of %s: %v %v", streams[i], vals, err)
		}
		pending, ok1 := vals[0].(int64)
		undelivered, ok2 := vals[1].(int64)
		oldest, ok3 := vals[2].(string)
		if !ok1 || !ok2 || !ok3 {
			return nil, fmt.Errorf("count unacknowledged entries of %s: unexpected reply %v", streams[i], vals)
		}
		out[i] = waiting{pending: pending, undelivered: undelivered, oldest: oldest}
	}
	return out, nil
}
