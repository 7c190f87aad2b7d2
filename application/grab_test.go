package application_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/seckill/seckill/adapters/memory"
	"github.com/seckill/seckill/application"
	"github.com/seckill/seckill/domain"
)

var (
	t0     = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	window = domain.Voucher{Title: "t", Stock: 2, BeginsAt: t0, EndsAt: t0.Add(time.Hour), PerUserLimit: 2}
)

type grabFixture struct {
	vouchers *memory.Vouchers
	stock    *memory.Stock
	clock    *memory.Clock
	grab     *application.GrabVoucher
	id       domain.VoucherID
	// changes hears what the use cases announce.
	changes *memory.Changes
}

func newGrabFixture(t testing.TB, v domain.Voucher) grabFixture {
	t.Helper()
	vouchers := memory.NewVouchers()
	stock := memory.NewStock()
	clock := memory.NewClock(t0)
	stock.Clock = clock
	created, err := application.NewCreateVoucher(vouchers, stock, clock).Handle(context.Background(), application.CreateVoucherCmd{
		Title: v.Title, Stock: v.Stock, BeginsAt: v.BeginsAt, EndsAt: v.EndsAt, PerUserLimit: v.PerUserLimit,
	})
	if err != nil {
		t.Fatalf("create voucher: %v", err)
	}
	return grabFixture{vouchers: vouchers, stock: stock, clock: clock, grab: application.NewGrabVoucher(stock, clock, &memory.OrderIDs{}, nil,
		application.NewBuyerGate(vouchers, clock, application.GateOptions{SoldOutTTL: time.Second}), application.GrabOptions{}), id: created.ID,
		changes: memory.NewChanges()}
}

func TestGrabVoucherOutcomes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tests := []struct {
		name    string
		prepare func(f grabFixture) // earlier grabs
		at      time.Time
		cmd     func(id domain.VoucherID) application.GrabVoucherCmd
		wantErr error
	}{
		{name: "reserved", at: t0, cmd: cmdFor(7, 1)},
		{name: "reserved at the last instant", at: t0.Add(time.Hour - time.Millisecond), cmd: cmdFor(7, 1)},
		{name: "not started", at: t0.Add(-time.Millisecond), cmd: cmdFor(7, 1), wantErr: domain.ErrNotStarted},
		{name: "ended", at: t0.Add(time.Hour), cmd: cmdFor(7, 1), wantErr: domain.ErrEnded},
		{name: "already purchased", at: t0, cmd: cmdFor(7, 1), wantErr: domain.ErrAlreadyPurchased,
			prepare: func(f grabFixture) { mustGrab(t, f, 7, 1) }},
		{name: "sold out", at: t0, cmd: cmdFor(9, 1), wantErr: domain.ErrSoldOut,
			prepare: func(f grabFixture) { mustGrab(t, f, 7, 2) }},
		{name: "not enough left for the quantity", at: t0, cmd: cmdFor(9, 2), wantErr: domain.ErrSoldOut,
			prepare: func(f grabFixture) { mustGrab(t, f, 7, 1) }},
		{name: "quantity zero", at: t0, cmd: cmdFor(7, 0), wantErr: domain.ErrInvalid},
		{name: "quantity negative", at: t0, cmd: cmdFor(7, -1), wantErr: domain.ErrInvalid},
		{name: "quantity above the limit", at: t0, cmd: cmdFor(7, 3), wantErr: domain.ErrInvalid},
		{name: "quantity absurd", at: t0, cmd: cmdFor(7, domain.MaxQuantity+1), wantErr: domain.ErrInvalid},
		{name: "no user", at: t0, cmd: cmdFor(0, 1), wantErr: domain.ErrInvalid},
		{name: "unknown voucher", at: t0, wantErr: domain.ErrNotFound,
			cmd: func(domain.VoucherID) application.GrabVoucherCmd {
				return application.GrabVoucherCmd{VoucherID: 999, UserID: 7, Quantity: 1}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newGrabFixture(t, window)
			if tt.prepare != nil {
				tt.prepare(f)
			}
			before := len(f.stock.Reserved)
			f.clock.Set(tt.at)
			r, err := f.grab.Handle(ctx, tt.cmd(f.id))
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if tt.wantErr != nil {
				if got := len(f.stock.Reserved); got != before {
					t.Fatalf("a refused grab reserved: %d reservations, want %d", got, before)
				}
				return
			}
			if r.OrderID == "" || !r.At.IsZero() || r.VoucherID != f.id {
				t.Fatalf("reservation = %+v, want one judged by the stock's clock (no time of its own)", r)
			}
			// The stock judged it, and stamped it, by the sale's clock.
			want := r
			want.At = tt.at
			if got := f.stock.Reserved[len(f.stock.Reserved)-1]; got != want {
				t.Fatalf("recorded %+v, want %+v", got, want)
			}
		})
	}
}

func TestGrabVoucherAlreadyPurchasedNamesTheOrder(t *testing.T) {
	t.Parallel()
	f := newGrabFixture(t, window)
	first := mustGrab(t, f, 7, 1)
	_, err := f.grab.Handle(context.Background(), application.GrabVoucherCmd{VoucherID: f.id, UserID: 7, Quantity: 1})
	var ap *domain.AlreadyPurchasedError
	if !errors.As(err, &ap) {
		t.Fatalf("err = %v, want *AlreadyPurchasedError", err)
	}
	if got, want := ap.OrderID, first.OrderID; got != want {
		t.Fatalf("order = %s, want %s", got, want)
	}
}

func TestGrabVoucherStockDown(t *testing.T) {
	t.Parallel()
	f := newGrabFixture(t, window)
	f.stock.Err = domain.ErrUnavailable
	_, err := f.grab.Handle(context.Background(), application.GrabVoucherCmd{VoucherID: f.id, UserID: 7, Quantity: 1})
	if !errors.Is(err, domain.ErrUnavailable) {
		t.Fatalf("err = %v, want ErrUnavailable", err)
	}
}

func cmdFor(user domain.UserID, qty int) func(domain.VoucherID) application.GrabVoucherCmd {
	return func(id domain.VoucherID) application.GrabVoucherCmd {
		return application.GrabVoucherCmd{VoucherID: id, UserID: user, Quantity: qty}
	}
}

func mustGrab(t *testing.T, f grabFixture, user domain.UserID, qty int) domain.Reservation {
	t.Helper()
	r, err := f.grab.Handle(context.Background(), application.GrabVoucherCmd{VoucherID: f.id, UserID: user, Quantity: qty})
	if err != nil {
		t.Fatalf("grab: %v", err)
	}
	return r
}

func TestGrabVoucherSoldOutShortCut(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newGrabFixture(t, window)
	mustGrab(t, f, 1, 2)
	calls := f.stock.ReserveCalls()
	// A two-unit grab refused proves nothing about single units: it sets no flag.
	if _, err := f.grab.Handle(ctx, application.GrabVoucherCmd{VoucherID: f.id, UserID: 2, Quantity: 2}); !errors.Is(err, domain.ErrSoldOut) {
		t.Fatalf("err = %v", err)
	}
	if _, err := f.grab.Handle(ctx, application.GrabVoucherCmd{VoucherID: f.id, UserID: 3, Quantity: 1}); !errors.Is(err, domain.ErrSoldOut) {
		t.Fatalf("err = %v", err)
	}
	if got, want := f.stock.ReserveCalls(), calls+2; got != want {
		t.Fatalf("reserve calls = %d, want %d", got, want)
	}
	// Now flagged: a thousand more grabs answer sold out without asking the stock.
	for u := domain.UserID(10); u < 1010; u++ {
		if _, err := f.grab.Handle(ctx, application.GrabVoucherCmd{VoucherID: f.id, UserID: u, Quantity: 1}); !errors.Is(err, domain.ErrSoldOut) {
			t.Fatalf("err = %v", err)
		}
	}
	if got, want := f.stock.ReserveCalls(), calls+2; got != want {
		t.Fatalf("reserve calls = %d after the flag, want %d", got, want)
	}
	// Units come back: once told, the next grab asks the stock again and gets them.
	first := f.stock.Reserved[0]
	if ok, err := f.stock.Release(ctx, domain.Order{ID: first.OrderID, VoucherID: f.id, UserID: first.UserID, Quantity: 2}); !ok || err != nil {
		t.Fatalf("release: %v %v", ok, err)
	}
	f.grab.Restocked(f.id)
	mustGrab(t, f, 3, 1)
	// The flag also lapses by itself after its TTL.
	mustGrab(t, f, 4, 1)
	if _, err := f.grab.Handle(ctx, application.GrabVoucherCmd{VoucherID: f.id, UserID: 5, Quantity: 1}); !errors.Is(err, domain.ErrSoldOut) {
		t.Fatalf("err = %v", err)
	}
	if _, err := f.stock.Release(ctx, domain.Order{ID: f.stock.Reserved[2].OrderID, VoucherID: f.id, UserID: 4, Quantity: 1}); err != nil {
		t.Fatal(err)
	}
	f.clock.Set(t0.Add(time.Second))
	mustGrab(t, f, 5, 1)
}
