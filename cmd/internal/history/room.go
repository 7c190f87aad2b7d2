package history

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Room is the record of a waiting room's sale: the order its published shuffle
// makes, the places its users read at the end, and the passes outstanding sampled
// while it ran.
type Room struct {
	// Published is the order anyone recomputes from the published seed and the early
	// joiners (domain.Shuffle): the user at index i must read position i+1.
	Published []int64
	// Places are the places users read once the sale settled.
	Places []Place
	// Window is the room's queue_window; Outstanding the passes outstanding at each
	// sample taken while it ran.
	Window      int
	Outstanding []int
}

// Place is what one user read of its place.
type Place struct {
	User     int64
	Position int
	Admitted bool
	SoldOut  bool
}

// The kinds of Violation a Room can show.
const (
	PositionNotPublished = "position not where the published shuffle puts the user"
	PositionTwice        = "one position for two users"
	AdmittedOutOfOrder   = "admitted out of the published order"
	WindowExceeded       = "more passes outstanding than the window"
	AdmittedAfterSoldOut = "admitted behind a user told sold_out"
)

// CheckRoom returns an error listing every way r broke the waiting room's promises,
// or nil: every early joiner reads the position the published shuffle gives it, no
// two users share a position, users were let in from the front of that order only
// (nobody admitted behind one still waiting, and nobody behind one told sold_out),
// and the passes outstanding never exceeded the window.
func CheckRoom(r Room) error {
	var out []string
	add := func(kind, format string, args ...any) {
		out = append(out, Violation{Kind: kind, Detail: fmt.Sprintf(format, args...)}.String())
	}
	published := make(map[int64]int, len(r.Published))
	for i, u := range r.Published {
		published[u] = i + 1
	}
	places := slices.Clone(r.Places)
	slices.SortFunc(places, func(a, b Place) int { return a.Position - b.Position })
	byPosition := map[int]int64{}
	for _, p := range places {
		if want, ok := published[p.User]; ok && p.Position != want {
			add(PositionNotPublished, "user %d reads position %d, the published shuffle puts it at %d", p.User, p.Position, want)
		}
		if u, seen := byPosition[p.Position]; seen {
			add(PositionTwice, "users %d and %d both read position %d", u, p.User, p.Position)
		}
		byPosition[p.Position] = p.User
	}
	// Admitted from the front: once a user at some position waits (not admitted),
	// no one behind it may have been let in.
	var waiting *Place
	for i, p := range places {
		switch {
		case !p.Admitted && waiting == nil:
			waiting = &places[i]
		case p.Admitted && waiting != nil:
			kind := AdmittedOutOfOrder
			if waiting.SoldOut {
				kind = AdmittedAfterSoldOut
			}
			add(kind, "user %d at position %d was let in, user %d at position %d waits", p.User, p.Position, waiting.User, waiting.Position)
		}
	}
	for i, n := range r.Outstanding {
		if n > r.Window {
			add(WindowExceeded, "sample %d: %d passes outstanding, window %d", i, n, r.Window)
		}
	}
	if len(out) == 0 {
		return nil
	}
	return errors.New(strings.Join(out, "\n"))
}
