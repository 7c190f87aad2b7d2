package redisstore

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Backlog is the work the fulfillment workers have not finished, across every voucher
// the queue knows.
type Backlog struct {
	// Unacked counts the reservations not yet acknowledged: delivered and pending, or
	// not yet delivered.
	Unacked int64
	// Oldest is when the oldest of them was appended (its entry id's time); zero when
	// there are none.
	Oldest time.Time
}

// backlogCap bounds the undelivered entries Backlog counts one by one in a stream
// whose group's lag Redis cannot tell (see unacked in prelude.lua).
const backlogCap = 10000

// Backlog measures the queue's unfinished work for monitoring: for each stream the
// queue reads, what unacked.lua counts (the one definition of entries waiting, in
// prelude.lua), all in one pipelined round trip. Its cost is bounded by the number of
// vouchers, not by the backlog's length — but for a stream whose group's lag Redis
// cannot tell, whose undelivered entries are counted up to backlogCap.
func (q *Queue) Backlog(ctx context.Context) (Backlog, error) {
	ids, err := q.vouchers(ctx)
	if err != nil || len(ids) == 0 {
		return Backlog{}, err
	}
	streams := make([]string, len(ids))
	for i, id := range ids {
		streams[i] = q.keys.Stream(id)
	}
	ws, err := unackedOf(ctx, q.client, q.group, backlogCap, streams)
	if err != nil {
		return Backlog{}, fmt.Errorf("measure backlog: %w", err)
	}
	var b Backlog
	var oldest int64 // ms; 0: none
	for _, w := range ws {
		b.Unacked += w.total()
		if ms := entryMillis(w.oldest); ms > 0 && (oldest == 0 || ms < oldest) {
			oldest = ms
		}
	}
	if oldest > 0 {
		b.Oldest = time.UnixMilli(oldest)
	}
	return b, nil
}

// entryMillis is the time part of a stream entry id ("<ms>-<seq>"), 0 when malformed.
func entryMillis(id string) int64 {
	ms, _, _ := strings.Cut(id, "-")
	n, err := strconv.ParseInt(ms, 10, 64)
	if err != nil {
		return 0
	}
	return n
}
