package history

import (
	"cmp"
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
	case kReturn, kClose:
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
	case kSettled:
		s = s.release(slices.Collect(maps.Keys(s.pending))...)
		if s.free != in.units {
			return nil, fmt.Sprintf("the history leaves %d units free, the sale says %d remain", s.free, in.units)
		}
		return []sale{s}, ""
	}
	return nil, "unknown operation"
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

// linearizable checks the history against the model of a sale: every answer must
// be one a single sale, taking each operation at one moment between its call and
// its return, could have given. Answers lost to a fault are operations that may or
// may not have happened, until the order rows say.
func (c *checker) linearizable(timeout time.Duration) {
	ops := c.operations()
	if len(ops) == 0 {
		return
	}
	m := model{limit: max(c.h.Limit, 1), draw: c.h.Draw, told: map[int64]bool{}}
	for _, op := range ops {
		if in := op.Input.(input); in.kind == kAlready {
			m.told[in.user] = true
		}
	}
	init := sale{live: map[string]int64{}, pending: map[string]int64{}, units: map[string]int{}, passes: map[string]bool{},
		handed: map[int64]bool{}, left: map[int64]bool{}}.with(func(n *sale) { n.free = c.h.Stock })
	switch res, _ := porcupine.CheckOperationsVerbose(m.porcupine(init), ops, timeout); res {
	case porcupine.Ok:
	case porcupine.Unknown:
		c.add(LinearizabilityUndue, "%d operations not decided within %v", len(ops), timeout)
	default:
		c.explain(m, init, ops, timeout)
	}
}

// porcupine is the model as porcupine takes it, from init.
func (m model) porcupine(init sale) porcupine.Model {
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
	return nm.ToModel()
}

// explain names the first answer no linearization explains: the operation whose
// return ends the shortest prefix of the history (by return) that is not
// linearizable, operations still in flight then taken as may-or-may-not. It judges
// that operation in the states the longest partial linearization of the prefix
// reaches.
func (c *checker) explain(m model, init sale, ops []porcupine.Operation, timeout time.Duration) {
	byReturn := make([]int, len(ops))
	for i := range byReturn {
		byReturn[i] = i
	}
	// Among answers at one moment, the operations that change the sale come first:
	// one of them, not a read beside it, is the one that does not fit.
	observes := func(i int) bool {
		k := ops[i].Input.(input).kind
		return k == kAlready || k == kSoldOut || k == kSettled
	}
	slices.SortStableFunc(byReturn, func(a, b int) int {
		if ops[a].Return != ops[b].Return {
			return cmp.Compare(ops[a].Return, ops[b].Return)
		}
		return cmp.Compare(b2i(observes(a)), b2i(observes(b)))
	})
	prefix := func(k int) []porcupine.Operation {
		end := ops[byReturn[k]].Return
		var out []porcupine.Operation
		for _, op := range ops {
			switch in := op.Input.(input); {
			case op.Return <= end:
				out = append(out, op)
			case op.Call < end && in.kind != kAlready && in.kind != kSoldOut && in.kind != kSettled:
				// in flight at end: it may or may not have taken effect yet
				in.maybe = true
				op.Input, op.Return = in, never
				out = append(out, op)
			}
		}
		return out
	}
	pm := m.porcupine(init)
	lo, hi := 0, len(byReturn)-1
	for lo < hi {
		mid := (lo + hi) / 2
		if porcupine.CheckOperationsTimeout(pm, prefix(mid), timeout/8) == porcupine.Ok {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	k := lo
	culprit := ops[byReturn[k]]
	_, info := porcupine.CheckOperationsVerbose(pm, prefix(k), timeout/8)
	var longest []porcupine.Operation
	for _, part := range info.PartialLinearizationsOperations() {
		for _, p := range part {
			if len(p) > len(longest) && !slices.ContainsFunc(p, func(op porcupine.Operation) bool {
				return op.Input.(input).desc == culprit.Input.(input).desc
			}) {
				longest = p
			}
		}
	}
	states := []sale{init}
	for _, op := range longest {
		var next []sale
		for _, s := range states {
			n, _ := m.step(s, op.Input.(input))
			next = append(next, n...)
		}
		states = next
	}
	in := culprit.Input.(input)
	for _, s := range states {
		if _, why := m.step(s, in); why != "" {
			c.add(m.violationKind(s, in), "%s [%s, %s] fits no order of the %d operations before it: %s",
				in.desc, clock(culprit.Call), clock(culprit.Return), len(longest), why)
			return
		}
	}
	c.add(m.violationKind(init, in), "%s [%s, %s] fits no order of the operations before it", in.desc, clock(culprit.Call), clock(culprit.Return))
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
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
	if len(h.Requests) == 0 || slices.ContainsFunc(h.Requests, func(r Request) bool { return r.Call.IsZero() || r.Return.IsZero() }) {
		return nil // a history recorded without every time says nothing of order
	}
	start, end := int64(never), int64(0)
	for _, r := range h.Requests {
		start, end = min(start, r.Call.UnixNano()), max(end, r.Return.UnixNano())
	}
	// Every release is done by the time the settled stats were read; an
	// operation whose end is unknown ended before then too.
	settled := end
	if !h.Settled.IsZero() {
		settled = h.Settled.UnixNano()
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
		// Closed between the first cancel's call and the 200's return (or, with no
		// 200, some time before the end); its units back then too, unless Redis may
		// have been out of reach, when they go back later.
		k, call, ret := kClose, made[o.ID], settled-1
		if cancel, ok := c.cancelled(o.ID); ok {
			call, ret = max(call, cancel.Call.UnixNano()), cancel.Return.UnixNano()
			if !h.unsure(cancel) {
				k = kReturn
			}
		}
		add(input{kind: k, user: o.User, order: o.ID, desc: fmt.Sprintf("order %s of user %d %s", o.ID, o.User, o.Status)}, call, ret)
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
