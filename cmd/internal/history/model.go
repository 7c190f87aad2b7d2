package history

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
)

// The model of a sale the linearizability check (linear.go) runs the history
// against.

// kind is what one operation of the model does.
type kind int

const (
	kAccept  kind = iota // a unit reserved for an order: a 202, or an order a lost answer made
	kAlready             // already_purchased
	kSoldOut             // sold_out
	kEdit                // an edit answered 200
	kEditMay             // an edit whose answer was lost: applied or not
	kReturn              // a closed order's units back on sale, before its cancel's answer
	kClose               // an order closed; its units go back at some later moment
	kHand                // a draw's or a waitlist's unit handed to an entrant
	kSettled             // the remaining units read once the sale settled
)

// input is one operation of the model.
type input struct {
	kind     kind
	user     int64
	order    string
	units    int
	pass     string
	position int
	desc     string
	// maybe: the operation was in flight when the prefix checked ended; it may or
	// may not have taken effect.
	maybe bool
}

// sale is the model's state: the units free, the live orders (id → user), the
// closed orders whose units are not back yet (pending), the passes used, and a
// draw's or waitlist's progress. It is never changed in place.
//
// A pending order's units go back lazily: at the latest moment the history allows,
// when an operation needs them (a 202 with no other unit free, its user grabbing
// again) or the sale settles. Giving them back later never makes a sold_out or an
// already_purchased less possible, so this finds a linearization whenever one
// exists, without trying each moment for each.
type sale struct {
	free    int
	live    map[string]int64
	pending map[string]int64
	units   map[string]int
	passes  map[string]bool
	handed  map[int64]bool
	left    map[int64]bool
	lastPos int
	key     string
}

func (s sale) with(f func(*sale)) sale {
	n := s
	n.live, n.pending, n.units, n.passes = maps.Clone(s.live), maps.Clone(s.pending), maps.Clone(s.units), maps.Clone(s.passes)
	n.handed, n.left = maps.Clone(s.handed), maps.Clone(s.left)
	f(&n)
	n.key = fmt.Sprintf("%d|%v|%v|%v|%v|%v|%d", n.free, sortedIDs(n.live), sortedIDs(n.pending), sortedIDs(n.passes),
		sortedKeys(n.handed), sortedKeys(n.left), n.lastPos)
	return n
}

// held is what user holds: its live orders' units and its pending ones'.
func (s sale) held(user int64) int {
	n := 0
	for _, m := range []map[string]int64{s.live, s.pending} {
		for id, u := range m {
			if u == user {
				n += s.units[id]
			}
		}
	}
	return n
}

// release gives the units of the pending orders ids back.
func (s sale) release(ids ...string) sale {
	return s.with(func(n *sale) {
		for _, id := range ids {
			n.free += n.units[id]
			delete(n.pending, id)
			delete(n.units, id)
		}
	})
}

// releasing returns the states in which units pending go back so that user may be
// given units: its own pending orders first (the limit), then, if the units free
// are short, one branch per pending order that can make up a one-unit shortfall
// (a longer one takes them in id order). Which order goes back matters only to a
// user told already_purchased (it must still hold one then): the orders of the
// others are alike, so one of them stands for all.
func (s sale) releasing(user int64, units, limit int, told map[int64]bool) []sale {
	if s.held(user)+units > limit {
		var own []string
		for _, id := range slices.Sorted(maps.Keys(s.pending)) {
			if s.pending[id] == user {
				own = append(own, id)
			}
		}
		if len(own) > 0 {
			s = s.release(own...)
		}
	}
	ids := slices.Sorted(maps.Keys(s.pending))
	switch need := units - s.free; {
	case need <= 0 || len(ids) < need:
		return []sale{s}
	case need == 1:
		var out []sale
		alike := false
		for _, id := range ids {
			if u := s.pending[id]; !told[u] {
				if alike {
					continue
				}
				alike = true
			}
			out = append(out, s.release(id))
		}
		return out
	default:
		return []sale{s.release(ids[:need]...)}
	}
}

// model is a sale of one voucher with a per-user limit; draw says a user is handed
// a drawn unit at most once.
type model struct {
	limit int
	draw  bool
	// told are the users some grab answered already_purchased.
	told map[int64]bool
}

// step returns the states in leads to from s, or why it cannot happen there.
func (m model) step(s sale, in input) ([]sale, string) {
	if in.maybe {
		in.maybe = false
		next, _ := m.step(s, in)
		return append(next, s), ""
	}
	switch in.kind {
	case kAccept, kHand:
		return m.give(s, in)
	case kAlready:
		if s.held(in.user) < m.limit {
			return nil, fmt.Sprintf("user %d holds %d, limit %d", in.user, s.held(in.user), m.limit)
		}
		return []sale{s}, ""
	case kSoldOut:
		if s.free > 0 {
			return nil, fmt.Sprintf("free units: %d", s.free)
		}
		return []sale{s}, ""
	case kEdit, kEditMay:
		return edit(s, in)
	case kReturn, kClose:
		return closeOrder(s, in)
	case kSettled:
		s = s.release(slices.Collect(maps.Keys(s.pending))...)
		if s.free != in.units {
			return nil, fmt.Sprintf("the history leaves %d units free, the sale says %d remain", s.free, in.units)
		}
		return []sale{s}, ""
	}
	return nil, "unknown operation"
}

// give gives in's units to its user (a 202, or a draw's or waitlist's hand-on),
// pending units going back first where needed.
func (m model) give(s sale, in input) ([]sale, string) {
	var next []sale
	why := ""
	for _, b := range s.releasing(in.user, in.units, m.limit, m.told) {
		if w := m.admits(b, in); w != "" {
			why = cmp.Or(why, w)
			continue
		}
		next = append(next, b.with(func(n *sale) {
			n.free -= in.units
			n.live[in.order], n.units[in.order] = in.user, in.units
			if in.pass != "" {
				n.passes[in.pass] = true
			}
			if in.kind == kHand {
				n.handed[in.user], n.lastPos = true, in.position
			}
		}))
	}
	if len(next) == 0 {
		return nil, why
	}
	return next, ""
}

// edit adds or removes units (an edit whose answer was lost: or leaves them).
func edit(s sale, in input) ([]sale, string) {
	if short := -(s.free + in.units); short > 0 && len(s.pending) >= short {
		s = s.release(slices.Sorted(maps.Keys(s.pending))[:short]...)
	}
	if s.free+in.units < 0 {
		return nil, fmt.Sprintf("%d units free, the edit removes %d", s.free, -in.units)
	}
	next := []sale{s.with(func(n *sale) { n.free += in.units })}
	if in.kind == kEditMay {
		next = append(next, s)
	}
	return next, ""
}

// closeOrder closes a live order: its units back at once (kReturn) or pending.
func closeOrder(s sale, in input) ([]sale, string) {
	user, ok := s.live[in.order]
	if !ok {
		return nil, fmt.Sprintf("order %s is not live", in.order)
	}
	return []sale{s.with(func(n *sale) {
		delete(n.live, in.order)
		if in.kind == kClose {
			n.pending[in.order] = user
		} else {
			n.free += n.units[in.order]
			delete(n.units, in.order)
		}
		// a drawn unit given back is the draw's to hand on: its user is out
		if n.handed[user] {
			n.left[user] = true
		}
	})}, ""
}

// admits returns why s cannot give in's units to its user ("" when it can).
func (m model) admits(s sale, in input) string {
	if s.free < in.units {
		return fmt.Sprintf("free units: %d", s.free)
	}
	if h := s.held(in.user); h+in.units > m.limit {
		return fmt.Sprintf("user %d holds %d, limit %d", in.user, h, m.limit)
	}
	if in.pass != "" && s.passes[in.pass] {
		return fmt.Sprintf("pass %s already admitted an order", in.pass)
	}
	if in.kind == kHand {
		if m.draw && s.left[in.user] {
			return fmt.Sprintf("user %d gave back the unit the draw handed it", in.user)
		}
		if m.draw && s.handed[in.user] {
			return fmt.Sprintf("user %d was handed a unit already", in.user)
		}
		if in.position <= s.lastPos {
			return fmt.Sprintf("position %d after position %d", in.position, s.lastPos)
		}
	}
	return ""
}

// violationKind names what an operation that cannot be placed broke.
func (m model) violationKind(s sale, in input) string {
	switch in.kind {
	case kAccept:
		switch {
		case in.pass != "" && s.passes[in.pass]:
			return PassReused
		case s.free+len(s.pending) < in.units:
			return AcceptedWithNoUnit
		}
		return OverLimit
	case kHand:
		switch {
		case m.draw && (s.left[in.user] || s.handed[in.user]):
			return HandedToALeaver
		case in.position <= s.lastPos:
			return HandedOutOfOrder
		case s.free+len(s.pending) < in.units:
			return AcceptedWithNoUnit
		}
		return OverLimit
	case kAlready:
		return AlreadyWithoutOrder
	case kSoldOut:
		return SoldOutWhileFree
	case kSettled:
		return SettledDisagrees
	}
	return NotLinearizable
}
