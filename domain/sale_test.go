package domain_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/seckill/seckill/domain"
)

// t0 opens the sales of these tests; it has a sub-millisecond part, as a stored time
// may.
var t0 = time.Date(2026, 1, 1, 12, 0, 0, 400_000, time.UTC)

// open is a sale judged in TestSaleJudge*: 10 units, 2 a user, an hour long from t0.
func open() domain.Sale {
	return domain.Sale{BeginsAt: t0, EndsAt: t0.Add(time.Hour), PerUserLimit: 2, Remaining: 10}
}

// grabAt is user 1's grab of qty units at at.
func grabAt(at time.Time, qty int) domain.Reservation {
	return domain.Reservation{OrderID: "o1", VoucherID: 1, UserID: 1, Quantity: qty, At: at}
}

// wantAnswer fails t unless err is the answer want: nil, or an error errors.Is
// matches, naming held for domain.ErrAlreadyPurchased and the quantity for
// domain.ErrInvalid.
func wantAnswer(t *testing.T, what string, err, want error, held domain.OrderID) {
	t.Helper()
	if want == nil {
		if err != nil {
			t.Fatalf("%s = %v, want nil (taken)", what, err)
		}
		return
	}
	if !errors.Is(err, want) {
		t.Fatalf("%s = %v, want %v", what, err, want)
	}
	var purchased *domain.AlreadyPurchasedError
	if errors.Is(want, domain.ErrAlreadyPurchased) && (!errors.As(err, &purchased) || purchased.OrderID != held) {
		t.Fatalf("%s = %v, want an *AlreadyPurchasedError naming %q", what, err, held)
	}
	var invalid *domain.ValidationError
	if errors.Is(want, domain.ErrInvalid) && (!errors.As(err, &invalid) || invalid.Field != "quantity") {
		t.Fatalf("%s = %v, want a *ValidationError on quantity", what, err)
	}
}

func TestSaleJudgeEachRule(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		sale func(*domain.Sale)
		at   time.Time
		qty  int
		held domain.OrderID
		want error
	}{
		{"taken", nil, t0.Add(time.Minute), 1, "", nil},
		{"taken at the opening instant", nil, t0, 1, "", nil},
		{"taken in the opening millisecond, before the opening instant", nil, t0.Add(-300 * time.Microsecond), 1, "", nil},
		{"taken at the last millisecond", nil, t0.Add(time.Hour - time.Millisecond), 1, "", nil},
		{"taken up to the per-user limit", nil, t0, 2, "", nil},
		{"taken up to the last unit", func(s *domain.Sale) { s.Remaining = 2 }, t0, 2, "", nil},
		{"paused", func(s *domain.Sale) { s.Paused = true }, t0, 1, "", domain.ErrPaused},
		{"not started a millisecond before the opening", nil, t0.Add(-time.Millisecond), 1, "", domain.ErrNotStarted},
		{"ended at the closing instant", nil, t0.Add(time.Hour), 1, "", domain.ErrEnded},
		{"ended in the closing millisecond", nil, t0.Add(time.Hour - 300*time.Microsecond), 1, "", domain.ErrEnded},
		{"ended long after", nil, t0.Add(48 * time.Hour), 1, "", domain.ErrEnded},
		{"over the per-user limit", nil, t0, 3, "", domain.ErrInvalid},
		{"already held", nil, t0, 1, "o0", domain.ErrAlreadyPurchased},
		{"sold out", func(s *domain.Sale) { s.Remaining = 0 }, t0, 1, "", domain.ErrSoldOut},
		{"sold out below the quantity", func(s *domain.Sale) { s.Remaining = 1 }, t0, 2, "", domain.ErrSoldOut},
		{"sold out below zero (more sold than stock)", func(s *domain.Sale) { s.Remaining = -3 }, t0, 1, "", domain.ErrSoldOut},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := open()
			if tc.sale != nil {
				tc.sale(&s)
			}
			err := s.Judge(grabAt(tc.at, tc.qty), tc.held)
			wantAnswer(t, "Judge", err, tc.want, tc.held)
		})
	}
}

// TestSaleJudgeGates: a proof of work is asked only where the sale asks for one, and a
// waiting room admits only a grab with an outstanding pass still valid at its time.
func TestSaleJudgeGates(t *testing.T) {
	t.Parallel()
	at := t0.Add(time.Minute)
	pow := func(s *domain.Sale) { s.Challenge = domain.ChallengePow }
	room := func(s *domain.Sale) { s.Admission = domain.AdmissionWaitingRoom; s.PassOutstanding = true }
	proven := func(r *domain.Reservation) { r.Proven = true }
	pass := func(expires time.Time) func(*domain.Reservation) {
		return func(r *domain.Reservation) { r.Pass = expires }
	}
	tests := []struct {
		name string
		sale func(*domain.Sale)
		r    func(*domain.Reservation)
		want error
	}{
		{"first come asks nothing", nil, nil, nil},
		{"first come takes a grab with a pass and a proof", nil, func(r *domain.Reservation) { r.Pass = at.Add(time.Minute); r.Proven = true }, nil},
		{"none spelled out asks nothing", func(s *domain.Sale) { s.Challenge = domain.ChallengeNone; s.Admission = domain.AdmissionFirstCome }, nil, nil},
		{"a draw's grab before the draw is over", func(s *domain.Sale) { s.Admission = domain.AdmissionDraw }, nil, domain.ErrNotStarted},
		{"a draw's first-come grab after the draw", func(s *domain.Sale) { s.Admission = domain.AdmissionDraw; s.Drawn = true }, nil, nil},
		{"proof of work without a proof", pow, nil, domain.ErrChallengeRequired},
		{"proof of work proven", pow, proven, nil},
		{"waiting room without a pass", room, nil, domain.ErrQueueRequired},
		{"waiting room with a pass", room, pass(at.Add(time.Minute)), nil},
		{"waiting room with a pass valid for a millisecond more", room, pass(at.Add(time.Millisecond)), nil},
		{"waiting room with a pass expiring at the grab", room, pass(at), domain.ErrQueueRequired},
		{"waiting room with a pass expiring within the grab's millisecond", room, pass(at.Add(300 * time.Microsecond)), domain.ErrQueueRequired},
		{"waiting room with an expired pass", room, pass(at.Add(-time.Minute)), domain.ErrQueueRequired},
		{"waiting room with a pass the stock does not hold (used, another's)", func(s *domain.Sale) { room(s); s.PassOutstanding = false }, pass(at.Add(time.Minute)), domain.ErrQueueRequired},
		{"the challenge before the waiting room", func(s *domain.Sale) { pow(s); room(s) }, pass(at.Add(time.Minute)), domain.ErrChallengeRequired},
		{"both gates passed", func(s *domain.Sale) { pow(s); room(s) }, func(r *domain.Reservation) { r.Pass = at.Add(time.Minute); r.Proven = true }, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, r := open(), grabAt(at, 1)
			if tc.sale != nil {
				tc.sale(&s)
			}
			if tc.r != nil {
				tc.r(&r)
			}
			wantAnswer(t, "Judge", s.Judge(r, ""), tc.want, "")
		})
	}
}

// TestSaleJudgeRuleOrder breaks every combination of the rules at once and checks
// that the first rule broken, in Judge's order, is the answer.
func TestSaleJudgeRuleOrder(t *testing.T) {
	t.Parallel()
	type grab struct {
		sale domain.Sale
		r    domain.Reservation
		held domain.OrderID
	}
	// The rules in Judge's order, each with how to break it. The window is broken
	// either way: before the opening, or after the close.
	type rule struct {
		name   string
		answer error
		brk    func(*grab)
	}
	rules := func(late bool) []rule {
		window := rule{"not started", domain.ErrNotStarted, func(g *grab) { g.r.At = t0.Add(-time.Minute) }}
		if late {
			window = rule{"ended", domain.ErrEnded, func(g *grab) { g.r.At = t0.Add(2 * time.Hour) }}
		}
		return []rule{
			{"challenged", domain.ErrChallengeRequired, func(g *grab) { g.sale.Challenge = domain.ChallengePow }},
			{"queued", domain.ErrQueueRequired, func(g *grab) { g.sale.Admission = domain.AdmissionWaitingRoom }},
			{"paused", domain.ErrPaused, func(g *grab) { g.sale.Paused = true }},
			window,
			{"over the limit", domain.ErrInvalid, func(g *grab) { g.r.Quantity = 3 }},
			{"held", domain.ErrAlreadyPurchased, func(g *grab) { g.held = "o0" }},
			{"sold out", domain.ErrSoldOut, func(g *grab) { g.sale.Remaining = 0 }},
		}
	}
	for _, late := range []bool{false, true} {
		rs := rules(late)
		for set := 1; set < 1<<len(rs); set++ {
			g := grab{sale: open(), r: grabAt(t0.Add(time.Minute), 1)}
			var broken []string
			var want error
			for i, ru := range rs {
				if set&(1<<i) == 0 {
					continue
				}
				ru.brk(&g)
				broken = append(broken, ru.name)
				if want == nil {
					want = ru.answer
				}
			}
			t.Run(fmt.Sprint(broken), func(t *testing.T) {
				wantAnswer(t, "Judge", g.sale.Judge(g.r, g.held), want, g.held)
			})
		}
	}
}

// A voucher's state: ended, upcoming, paused, sold_out, live — the first that holds
// wins — with the window judged to the millisecond, as a grab is.
func TestVoucherState(t *testing.T) {
	t.Parallel()
	v := domain.Voucher{BeginsAt: t0, EndsAt: t0.Add(time.Hour)}
	paused := v
	paused.Paused = true
	tests := []struct {
		name      string
		v         domain.Voucher
		at        time.Time
		remaining int
		want      domain.SaleState
	}{
		{"live", v, t0.Add(time.Minute), 3, domain.StateLive},
		{"sold out", v, t0.Add(time.Minute), 0, domain.StateSoldOut},
		{"paused, sold out", paused, t0.Add(time.Minute), 0, domain.StatePaused},
		{"upcoming, paused", paused, t0.Add(-time.Minute), 0, domain.StateUpcoming},
		{"ended, paused and sold out", paused, t0.Add(2 * time.Hour), 0, domain.StateEnded},
		{"ended at ends_at", v, t0.Add(time.Hour), 3, domain.StateEnded},
		// t0 has a sub-millisecond part: within t0's millisecond the sale has begun,
		// as Judge takes a grab there.
		{"begun within begins_at's millisecond", v, t0.Truncate(time.Millisecond), 3, domain.StateLive},
		{"upcoming a millisecond before", v, t0.Truncate(time.Millisecond).Add(-time.Nanosecond), 3, domain.StateUpcoming},
	}
	for _, tc := range tests {
		if got := tc.v.State(tc.at, tc.remaining); got != tc.want {
			t.Errorf("%s: State = %s, want %s", tc.name, got, tc.want)
		}
		// Live exactly when a grab at the same moment passes the window and the pause.
		sale := domain.Sale{Paused: tc.v.Paused, BeginsAt: tc.v.BeginsAt, EndsAt: tc.v.EndsAt, PerUserLimit: 1, Remaining: tc.remaining}
		taken := sale.Judge(grabAt(tc.at, 1), "") == nil
		if live := tc.v.State(tc.at, tc.remaining) == domain.StateLive; live != taken {
			t.Errorf("%s: live = %v, but a grab then is taken = %v", tc.name, live, taken)
		}
	}
}
