package application_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/seckill/seckill/adapters/memory"
	"github.com/seckill/seckill/application"
	"github.com/seckill/seckill/domain"
	"github.com/seckill/seckill/ports"
)

// editFixture is a voucher on sale with the edit use case over the fakes.
type editFixture struct {
	sale
	edit    *application.EditVoucher
	actions [][]string
}

func newEditFixture(t *testing.T, stock int) *editFixture {
	t.Helper()
	f := &editFixture{sale: newSale(t, stock, 1)}
	f.edit = application.NewEditVoucher(f.vouchers, f.stock, newRecover(f.vouchers, f.stock, f.orders, f.clock), f.clock, f.changes)
	f.edit.Observe(func(actions []string) { f.actions = append(f.actions, actions) })
	return f
}

func units(n int) *int { return &n }

func (f *editFixture) apply(e domain.VoucherEdit) (application.LiveVoucher, error) {
	return f.edit.Handle(context.Background(), application.EditVoucherCmd{Voucher: f.id, Edit: e, By: domain.Author{Actor: "1", RequestID: "r"}})
}

// TestEditVoucherAnswersTheNewState: the edited voucher is answered with the state its
// new terms give it at the sale's clock — a sold-out sale given units is live again, a
// sale ended now is ended.
func TestEditVoucherAnswersTheNewState(t *testing.T) {
	t.Parallel()
	f := newEditFixture(t, 1)
	mustGrab(t, f.grabFixture, 1, 1)
	v, err := f.apply(domain.VoucherEdit{AddUnits: units(2)})
	if err != nil || v.Remaining != 2 || v.State != domain.StateLive {
		t.Fatalf("add 2 to a sold-out sale: %+v, %v; want remaining 2, state live", v, err)
	}
	now := f.clock.Now().Add(time.Minute)
	f.clock.Set(now)
	if v, err = f.apply(domain.VoucherEdit{EndsAt: &now}); err != nil || v.State != domain.StateEnded {
		t.Fatalf("end now: %+v, %v; want state ended", v, err)
	}
}

// updates returns the voucher.update entries of the audit log, oldest first.
func (f *editFixture) updates() []string {
	var out []string
	for _, e := range f.vouchers.Log.Entries() {
		if e.Action == domain.AuditVoucherUpdate {
			out = append(out, fmt.Sprintf("%s %s", e.Before, e.After))
		}
	}
	return out
}

func TestEditVoucher(t *testing.T) {
	t.Parallel()
	f := newEditFixture(t, 10)
	mustGrab(t, f.grabFixture, 1, 1)
	mustGrab(t, f.grabFixture, 2, 1)

	v, err := f.apply(domain.VoucherEdit{AddUnits: units(5)})
	if err != nil || v.Stock != 15 || v.Remaining != 13 || v.Version != 1 {
		t.Fatalf("add 5: %+v, %v; want stock 15, remaining 13, version 1", v, err)
	}
	if got := f.remaining(t); got != 13 {
		t.Fatalf("the stock's remaining after adding 5 = %d, want 13", got)
	}
	for _, n := range []int{14, 15, 100} { // more than remain; every unit; more than the stock
		if v, err = f.apply(domain.VoucherEdit{RemoveUnits: units(n)}); !errors.Is(err, domain.ErrNotEnoughUnits) {
			t.Fatalf("remove %d of 13 remaining: %+v, %v; want %v", n, v, err, domain.ErrNotEnoughUnits)
		}
	}
	if v, err = f.apply(domain.VoucherEdit{RemoveUnits: units(12)}); err != nil || v.Stock != 3 || v.Remaining != 1 {
		t.Fatalf("remove 12: %+v, %v; want stock 3, remaining 1", v, err)
	}
	if got := f.remaining(t); got != 1 {
		t.Fatalf("the stock's remaining after removing 12 = %d, want 1", got)
	}
	if _, err := f.apply(domain.VoucherEdit{RemoveUnits: units(2)}); !errors.Is(err, domain.ErrNotEnoughUnits) {
		t.Fatalf("remove 2 of 1 remaining: %v, want %v", err, domain.ErrNotEnoughUnits)
	}
	if got, _ := f.vouchers.Get(context.Background(), f.id); got.Stock != 3 {
		t.Fatalf("a refused removal stored stock %d, want 3", got.Stock)
	}
	begins := t0.Add(time.Hour)
	if _, err := f.apply(domain.VoucherEdit{BeginsAt: &begins}); !errors.Is(err, domain.ErrAlreadyStarted) {
		t.Fatalf("move the start of a started sale: %v, want %v", err, domain.ErrAlreadyStarted)
	}
	title := "t"
	if v, err := f.apply(domain.VoucherEdit{Title: &title}); err != nil || v.Title != "t" {
		t.Fatalf("an edit of nothing: %+v, %v", v, err)
	}
	ends := t0.Add(time.Minute)
	if _, err := f.apply(domain.VoucherEdit{EndsAt: &ends, Title: new(string)}); !errors.Is(err, domain.ErrInvalid) {
		t.Fatalf("an empty title: %v, want %v", err, domain.ErrInvalid)
	}
	if v, err := f.apply(domain.VoucherEdit{EndsAt: &ends}); err != nil || !v.EndsAt.Equal(ends) {
		t.Fatalf("end sooner: %+v, %v", v, err)
	}
	f.clock.Set(ends)
	if _, err := f.grab.Handle(context.Background(), application.GrabVoucherCmd{VoucherID: f.id, UserID: 9, Quantity: 1}); !errors.Is(err, domain.ErrEnded) {
		t.Fatalf("grab once the new end passed: %v, want %v", err, domain.ErrEnded)
	}

	want := []string{`{"stock":10} {"stock":15}`, `{"stock":15} {"stock":3}`,
		fmt.Sprintf(`{"ends_at":%q} {"ends_at":%q}`, t0.Add(time.Hour).Format(domain.StampLayout), ends.Format(domain.StampLayout))}
	if got := f.updates(); !slices.Equal(got, want) {
		t.Fatalf("audit entries:\n%q\nwant\n%q", got, want)
	}
	if got := fmt.Sprint(f.actions); got != "[[add_units] [remove_units] [ends_at]]" {
		t.Fatalf("actions observed: %s", got)
	}
}

// commitLost is a vouchers store whose commit fails after the change's Commit ran:
// the stock took the units, the database kept nothing (or cannot say).
type commitLost struct{ *memory.Vouchers }

func (c commitLost) Update(ctx context.Context, id domain.VoucherID, u ports.VoucherUpdate) (domain.Voucher, error) {
	commit := u.Commit
	u.Commit = func(ctx context.Context, before, after domain.Voucher) error {
		if err := commit(ctx, before, after); err != nil {
			return err
		}
		return fmt.Errorf("commit: %w", domain.ErrUnavailable)
	}
	return c.Vouchers.Update(ctx, id, u)
}

// TestEditVoucherHealsALostCommit: units the stock took for a removal whose commit
// then failed are back on sale at once (the voucher is recovered).
func TestEditVoucherHealsALostCommit(t *testing.T) {
	t.Parallel()
	f := newEditFixture(t, 10)
	mustGrab(t, f.grabFixture, 1, 1)
	recovered := map[application.RecoverReason]int{}
	recovery := newRecover(f.vouchers, f.stock, f.orders, f.clock)
	recovery.Observe(func(r application.RecoverReason, err error) {
		if err == nil {
			recovered[r]++
		}
	})
	edit := application.NewEditVoucher(commitLost{f.vouchers}, f.stock, recovery, f.clock, memory.NewChanges())
	_, err := edit.Handle(context.Background(), application.EditVoucherCmd{Voucher: f.id, Edit: domain.VoucherEdit{RemoveUnits: units(4)}})
	if !errors.Is(err, domain.ErrUnavailable) {
		t.Fatalf("a removal whose commit failed: %v, want %v", err, domain.ErrUnavailable)
	}
	if got := f.remaining(t); got != 9 {
		t.Fatalf("remaining after the failed removal = %d, want 9 (the stock took the database's terms again)", got)
	}
	if recovered[application.RecoverStale] != 1 {
		t.Fatalf("recoveries: %v, want one stale", recovered)
	}
	if got := f.updates(); len(got) != 0 {
		t.Fatalf("a failed edit left audit entries: %v", got)
	}
}

// TestWarmVouchersCarriesStaleTerms: a sale state left behind by an edit whose write to
// the stock was lost takes the database's terms at the next warm-up, without grabs
// ever waiting (no restoring).
func TestWarmVouchersCarriesStaleTerms(t *testing.T) {
	t.Parallel()
	f := newEditFixture(t, 10)
	mustGrab(t, f.grabFixture, 1, 1)
	v, _ := f.vouchers.Get(context.Background(), f.id)
	v.Stock, v.Version = 25, 1 // committed; the process died before it told the stock
	f.vouchers.Put(v)
	if got := f.remaining(t); got != 9 {
		t.Fatalf("remaining before the warm-up = %d", got)
	}
	if _, err := newWarm(f.vouchers, f.stock, f.clock).Handle(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := f.remaining(t); got != 24 {
		t.Fatalf("remaining after the warm-up = %d, want 24", got)
	}
	mustGrab(t, f.grabFixture, 2, 1) // never restoring
}
