package history

import (
	"fmt"
	"hash/fnv"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"
)

// Hand is a unit a draw or a waitlist handed to a user: an order no grab of theirs
// made, given to the entrant at Position of the published order sometime in
// [From, To] (the draw's run, the cancel that handed it on, the read that showed it).
type Hand struct {
	User     int64
	Position int
	OrderID  string
	From, To time.Time
}

// Interval is a stretch of time, e.g. one in which Redis was unreachable.
type Interval struct{ From, To time.Time }

// The kinds of Violation the linearizability check names.
const (
	SoldOutWhileFree     = "sold_out answered while a unit was free"
	AcceptedWithNoUnit   = "202 answered with no unit free"
	OverLimit            = "a user holds more than the per-user limit"
	PassReused           = "one pass admitted two orders"
	AlreadyWithoutOrder  = "already_purchased answered to a user holding no order"
	HandedToALeaver      = "a draw handed a unit to a user who had given theirs back"
	HandedOutOfOrder     = "a unit handed out of the published order"
	SettledDisagrees     = "the settled stock disagrees with the history"
	NotLinearizable      = "not linearizable"
	LinearizabilityUndue = "linearizability not decided in time"
)

// kind is what one operation of the model does.
type kind int

const (
	kAccept  kind = iota // a unit reserved for an order: a 202, or an order a lost answer made
	kAlready             // already_purchased
	kSoldOut             // sold_out
	kEdit                // an edit answered 200
	kEditMay             // an edit whose answer was lost: applied or not
	kReturn              // a closed order's units back on sale
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
}

// sale is the model's state: the units free, the live orders (id → user), the
// passes used, and a draw's or waitlist's progress. It is never changed in place.
type sale struct {
	free    int
	live    map[string]int64
	units   map[string]int
	passes  map[string]bool
	handed  map[int64]bool
	left    map[int64]bool
	lastPos int
	key     string
}

func (s sale) with(f func(*sale)) sale {
	n := s
	n.live, n.units, n.passes = maps.Clone(s.live), maps.Clone(s.units), maps.Clone(s.passes)
	n.handed, n.left = maps.Clone(s.handed), maps.Clone(s.left)
	f(&n)
	n.key = fmt.Sprintf("%d|%v|%v|%v|%v|%d", n.free, sortedIDs(n.live), sortedIDs(n.passes), sortedKeys(n.handed), sortedKeys(n.left), n.lastPos)
	return n
}

func (s sale) held(user int64) int {
	n := 0
	for id, u := range s.live {
		if u == user {
			n += s.units[id]
		}
	}
	return n
}

// model is a sale of one voucher with a per-user limit; draw says a user is handed
// a drawn unit at most once.
type model struct {
	limit int
	draw  bool
}

// why returns why in cannot happen in s ("" when it can) and the states it leads to.
func (m model) step(s sale, in input) ([]sale, string) {
	switch in.kind {
	case kAccept, kHand:
		if s.free < in.units {
			return nil, fmt.Sprintf("%d units free", s.free)
		}
		if h := s.held(in.user); h+in.units > m.limit {
			return nil, fmt.Sprintf("user %d holds %d, limit %d", in.user, h, m.limit)
		}
		if in.pass != "" && s.passes[in.pass] {
			return nil, fmt.Sprintf("pass %s already admitted an order", in.pass)
		}
		if in.kind == kHand {
			if m.draw && s.left[in.user] {
				return nil, fmt.Sprintf("user %d gave back the unit the draw handed it", in.user)
			}
			if m.draw && s.handed[in.user] {
				return nil, fmt.Sprintf("user %d was handed a unit already", in.user)
			}
			if in.position <= s.lastPos {
				return nil, fmt.Sprintf("position %d after position %d", in.position, s.lastPos)
			}
		}
		return []sale{s.with(func(n *sale) {
			n.free -= in.units
			n.live[in.order], n.units[in.order] = in.user, in.units
			if in.pass != "" {
				n.passes[in.pass] = true
			}
			if in.kind == kHand {
				n.handed[in.user], n.lastPos = true, in.position
			}
		})}, ""
	case kAlready:
		if s.held(in.user) < m.limit {
			return nil, fmt.Sprintf("user %d holds %d, limit %d", in.user, s.held(in.user), m.limit)
		}
		return []sale{s}, ""
	case kSoldOut:
		if s.free > 0 {
			return nil, fmt.Sprintf("%d units free", s.free)
		}
		return []sale{s}, ""
	case kEdit, kEditMay:
		if s.free+in.units < 0 {
			return nil, fmt.Sprintf("%d units free, the edit removes %d", s.free, -in.units)
		}
		next := []sale{s.with(func(n *sale) { n.free += in.units })}
		if in.kind == kEditMay {
			next = append(next, s)
		}
		return next, ""
	case kReturn:
		user, ok := s.live[in.order]
		if !ok {
			return nil, fmt.Sprintf("order %s is not live", in.order)
		}
		return []sale{s.with(func(n *sale) {
			n.free += n.units[in.order]
			delete(n.live, in.order)
			delete(n.units, in.order)
			if n.handed[user] {
				n.left[user] = true
			}
		})}, ""
	case kSettled:
		if s.free != in.units {
			return nil, fmt.Sprintf("the history leaves %d units free, the sale says %d remain", s.free, in.units)
		}
		return []sale{s}, ""
	}
	return nil, "unknown operation"
}

// violationKind names what an operation that cannot be placed broke.
func (m model) violationKind(s sale, in input) string {
	switch in.kind {
	case kAccept:
		switch {
		case in.pass != "" && s.passes[in.pass]:
			return PassReused
		case s.free < in.units:
			return AcceptedWithNoUnit
		}
		return OverLimit
	case kHand:
		switch {
		case m.draw && (s.left[in.user] || s.handed[in.user]):
			return HandedToALeaver
		case in.position <= s.lastPos:
			return HandedOutOfOrder
		case s.free < in.units:
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

// linearizable checks the history against the model of a sale: every answer must
// be one a single sale, taking each operation at one moment between its call and
// its return, could have given. Answers lost to a fault are operations that may or
// may not have happened, until the order rows say.
func (c *checker) linearizable(timeout time.Duration) {
	ops := c.operations()
	if len(ops) == 0 {
		return
	}
	m := model{limit: max(c.h.Limit, 1), draw: c.h.Draw}
	init := sale{live: map[string]int64{}, units: map[string]int{}, passes: map[string]bool{},
		handed: map[int64]bool{}, left: map[int64]bool{}}.with(func(n *sale) { n.free = c.h.Stock })
	nm := &porcupine.NondeterministicModel{
		Init: func() []any { return []any{init} },
		Step: func(state, in, _ any) []any {
			next, _ := m.step(state.(sale), in.(input))
			out := make([]any, len(next))
			for i, n := range next {
				out[i] = n
			}
			return out
		},
		Equal: func(a, b any) bool { return a.(sale).key == b.(sale).key },
		Hash: func(s any) uint64 {
			h := fnv.New64a()
			_, _ = h.Write([]byte(s.(sale).key))
			return h.Sum64()
		},
		DescribeOperation: func(in, _ any) string { return in.(input).desc },
		DescribeState:     func(s any) string { return s.(sale).key },
	}
	pm := nm.ToModel()
	res, info := porcupine.CheckOperationsVerbose(pm, ops, timeout)
	switch res {
	case porcupine.Ok:
		return
	case porcupine.Unknown:
		c.add(LinearizabilityUndue, "%d operations not decided within %v", len(ops), timeout)
		return
	}
	c.explain(m, init, ops, info)
}

// explain names the first operation no linearization could place: it replays the
// longest partial linearization porcupine found and judges, in the states it
// reaches, the unplaced operation that returned first.
func (c *checker) explain(m model, init sale, ops []porcupine.Operation, info porcupine.LinearizationInfo) {
	var longest []porcupine.Operation
	for _, part := range info.PartialLinearizationsOperations() {
		for _, p := range part {
			if len(p) > len(longest) {
				longest = p
			}
		}
	}
	states := []sale{init}
	placed := map[string]bool{}
	for _, op := range longest {
		in := op.Input.(input)
		placed[in.desc] = true
		var next []sale
		for _, s := range states {
			n, _ := m.step(s, in)
			next = append(next, n...)
		}
		states = next
	}
	var culprit *porcupine.Operation
	for i, op := range ops {
		if !placed[op.Input.(input).desc] && (culprit == nil || op.Return < culprit.Return) {
			culprit = &ops[i]
		}
	}
	if culprit == nil || len(states) == 0 {
		c.add(NotLinearizable, "no order of the %d operations explains the answers", len(ops))
		return
	}
	in := culprit.Input.(input)
	_, why := m.step(states[0], in)
	c.add(m.violationKind(states[0], in), "%s [%s, %s] cannot be placed after %d of %d operations: %s",
		in.desc, clock(culprit.Call), clock(culprit.Return), len(longest), len(ops), why)
}

func clock(ns int64) string {
	if ns >= never {
		return "end"
	}
	return time.Unix(0, ns).UTC().Format("15:04:05.000000")
}

// never is the return of an operation whose end is unknown.
const never = int64(1) << 62

// operations turns the history into the model's operations: the grabs that got an
// answer saying what happened, the edits, the orders a lost answer made (from their
// rows), the units handed by a draw or waitlist, the closed orders' returns, and the
// remaining units once settled.
func (c *checker) operations() []porcupine.Operation {
	h := c.h
	if !slices.ContainsFunc(h.Requests, func(r Request) bool { return !r.Call.IsZero() }) {
		return nil // a history recorded without times says nothing of order
	}
	start, end := int64(never), int64(0)
	for _, r := range h.Requests {
		start, end = min(start, r.Call.UnixNano()), max(end, r.Return.UnixNano())
	}
	settled := end
	if !h.Settled.IsZero() {
		settled = max(end, h.Settled.UnixNano())
	}
	var ops []porcupine.Operation
	add := func(in input, call, ret int64) {
		in.desc = fmt.Sprintf("#%d %s", len(ops), in.desc)
		ops = append(ops, porcupine.Operation{ClientId: int(in.user), Input: in, Call: call, Return: ret})
	}
	unitsOf := func(id string) int {
		if o, ok := c.rows[id]; ok && o.Quantity > 0 {
			return o.Quantity
		}
		return 1
	}
	made := map[string]int64{} // order → call of the operation that made it
	firstLost := map[int64]int64{}
	for _, r := range h.Requests {
		call, ret := r.Call.UnixNano(), r.Return.UnixNano()
		switch {
		case r.Op == OpGrab && r.Status == http.StatusAccepted:
			if _, dup := made[r.OrderID]; dup {
				continue // OrderIDReused says it
			}
			made[r.OrderID] = call
			add(input{kind: kAccept, user: r.User, order: r.OrderID, units: unitsOf(r.OrderID), pass: r.Pass,
				desc: fmt.Sprintf("grab by user %d answered 202 (order %s)", r.User, r.OrderID)}, call, ret)
		case r.Op == OpGrab && r.Code == "already_purchased":
			add(input{kind: kAlready, user: r.User, desc: fmt.Sprintf("grab by user %d answered already_purchased", r.User)}, call, ret)
		case r.Op == OpGrab && r.Code == "sold_out":
			add(input{kind: kSoldOut, user: r.User, desc: fmt.Sprintf("grab by user %d answered sold_out", r.User)}, call, ret)
		case r.Op == OpGrab && !r.answered():
			if _, ok := firstLost[r.User]; !ok {
				firstLost[r.User] = call
			}
		case r.Op == OpEdit && r.Status == http.StatusOK:
			add(input{kind: kEdit, units: r.Units, desc: fmt.Sprintf("edit of %+d units answered 200", r.Units)}, call, ret)
		case r.Op == OpEdit && !r.answered():
			add(input{kind: kEditMay, units: r.Units, desc: fmt.Sprintf("edit of %+d units, answer lost", r.Units)}, call, settled-1)
		}
	}
	for _, hd := range h.Hands {
		made[hd.OrderID] = hd.From.UnixNano()
		add(input{kind: kHand, user: hd.User, order: hd.OrderID, units: unitsOf(hd.OrderID), position: hd.Position,
			desc: fmt.Sprintf("unit handed to user %d at position %d (order %s)", hd.User, hd.Position, hd.OrderID)},
			hd.From.UnixNano(), hd.To.UnixNano())
	}
	for _, o := range h.Orders {
		if _, ok := made[o.ID]; ok {
			continue
		}
		// An order no answer announced: a grab whose answer was lost made it, after
		// that grab's call and before any answer named it.
		call, ret := start, settled-1
		if t, ok := firstLost[o.User]; ok {
			call = t
		}
		if t, ok := c.firstNamed(o); ok {
			ret = max(call, t)
		}
		made[o.ID] = call
		add(input{kind: kAccept, user: o.User, order: o.ID, units: unitsOf(o.ID),
			desc: fmt.Sprintf("order %s of user %d, made by a grab whose answer was lost", o.ID, o.User)}, call, ret)
	}
	for _, o := range h.Orders {
		if o.live() {
			continue
		}
		call, ret := made[o.ID], settled-1
		if cancel, ok := c.cancelled(o.ID); ok {
			call = max(call, cancel.Call.UnixNano())
			if !h.unsure(cancel) {
				ret = cancel.Return.UnixNano()
			}
		}
		add(input{kind: kReturn, user: o.User, order: o.ID, desc: fmt.Sprintf("order %s of user %d %s, its units back", o.ID, o.User, o.Status)}, call, ret)
	}
	if h.Stats.Queued == 0 && h.Stats.Pending == 0 && h.Stats.Stock > 0 {
		add(input{kind: kSettled, units: h.Stats.Remaining, desc: fmt.Sprintf("settled with %d remaining", h.Stats.Remaining)}, settled, settled)
	}
	return ops
}

// firstNamed returns when an answer first named o to its user: an
// already_purchased or a list.
func (c *checker) firstNamed(o Order) (int64, bool) {
	for _, r := range c.h.Requests {
		if r.User == o.User && r.answered() && (r.OrderID == o.ID && r.Op == OpGrab || slices.Contains(r.Listed, o.ID)) {
			return r.Return.UnixNano(), true
		}
	}
	return 0, false
}

// cancelled returns the span of order id's cancels, from the first one's call to
// the return of the first answered 200, if one was.
func (c *checker) cancelled(id string) (Request, bool) {
	var first time.Time
	for _, r := range c.h.Requests {
		if r.Op != OpCancel || r.OrderID != id {
			continue
		}
		if first.IsZero() || r.Call.Before(first) {
			first = r.Call
		}
		if r.Status == http.StatusOK {
			return Request{Call: first, Return: r.Return}, true
		}
	}
	return Request{}, false
}

// unsure reports whether r ran while Redis may have been unreachable: a cancel then
// commits, and its units go back later (ReleaseClosed), not before its answer.
func (h History) unsure(r Request) bool {
	return slices.ContainsFunc(h.Unsure, func(i Interval) bool {
		return r.Call.Before(i.To) && i.From.Before(r.Return)
	})
}

func sortedIDs[V any](m map[string]V) string {
	return strings.Join(slices.Sorted(maps.Keys(m)), ",")
}
