package application_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/seckill/seckill/adapters/memory"
	"github.com/seckill/seckill/application"
	"github.com/seckill/seckill/domain"
	"github.com/seckill/seckill/ports"
)

func TestWaitlistJoinsWithAFreshOrderID(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newGrabFixture(t, window)
	list := memory.NewWaitlist()
	uc := newWaitlistCases(list, f, nil)
	for i, u := range []domain.UserID{1, 2, 1} {
		pos, err := uc.Join(ctx, f.id, u)
		if want := []int{1, 2, 1}[i]; err != nil || pos != want {
			t.Fatalf("join of %d = %d, %v; want %d", u, pos, err, want)
		}
	}
	if list.Orders[1] == "" || list.Orders[1] == list.Orders[2] {
		t.Fatalf("order ids minted: %v, want distinct", list.Orders)
	}
	if pos, err := uc.Position(ctx, f.id, 2); err != nil || pos != 2 {
		t.Fatalf("position = %d, %v", pos, err)
	}
	if err := uc.Leave(ctx, f.id, 1); err != nil {
		t.Fatal(err)
	}
	if _, err := uc.Position(ctx, f.id, 1); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("position after leaving: %v", err)
	}
	for name, call := range map[string]func() error{
		"join no voucher": func() error { _, err := uc.Join(ctx, 0, 1); return err },
		"join no user":    func() error { _, err := uc.Join(ctx, f.id, 0); return err },
		"position":        func() error { _, err := uc.Position(ctx, f.id, -1); return err },
		"leave":           func() error { return uc.Leave(ctx, -1, 1) },
	} {
		if err := call(); !errors.Is(err, domain.ErrInvalid) {
			t.Errorf("%s: %v, want invalid", name, err)
		}
	}
}

// TestWaitlistWithoutSaleState: the store has no sale state for the voucher: an
// unknown voucher is not found, an ended one ended, a live one unavailable (its state
// is rebuilt by the next grab).
func TestWaitlistWithoutSaleState(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newGrabFixture(t, window)
	list := memory.NewWaitlist()
	list.Err = domain.ErrNotFound
	uc := newWaitlistCases(list, f, nil)
	if _, err := uc.Join(ctx, f.id+100, 1); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("unknown voucher: %v", err)
	}
	if _, err := uc.Join(ctx, f.id, 1); !errors.Is(err, domain.ErrUnavailable) {
		t.Fatalf("live voucher: %v", err)
	}
	f.clock.Set(window.EndsAt.Add(time.Second))
	if _, err := uc.Join(ctx, f.id, 1); !errors.Is(err, domain.ErrEnded) {
		t.Fatalf("ended voucher: %v", err)
	}
}

// TestDeniedUserIsKeptOffTheWaitlist: a denied user's join is refused before the
// store, and denying a user on a waitlist takes it off.
func TestDeniedUserIsKeptOffTheWaitlist(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newGrabFixture(t, window)
	deny := memory.NewDenyList()
	local := application.NewDeniedUsers(deny)
	list := memory.NewWaitlist()
	uc := newWaitlistCases(list, f, local)
	for _, u := range []domain.UserID{1, 2} {
		if _, err := uc.Join(ctx, f.id, u); err != nil {
			t.Fatal(err)
		}
	}
	change, err := application.NewDenyUser(deny, deny, local, list).Handle(ctx, application.DenyUserCmd{Denial: domain.Denial{User: 1}})
	if err != nil || change.Undropped != nil {
		t.Fatalf("deny: %v, %v", err, change.Undropped)
	}
	if _, err := uc.Position(ctx, f.id, 1); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("denied user still on the waitlist: %v", err)
	}
	if pos, _ := uc.Position(ctx, f.id, 2); pos != 1 {
		t.Fatalf("user 2 at %d, want 1", pos)
	}
	if _, err := uc.Join(ctx, f.id, 1); !errors.Is(err, domain.ErrDenied) {
		t.Fatalf("join of a denied user: %v", err)
	}
}

// TestWaitlistIsForFirstComeVouchers: a draw's voucher has no waitlist.
func TestWaitlistIsForFirstComeVouchers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newGrabFixture(t, window)
	draw := window
	draw.Admission = domain.AdmissionDraw
	if err := f.vouchers.Create(ctx, &draw, domain.Author{}, nil); err != nil {
		t.Fatal(err)
	}
	uc := newWaitlistCases(memory.NewWaitlist(), f, nil)
	if _, err := uc.Join(ctx, draw.ID, 1); !errors.Is(err, domain.ErrWaitlistUnsupported) {
		t.Fatalf("join of a draw's waitlist: %v, want unsupported", err)
	}
}

// waitlistCases are the waitlist's three use cases over one store, called as one.
type waitlistCases struct {
	join     *application.JoinWaitlist
	position *application.WaitlistPosition
	leave    *application.LeaveWaitlist
}

// newWaitlistCases returns the use cases over list, reading f's vouchers by its clock,
// refusing denied's users (nil: none).
func newWaitlistCases(list ports.Waitlist, f grabFixture, denied *application.DeniedUsers) waitlistCases {
	gate := application.NewBuyerGate(f.vouchers, f.clock, application.GateOptions{Denied: denied})
	return waitlistCases{join: application.NewJoinWaitlist(list, &memory.OrderIDs{}, f.clock, gate),
		position: application.NewWaitlistPosition(list), leave: application.NewLeaveWaitlist(list)}
}

func (w waitlistCases) Join(ctx context.Context, v domain.VoucherID, u domain.UserID) (int, error) {
	return w.join.Handle(ctx, application.WaitlistCmd{VoucherID: v, UserID: u})
}

func (w waitlistCases) Position(ctx context.Context, v domain.VoucherID, u domain.UserID) (int, error) {
	return w.position.Handle(ctx, application.WaitlistCmd{VoucherID: v, UserID: u})
}

func (w waitlistCases) Leave(ctx context.Context, v domain.VoucherID, u domain.UserID) error {
	return w.leave.Handle(ctx, application.WaitlistCmd{VoucherID: v, UserID: u})
}
