package application_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seckill/seckill/adapters/memory"
	"github.com/seckill/seckill/application"
	"github.com/seckill/seckill/domain"
)

// passKey signs the passes of these tests.
var passKey = application.PassKey("a pass key of the tests, 32 bytes")

// gateFixture is a grab path over a memory stock holding voucher 1, sold with the
// given admission and challenge, at t0 + 1 minute.
type gateFixture struct {
	stock *memory.Stock
	clock *memory.Clock
	grab  *application.GrabVoucher
}

func newGateFixture(t *testing.T, admission domain.Admission, challenge domain.ChallengeKind, proofs application.ProofVerifier) gateFixture {
	t.Helper()
	stock := memory.NewStock()
	clock := memory.NewClock(t0.Add(time.Minute))
	stock.Clock = clock
	v := window
	v.ID, v.Admission, v.Challenge = 1, admission, challenge
	if _, err := stock.Warm(context.Background(), v); err != nil {
		t.Fatal(err)
	}
	return gateFixture{stock: stock, clock: clock, grab: application.NewGrabVoucher(stock, clock, &memory.OrderIDs{}, nil,
		application.NewBuyerGate(nil, clock, application.GateOptions{SoldOutTTL: time.Second, PassKey: passKey, Proofs: proofs}), application.GrabOptions{})}
}

// pass issues user's pass of voucher, as the waiting room does, and returns its token.
func (f gateFixture) pass(voucher domain.VoucherID, user domain.UserID, key []byte) string {
	p := domain.Pass{Voucher: voucher, User: user, Expires: f.clock.Now().Add(domain.PassLifetime)}
	f.stock.IssuePass(p)
	return domain.SignPass(key, p)
}

func TestGrabVoucherPass(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tests := []struct {
		name      string
		admission domain.Admission
		// token returns the pass user 7 sends.
		token func(f gateFixture) string
		// later moves the clock before the grab.
		later time.Duration
		want  error
		// judged: the grab reached the stock (a pass refused by its signature does not).
		judged bool
	}{
		{"a waiting room without a pass", domain.AdmissionWaitingRoom, func(gateFixture) string { return "" }, 0, domain.ErrQueueRequired, true},
		{"a waiting room with the user's pass", domain.AdmissionWaitingRoom, func(f gateFixture) string { return f.pass(1, 7, passKey) }, 0, nil, true},
		{"a waiting room with a pass in its last millisecond", domain.AdmissionWaitingRoom, func(f gateFixture) string { return f.pass(1, 7, passKey) }, domain.PassLifetime - time.Millisecond, nil, true},
		{"an expired pass", domain.AdmissionWaitingRoom, func(f gateFixture) string { return f.pass(1, 7, passKey) }, domain.PassLifetime, domain.ErrQueueRequired, false},
		{"a forged pass", domain.AdmissionWaitingRoom, func(f gateFixture) string { return f.pass(1, 7, []byte("another key")) }, 0, domain.ErrQueueRequired, false},
		{"another user's pass", domain.AdmissionWaitingRoom, func(f gateFixture) string { return f.pass(1, 8, passKey) }, 0, domain.ErrQueueRequired, false},
		{"another voucher's pass", domain.AdmissionWaitingRoom, func(f gateFixture) string { return f.pass(2, 7, passKey) }, 0, domain.ErrQueueRequired, false},
		{"a malformed pass", domain.AdmissionWaitingRoom, func(gateFixture) string { return "not a pass" }, 0, domain.ErrQueueRequired, false},
		{"first come without a pass", domain.AdmissionFirstCome, func(gateFixture) string { return "" }, 0, nil, true},
		{"first come with a pass", domain.AdmissionFirstCome, func(f gateFixture) string { return f.pass(1, 7, passKey) }, 0, nil, true},
		{"first come with a forged pass", domain.AdmissionFirstCome, func(f gateFixture) string { return f.pass(1, 7, []byte("another key")) }, 0, domain.ErrQueueRequired, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newGateFixture(t, tc.admission, domain.ChallengeNone, nil)
			token := tc.token(f)
			f.clock.Set(f.clock.Now().Add(tc.later))
			_, err := f.grab.Handle(ctx, application.GrabVoucherCmd{VoucherID: 1, UserID: 7, Quantity: 1, Pass: token})
			if !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
				t.Fatalf("grab = %v, want %v", err, tc.want)
			}
			if judged := f.stock.ReserveCalls() > 0; judged != tc.judged {
				t.Fatalf("the grab reached the stock: %v, want %v", judged, tc.judged)
			}
			if tc.want != nil && len(f.stock.Reserved) != 0 {
				t.Fatalf("a refused grab reserved %v", f.stock.Reserved)
			}
		})
	}
}

func TestGrabVoucherPassAdmitsOneOrder(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newGateFixture(t, domain.AdmissionWaitingRoom, domain.ChallengeNone, nil)
	token := f.pass(1, 7, passKey)
	r, err := f.grab.Handle(ctx, application.GrabVoucherCmd{VoucherID: 1, UserID: 7, Quantity: 1, Pass: token})
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := f.stock.Release(ctx, domain.Order{ID: r.OrderID, VoucherID: 1, UserID: 7, Quantity: 1}); !ok || err != nil {
		t.Fatalf("release: %v %v", ok, err)
	}
	// The order is gone, the pass used: it admits no second one.
	if _, err := f.grab.Handle(ctx, application.GrabVoucherCmd{VoucherID: 1, UserID: 7, Quantity: 1, Pass: token}); !errors.Is(err, domain.ErrQueueRequired) {
		t.Fatalf("a replayed pass = %v, want %v", err, domain.ErrQueueRequired)
	}
}

// proofs is a ProofVerifier of the tests: "good" is a valid proof, anything else not.
type proofs struct{ calls atomic.Int64 }

func (p *proofs) Handle(_ context.Context, cmd application.VerifyProofCmd) error {
	p.calls.Add(1)
	if cmd.Proof != "good" {
		return domain.ErrChallengeRequired
	}
	return nil
}

func TestGrabVoucherProof(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tests := []struct {
		name       string
		challenge  domain.ChallengeKind
		proof      string
		noVerifier bool
		want       error
		// verified: the verifier was asked; judged: the grab reached the stock.
		verified, judged bool
	}{
		{"proof of work without a proof", domain.ChallengePow, "", false, domain.ErrChallengeRequired, false, true},
		{"proof of work with a valid proof", domain.ChallengePow, "good", false, nil, true, true},
		{"proof of work with a bad proof", domain.ChallengePow, "bad", false, domain.ErrChallengeRequired, true, false},
		{"proof of work with no verifier configured", domain.ChallengePow, "good", true, domain.ErrChallengeRequired, false, true},
		{"no challenge, no proof: nothing asked", domain.ChallengeNone, "", false, nil, false, true},
		{"no challenge with a valid proof", domain.ChallengeNone, "good", false, nil, true, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := &proofs{}
			var verifier application.ProofVerifier = p
			if tc.noVerifier {
				verifier = nil
			}
			f := newGateFixture(t, domain.AdmissionFirstCome, tc.challenge, verifier)
			_, err := f.grab.Handle(ctx, application.GrabVoucherCmd{VoucherID: 1, UserID: 7, Quantity: 1, Proof: tc.proof})
			if !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
				t.Fatalf("grab = %v, want %v", err, tc.want)
			}
			if verified := p.calls.Load() > 0; verified != tc.verified {
				t.Fatalf("the proof was verified: %v, want %v", verified, tc.verified)
			}
			if judged := f.stock.ReserveCalls() > 0; judged != tc.judged {
				t.Fatalf("the grab reached the stock: %v, want %v", judged, tc.judged)
			}
		})
	}
}

// TestUsedPassOnASoldOutRoom: the gates are judged before the sale's state, also once
// the instance knows the voucher is sold out — a grab with a used pass of a sold-out
// waiting room is told its pass is no good (queue_required), not sold_out.
func TestUsedPassOnASoldOutRoom(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newGateFixture(t, domain.AdmissionWaitingRoom, domain.ChallengeNone, nil)
	passes := map[domain.UserID]string{}
	for u := domain.UserID(1); u <= 3; u++ {
		passes[u] = f.pass(1, u, passKey)
	}
	for u := domain.UserID(1); u <= 2; u++ {
		if _, err := f.grab.Handle(ctx, application.GrabVoucherCmd{VoucherID: 1, UserID: u, Quantity: 1, Pass: passes[u]}); err != nil {
			t.Fatalf("grab of user %d with its pass: %v", u, err)
		}
	}
	if _, err := f.grab.Handle(ctx, application.GrabVoucherCmd{VoucherID: 1, UserID: 3, Quantity: 1, Pass: passes[3]}); !errors.Is(err, domain.ErrSoldOut) {
		t.Fatalf("grab with a pass once sold out: %v, want sold out", err)
	}
	if _, err := f.grab.Handle(ctx, application.GrabVoucherCmd{VoucherID: 1, UserID: 1, Quantity: 1, Pass: passes[1]}); !errors.Is(err, domain.ErrQueueRequired) {
		t.Fatalf("grab with a used pass of a sold-out room: %v, want queue required", err)
	}
	if _, err := f.grab.Handle(ctx, application.GrabVoucherCmd{VoucherID: 1, UserID: 9, Quantity: 1}); !errors.Is(err, domain.ErrQueueRequired) {
		t.Fatalf("grab without a pass of a sold-out room: %v, want queue required", err)
	}
}

// TestGrabVoucherSpendsThePassInTheRoom: with GrabOptions.Passes (a stock that does
// not use passes up where the room keeps them), a grab that reserved with a pass
// spends it in the room, freeing its place in the window; a refused one does not.
func TestGrabVoucherSpendsThePassInTheRoom(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newGateFixture(t, domain.AdmissionWaitingRoom, domain.ChallengeNone, nil)
	room := memory.NewWaitingRoom(f.clock)
	v := domain.Voucher{ID: 1}
	for _, u := range []domain.UserID{7, 8} {
		if _, err := room.Join(ctx, v, u); err != nil {
			t.Fatal(err)
		}
	}
	if err := room.Install(ctx, v, []domain.UserID{7, 8}); err != nil {
		t.Fatal(err)
	}
	a, err := room.Admit(ctx, v, 2, domain.PassLifetime, nil)
	if err != nil || len(a.Users) != 2 {
		t.Fatalf("Admit = %+v, %v", a, err)
	}
	grab := application.NewGrabVoucher(f.stock, f.clock, &memory.OrderIDs{}, nil,
		application.NewBuyerGate(nil, f.clock, application.GateOptions{PassKey: passKey}), application.GrabOptions{Passes: room})
	token := func(u domain.UserID) string {
		p := domain.Pass{Voucher: 1, User: u, Expires: a.Expires}
		f.stock.IssuePass(p)
		return domain.SignPass(passKey, p)
	}
	if _, err := grab.Handle(ctx, application.GrabVoucherCmd{VoucherID: 1, UserID: 7, Quantity: 1, Pass: token(7)}); err != nil {
		t.Fatal(err)
	}
	if _, err := grab.Handle(ctx, application.GrabVoucherCmd{VoucherID: 1, UserID: 8, Quantity: 99, Pass: token(8)}); err == nil {
		t.Fatal("a grab of 99 units was taken")
	}
	if fig, err := room.Figures(ctx, 1); err != nil || fig.Outstanding != 1 {
		t.Fatalf("passes outstanding after one grab reserved and one refused: %+v, %v; want 1", fig, err)
	}
}
