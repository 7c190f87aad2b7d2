package application_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/seckill/seckill/adapters/memory"
	"github.com/seckill/seckill/application"
	"github.com/seckill/seckill/domain"
	"github.com/seckill/seckill/ports"
)

func TestCreateVoucher(t *testing.T) {
	t.Parallel()
	good := application.CreateVoucherCmd{Title: "Coffee", Stock: 100, BeginsAt: t0, EndsAt: t0.Add(time.Hour), PerUserLimit: 1}
	tests := []struct {
		name  string
		edit  func(*application.CreateVoucherCmd)
		field string // the field a *ValidationError names; "" means success
	}{
		{name: "valid"},
		{name: "empty title", edit: func(c *application.CreateVoucherCmd) { c.Title = "  " }, field: "title"},
		{name: "zero stock", edit: func(c *application.CreateVoucherCmd) { c.Stock = 0 }, field: "stock"},
		{name: "negative stock", edit: func(c *application.CreateVoucherCmd) { c.Stock = -5 }, field: "stock"},
		{name: "window reversed", edit: func(c *application.CreateVoucherCmd) { c.EndsAt = c.BeginsAt }, field: "ends_at"},
		{name: "ended already", edit: func(c *application.CreateVoucherCmd) { c.BeginsAt, c.EndsAt = t0.Add(-2*time.Hour), t0.Add(-time.Hour) }, field: "ends_at"},
		{name: "ends now", edit: func(c *application.CreateVoucherCmd) { c.BeginsAt, c.EndsAt = t0.Add(-time.Hour), t0 }, field: "ends_at"},
		{name: "begun, not ended", edit: func(c *application.CreateVoucherCmd) { c.BeginsAt = t0.Add(-time.Hour) }},
		{name: "title with NUL", edit: func(c *application.CreateVoucherCmd) { c.Title = "a\x00b" }, field: "title"},
		{name: "no begin", edit: func(c *application.CreateVoucherCmd) { c.BeginsAt = time.Time{} }, field: "begins_at"},
		{name: "limit zero", edit: func(c *application.CreateVoucherCmd) { c.PerUserLimit = 0 }, field: "per_user_limit"},
		{name: "limit above stock", edit: func(c *application.CreateVoucherCmd) { c.PerUserLimit = 101 }, field: "per_user_limit"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			vouchers, stock := memory.NewVouchers(), memory.NewStock()
			cmd := good
			if tt.edit != nil {
				tt.edit(&cmd)
			}
			got, err := application.NewCreateVoucher(vouchers, stock, memory.NewClock(t0)).Handle(context.Background(), cmd)
			all, _ := vouchers.List(context.Background(), ports.VoucherQuery{Limit: 10})
			if tt.field != "" {
				var ve *domain.ValidationError
				if !errors.As(err, &ve) || ve.Field != tt.field {
					t.Fatalf("err = %v, want a validation error on %s", err, tt.field)
				}
				if len(all) != 0 {
					t.Fatalf("an invalid voucher was stored")
				}
				return
			}
			if err != nil {
				t.Fatalf("create: %v", err)
			}
			if got.ID == 0 || got.Remaining != 100 || len(all) != 1 {
				t.Fatalf("created %+v, stored %d", got, len(all))
			}
			left, _ := stock.Remaining(context.Background(), got.ID)
			if left[got.ID] != 100 {
				t.Fatalf("warmed remaining = %d, want 100", left[got.ID])
			}
		})
	}
}

func TestCreateVoucherReportsAFailedWarmUp(t *testing.T) {
	t.Parallel()
	vouchers, stock := memory.NewVouchers(), memory.NewStock()
	stock.Err = domain.ErrUnavailable
	v, err := application.NewCreateVoucher(vouchers, stock, memory.NewClock(t0)).Handle(context.Background(),
		application.CreateVoucherCmd{Title: "x", Stock: 1, BeginsAt: t0, EndsAt: t0.Add(time.Hour), PerUserLimit: 1})
	if err != nil || v.ID == 0 || !errors.Is(v.Warming, domain.ErrUnavailable) {
		t.Fatalf("create = %+v, %v; want the stored voucher, warming ErrUnavailable", v, err)
	}
	// The voucher is kept; the periodic warm-up loads it once the stock is back.
	stock.Err = nil
	n, err := newWarm(vouchers, stock, memory.NewClock(t0)).Handle(context.Background())
	if err != nil || n != 1 {
		t.Fatalf("warm = %d, %v; want 1 loaded", n, err)
	}
}

func TestWarmVouchersNeverResetsALiveCounter(t *testing.T) {
	t.Parallel()
	f := newGrabFixture(t, window)
	mustGrab(t, f, 7, 1)
	vouchers := memory.NewVouchers()
	v := window
	v.ID = f.id
	if err := vouchers.Create(context.Background(), &v, domain.Author{}, nil); err != nil {
		t.Fatal(err)
	}
	n, err := newWarm(vouchers, f.stock, f.clock).Handle(context.Background())
	if err != nil || n != 0 {
		t.Fatalf("warm = %d, %v; want 0 loaded", n, err)
	}
	left, _ := f.stock.Remaining(context.Background(), f.id)
	if got, want := left[f.id], 1; got != want {
		t.Fatalf("remaining = %d, want %d", got, want)
	}
}

func TestWarmVouchersSkipsEndedSales(t *testing.T) {
	t.Parallel()
	vouchers, stock := memory.NewVouchers(), memory.NewStock()
	ended := domain.Voucher{Title: "old", Stock: 1, BeginsAt: t0.Add(-2 * time.Hour), EndsAt: t0.Add(-time.Hour), PerUserLimit: 1}
	live := domain.Voucher{Title: "new", Stock: 1, BeginsAt: t0, EndsAt: t0.Add(time.Hour), PerUserLimit: 1}
	for _, v := range []*domain.Voucher{&ended, &live} {
		if err := vouchers.Create(context.Background(), v, domain.Author{}, nil); err != nil {
			t.Fatal(err)
		}
	}
	n, err := newWarm(vouchers, stock, memory.NewClock(t0)).Handle(context.Background())
	if err != nil || n != 1 {
		t.Fatalf("warm = %d, %v; want 1", n, err)
	}
	left, _ := stock.Remaining(context.Background(), ended.ID, live.ID)
	if _, ok := left[ended.ID]; ok {
		t.Fatalf("an ended sale was warmed")
	}
}

func TestGetAndListVouchersShowLiveRemaining(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newGrabFixture(t, window)
	mustGrab(t, f, 7, 2)
	get := application.NewGetVoucher(f.vouchers, f.stock, f.clock)
	got, err := get.Handle(ctx, f.id)
	if err != nil {
		t.Fatal(err)
	}
	if got.Remaining != 0 || got.State != domain.StateSoldOut {
		t.Fatalf("remaining = %d, state %s; want 0, sold_out after selling both units", got.Remaining, got.State)
	}
	if _, err := get.Handle(ctx, 999); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("get unknown: %v, want ErrNotFound", err)
	}

	// A voucher without sale state reads stock - sold from the database.
	cold := domain.Voucher{Title: "cold", Stock: 10, Sold: 3, BeginsAt: t0, EndsAt: t0.Add(time.Hour), PerUserLimit: 1}
	if err := f.vouchers.Create(ctx, &cold, domain.Author{}, nil); err != nil {
		t.Fatal(err)
	}
	page, err := application.NewListVouchers(f.vouchers, f.stock, f.clock).Handle(ctx, application.ListVouchersQuery{})
	if err != nil {
		t.Fatal(err)
	}
	list := page.Vouchers
	if len(list) != 2 || list[0].ID != cold.ID || list[0].Remaining != 7 || list[1].Remaining != 0 ||
		list[0].State != domain.StateLive || list[1].State != domain.StateSoldOut {
		t.Fatalf("list = %+v", list)
	}
}

// Every voucher answer says its sale's state by the clock it was read at: the sale's
// clock, not the voucher's window alone.
func TestVoucherStateFollowsTheClock(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newGrabFixture(t, window)
	get := application.NewGetVoucher(f.vouchers, f.stock, f.clock)
	list := application.NewListVouchers(f.vouchers, f.stock, f.clock)
	pause := application.NewPauseSale(f.vouchers, f.stock, f.clock, f.changes)
	for _, tc := range []struct {
		at   time.Time
		want domain.SaleState
	}{
		{window.BeginsAt.Add(-time.Millisecond), domain.StateUpcoming},
		{window.BeginsAt, domain.StateLive},
		{window.EndsAt, domain.StateEnded},
	} {
		f.clock.Set(tc.at)
		got, err := get.Handle(ctx, f.id)
		if err != nil || got.State != tc.want {
			t.Fatalf("get at %v: %s, %v; want %s", tc.at, got.State, err, tc.want)
		}
		page, err := list.Handle(ctx, application.ListVouchersQuery{})
		if err != nil || len(page.Vouchers) != 1 || page.Vouchers[0].State != tc.want {
			t.Fatalf("list at %v: %+v, %v; want %s", tc.at, page.Vouchers, err, tc.want)
		}
	}
	f.clock.Set(window.BeginsAt)
	if v, err := pause.Handle(ctx, application.PauseSaleCmd{Voucher: f.id, Paused: true, By: domain.Author{Actor: "1"}}); err != nil || v.State != domain.StatePaused {
		t.Fatalf("pause: %s, %v; want paused", v.State, err)
	}
	if v, err := pause.Handle(ctx, application.PauseSaleCmd{Voucher: f.id, Paused: false, By: domain.Author{Actor: "1"}}); err != nil || v.State != domain.StateLive {
		t.Fatalf("resume: %s, %v; want live", v.State, err)
	}
}

func TestPauseSale(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newGrabFixture(t, window)
	pause := application.NewPauseSale(f.vouchers, f.stock, f.clock, f.changes)
	v, err := pause.Handle(ctx, application.PauseSaleCmd{Voucher: f.id, Paused: true, By: domain.Author{Actor: "1"}})
	if err != nil || !v.Paused {
		t.Fatalf("pause: %+v, %v", v, err)
	}
	if _, err := f.grab.Handle(ctx, application.GrabVoucherCmd{VoucherID: f.id, UserID: 1, Quantity: 1}); !errors.Is(err, domain.ErrPaused) {
		t.Fatalf("grab while paused: %v", err)
	}
	if _, err := pause.Handle(ctx, application.PauseSaleCmd{Voucher: f.id, Paused: false, By: domain.Author{Actor: "2", RequestID: "r2"}}); err != nil {
		t.Fatal(err)
	}
	mustGrab(t, f, 1, 1)
	// A resume of a sale already going changes nothing and records nothing.
	if _, err := pause.Handle(ctx, application.PauseSaleCmd{Voucher: f.id, Paused: false, By: domain.Author{Actor: "2"}}); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range f.vouchers.Log.Entries() {
		if e.VoucherID == f.id && e.Action != domain.AuditVoucherCreate {
			got = append(got, fmt.Sprintf("%s %s %s %s %s", e.Action, e.Actor, e.RequestID, e.Before, e.After))
		}
	}
	want := []string{
		`voucher.pause 1  {"paused":false} {"paused":true}`,
		`voucher.resume 2 r2 {"paused":true} {"paused":false}`,
	}
	if !slices.Equal(got, want) {
		t.Fatalf("audit entries:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if _, err := pause.Handle(ctx, application.PauseSaleCmd{Voucher: 999, Paused: true, By: domain.Author{Actor: "1"}}); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("pause unknown: %v", err)
	}
	// Redis unreachable: the flag is stored, so the pause has happened and says so
	// (Warming tells why the grab path has not taken it); the warm-up carries it over.
	f.stock.Err = domain.ErrUnavailable
	if v, err := pause.Handle(ctx, application.PauseSaleCmd{Voucher: f.id, Paused: true, By: domain.Author{Actor: "1"}}); err != nil || !v.Paused ||
		v.State != domain.StatePaused || !errors.Is(v.Warming, domain.ErrUnavailable) {
		t.Fatalf("pause with redis down: %+v, %v; want the stored pause, warming unavailable", v, err)
	}
	f.stock.Err = nil
	if _, err := newWarm(f.vouchers, f.stock, f.clock).Handle(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := f.grab.Handle(ctx, application.GrabVoucherCmd{VoucherID: f.id, UserID: 2, Quantity: 1}); !errors.Is(err, domain.ErrPaused) {
		t.Fatalf("grab after the warm-up synced the flag: %v", err)
	}
}

// newWarm is WarmVouchers over the fakes, with an order store of its own.
func newWarm(vouchers *memory.Vouchers, stock *memory.Stock, clock *memory.Clock) *application.WarmVouchers {
	return application.NewWarmVouchers(vouchers, stock, newRecover(vouchers, stock, memory.NewOrders(vouchers), clock), clock)
}
