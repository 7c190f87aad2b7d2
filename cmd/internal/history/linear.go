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
	res, info := porcupine.CheckOperationsVerbose(pm, prefix(k), timeout/8)
	note := ""
	if res == porcupine.Unknown {
		note = " (the search ran out of time here: the first suspect, not a proof)"
	}
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
			c.add(m.violationKind(s, in), "%s [%s, %s] fits no order of the %d operations before it: %s%s",
				in.desc, clock(culprit.Call), clock(culprit.Return), len(longest), why, note)
			return
		}
	}
	c.add(m.violationKind(init, in), "%s [%s, %s] fits no order of the operations before it%s", in.desc, clock(culprit.Call), clock(culprit.Return), note)
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
	b := &builder{c: c, start: never, made: map[string]int64{}, firstLost: map[int64]int64{}}
	end := int64(0)
	for _, r := range h.Requests {
		b.start, end = min(b.start, r.Call.UnixNano()), max(end, r.Return.UnixNano())
	}
	// Every release is done by the time the settled stats were read; an
	// operation whose end is unknown ended before then too.
	b.settled = end
	if !h.Settled.IsZero() {
		b.settled = h.Settled.UnixNano()
	}
	for _, r := range h.Requests {
		b.request(r)
	}
	for _, hd := range h.Hands {
		b.made[hd.OrderID] = hd.From.UnixNano()
		b.add(input{kind: kHand, user: hd.User, order: hd.OrderID, units: b.unitsOf(hd.OrderID), position: hd.Position,
			desc: fmt.Sprintf("unit handed to user %d at position %d (order %s)", hd.User, hd.Position, hd.OrderID)},
			hd.From.UnixNano(), hd.To.UnixNano())
	}
	for _, o := range h.Orders {
		b.unannounced(o)
	}
	for _, o := range h.Orders {
		b.closed(o)
	}
	if h.Stats.Queued == 0 && h.Stats.Pending == 0 && h.Stats.Stock > 0 {
		b.add(input{kind: kSettled, units: h.Stats.Remaining, desc: fmt.Sprintf("settled with %d remaining", h.Stats.Remaining)}, b.settled, b.settled)
	}
	return b.ops
}

// builder gathers a history's operations: made is when the operation that made
// each order was called, firstLost each user's first grab whose answer was lost.
type builder struct {
	c              *checker
	start, settled int64
	ops            []porcupine.Operation
	made           map[string]int64
	firstLost      map[int64]int64
}

func (b *builder) add(in input, call, ret int64) {
	in.desc = fmt.Sprintf("#%d %s", len(b.ops), in.desc)
	b.ops = append(b.ops, porcupine.Operation{ClientId: int(in.user), Input: in, Call: call, Return: ret})
}

func (b *builder) unitsOf(id string) int {
	if o, ok := b.c.rows[id]; ok && o.Quantity > 0 {
		return o.Quantity
	}
	return 1
}

// request adds what one request says: a grab's answer, an edit.
func (b *builder) request(r Request) {
	call, ret := r.Call.UnixNano(), r.Return.UnixNano()
	switch {
	case r.Op == OpGrab && r.Status == http.StatusAccepted:
		if _, dup := b.made[r.OrderID]; dup {
			return // OrderIDReused says it
		}
		b.made[r.OrderID] = call
		b.add(input{kind: kAccept, user: r.User, order: r.OrderID, units: b.unitsOf(r.OrderID), pass: r.Pass,
			desc: fmt.Sprintf("grab by user %d answered 202 (order %s)", r.User, r.OrderID)}, call, ret)
	case r.Op == OpGrab && r.Code == "already_purchased":
		b.add(input{kind: kAlready, user: r.User, desc: fmt.Sprintf("grab by user %d answered already_purchased", r.User)}, call, ret)
	case r.Op == OpGrab && r.Code == "sold_out":
		b.add(input{kind: kSoldOut, user: r.User, desc: fmt.Sprintf("grab by user %d answered sold_out", r.User)}, call, ret)
	case r.Op == OpGrab && !r.answered():
		if _, ok := b.firstLost[r.User]; !ok {
			b.firstLost[r.User] = call
		}
	case r.Op == OpEdit && r.Status == http.StatusOK:
		b.add(input{kind: kEdit, units: r.Units, desc: fmt.Sprintf("edit of %+d units answered 200", r.Units)}, call, ret)
	case r.Op == OpEdit && !r.answered():
		b.add(input{kind: kEditMay, units: r.Units, desc: fmt.Sprintf("edit of %+d units, answer lost", r.Units)}, call, b.settled-1)
	}
}

// unannounced adds an order no answer announced: a grab whose answer was lost made
// it, after that grab's call and before any answer named it.
func (b *builder) unannounced(o Order) {
	if _, ok := b.made[o.ID]; ok {
		return
	}
	call, ret := b.start, b.settled-1
	if t, ok := b.firstLost[o.User]; ok {
		call = t
	}
	if t, ok := b.c.firstNamed(o); ok {
		ret = max(call, t)
	}
	b.made[o.ID] = call
	b.add(input{kind: kAccept, user: o.User, order: o.ID, units: b.unitsOf(o.ID),
		desc: fmt.Sprintf("order %s of user %d, made by a grab whose answer was lost", o.ID, o.User)}, call, ret)
}

// closed adds a closed order: closed between the first cancel's call and the
// 200's return (or, with no 200, some time before the end); its units back then
// too, unless Redis may have been out of reach, when they go back later.
func (b *builder) closed(o Order) {
	if o.live() {
		return
	}
	k, call, ret := kClose, b.made[o.ID], b.settled-1
	if cancel, ok := b.c.cancelled(o.ID); ok {
		call, ret = max(call, cancel.Call.UnixNano()), cancel.Return.UnixNano()
		if !b.c.h.unsure(cancel) {
			k = kReturn
		}
	}
	b.add(input{kind: k, user: o.User, order: o.ID, desc: fmt.Sprintf("order %s of user %d %s", o.ID, o.User, o.Status)}, call, ret)
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
