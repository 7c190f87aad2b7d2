package redisstore

import (
	"fmt"
	"strconv"
	"strings"
)

// streamID is a stream entry id, milliseconds and sequence.
type streamID struct{ ms, seq uint64 }

// parseStreamID reads "ms-seq", or "ms" alone as "ms-0", as Redis reads an id given to
// XGROUP CREATE: the embedded server reports a group's position as it was given.
func parseStreamID(s string) (streamID, error) {
	msPart, seqPart, ok := strings.Cut(s, "-")
	if !ok {
		seqPart = "0"
	}
	ms, err1 := strconv.ParseUint(msPart, 10, 64)
	seq, err2 := strconv.ParseUint(seqPart, 10, 64)
	if err1 != nil || err2 != nil {
		return streamID{}, fmt.Errorf("malformed stream id %q", s)
	}
	return streamID{ms, seq}, nil
}

// next returns the smallest id after id.
func (id streamID) next() streamID {
	if id.seq == ^uint64(0) {
		return streamID{id.ms + 1, 0}
	}
	return streamID{id.ms, id.seq + 1}
}

func (id streamID) less(o streamID) bool {
	return id.ms < o.ms || id.ms == o.ms && id.seq < o.seq
}

func (id streamID) String() string {
	return strconv.FormatUint(id.ms, 10) + "-" + strconv.FormatUint(id.seq, 10)
}
