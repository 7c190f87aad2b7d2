package application_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/seckill/seckill/application"
	"github.com/seckill/seckill/domain"
	"github.com/seckill/seckill/ports"
)

// Every change of an order or a sale is announced once it has committed, and only
// then; an announcement that fails leaves the change standing.
func TestChangesAreAnnounced(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	l := newLifecycle(t, 10)
	v := l.id
	announced := func(t *testing.T, want ...ports.Change) {
		t.Helper()
		if got := l.changes.Published(); !slices.Equal(got, want) {
			t.Fatalf("announced %+v, want %+v", got, want)
		}
	}

	paid := l.persisted(t, 5) // persisted: announced by the worker
	cancelled := l.persisted(t, 6)
	expired := l.persisted(t, 7)
	announced(t, ports.Change{Voucher: v, Order: paid}, ports.Change{Voucher: v, Order: cancelled}, ports.Change{Voucher: v, Order: expired})
	if _, err := l.pay.Handle(ctx, application.OrderChangeCmd{User: 5, Order: paid}); err != nil {
		t.Fatal(err)
	}
	if _, err := l.cancel.Handle(ctx, application.OrderChangeCmd{User: 6, Order: cancelled}); err != nil {
		t.Fatal(err)
	}
	// A refused change announces nothing.
	if _, err := l.pay.Handle(ctx, application.OrderChangeCmd{User: 6, Order: cancelled}); !errors.Is(err, domain.ErrInvalidState) {
		t.Fatal(err)
	}
	l.clock.Set(t0.Add(paymentTimeout + 1))
	if n, err := l.expire.Handle(ctx); err != nil || n != 1 {
		t.Fatalf("expire: %d, %v", n, err)
	}
	announced(t, ports.Change{Voucher: v, Order: paid}, ports.Change{Voucher: v, Order: cancelled}, ports.Change{Voucher: v, Order: expired},
		ports.Change{Voucher: v, Order: paid}, ports.Change{Voucher: v, Order: cancelled}, ports.Change{Voucher: v, Order: expired})

	// Redis down: the payment stands.
	l.changes.Err = errors.New("redis down")
	l.clock.Set(t0)
	other := l.persisted(t, 8)
	if o, err := l.pay.Handle(ctx, application.OrderChangeCmd{User: 8, Order: other}); err != nil || o.Status != domain.StatusPaid {
		t.Fatalf("pay while announcements fail: %+v, %v", o, err)
	}

	// A pause is a change of the sale.
	l.changes.Err = nil
	pause := application.NewPauseSale(l.vouchers, l.stock, l.clock, l.changes)
	if _, err := pause.Handle(ctx, application.PauseSaleCmd{Voucher: v, Paused: true}); err != nil {
		t.Fatal(err)
	}
	if got := l.changes.Published(); got[len(got)-1] != (ports.Change{Voucher: v}) {
		t.Fatalf("pause announced %+v", got[len(got)-1])
	}
}

// An edit that changed something is announced once; one that changed nothing, or was
// refused, is not.
func TestEditIsAnnounced(t *testing.T) {
	t.Parallel()
	f := newEditFixture(t, 10)
	title := "Tea"
	if _, err := f.apply(domain.VoucherEdit{Title: &title}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.apply(domain.VoucherEdit{Title: &title}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.apply(domain.VoucherEdit{RemoveUnits: units(11)}); !errors.Is(err, domain.ErrNotEnoughUnits) {
		t.Fatalf("remove more than remain: %v", err)
	}
	if got, want := f.changes.Published(), []ports.Change{{Voucher: f.id}}; !slices.Equal(got, want) {
		t.Fatalf("announced %+v, want %+v", got, want)
	}
}
