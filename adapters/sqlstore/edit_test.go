package sqlstore_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/seckill/seckill/adapters/sqlstore"
	"github.com/seckill/seckill/domain"
	"github.com/seckill/seckill/ports"
)

// entries returns the audit log, newest first, as "action actor request_id voucher
// before after" lines.
func entries(t *testing.T, log *sqlstore.AuditLog, q ports.AuditQuery) []string {
	t.Helper()
	if q.Limit == 0 {
		q.Limit = 100
	}
	es, err := log.List(context.Background(), q)
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = fmt.Sprintf("%s %s %s %d %s %s", e.Action, e.Actor, e.RequestID, e.VoucherID, e.Before, e.After)
	}
	return out
}

func wantLines(t *testing.T, what string, got, want []string) {
	t.Helper()
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("%s:\n%q\nwant:\n%q", what, got, want)
	}
}

// TestVouchersUpdateWritesItsAuditEntry: a creation and each change that changes
// something append one entry in the change's own transaction, naming who, the request
// and the values before and after; a change that fails, or changes nothing, appends
// none.
func TestVouchersUpdateWritesItsAuditEntry(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := openMigrated(t)
	vs, log := sqlstore.NewVouchers(db), sqlstore.NewAuditLog(db)
	begins := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	v := domain.Voucher{Title: "Coffee", Stock: 10, BeginsAt: begins, EndsAt: begins.Add(time.Hour), PerUserLimit: 1}
	if err := vs.Create(ctx, &v, domain.Author{Actor: "1", RequestID: "req-1"}, nil); err != nil {
		t.Fatal(err)
	}
	created := fmt.Sprintf(`voucher.create 1 req-1 %d  {"begins_at":"2026-01-01T00:00:00.000Z","ends_at":"2026-01-01T01:00:00.000Z","paused":false,"per_user_limit":1,"stock":10,"title":"Coffee"}`, v.ID)
	wantLines(t, "after create", entries(t, log, ports.AuditQuery{}), []string{created})

	add := 5
	got, err := vs.Update(ctx, v.ID, ports.VoucherUpdate{Action: domain.AuditVoucherUpdate, By: domain.Author{Actor: "2", RequestID: "req-2"},
		Change: func(v domain.Voucher) (domain.Voucher, error) {
			return v.Apply(domain.VoucherEdit{AddUnits: &add}, begins.Add(-time.Hour))
		}})
	if err != nil {
		t.Fatal(err)
	}
	if got.Stock != 15 || got.Version != 1 {
		t.Fatalf("Update returned stock %d version %d, want 15 and 1", got.Stock, got.Version)
	}
	if stored, err := vs.Get(ctx, v.ID); err != nil || stored.Stock != 15 || stored.Version != 1 {
		t.Fatalf("stored %+v, %v; want stock 15, version 1", stored, err)
	}
	updated := fmt.Sprintf(`voucher.update 2 req-2 %d {"stock":10} {"stock":15}`, v.ID)
	wantLines(t, "after update", entries(t, log, ports.AuditQuery{}), []string{updated, created})

	// Failures and no-ops leave nothing.
	boom := errors.New("boom")
	for name, u := range map[string]ports.VoucherUpdate{
		"change fails": {Change: func(domain.Voucher) (domain.Voucher, error) { return domain.Voucher{}, boom }},
		"commit fails": {
			Change: func(v domain.Voucher) (domain.Voucher, error) { v.Title = "Tea"; return v, nil },
			Commit: func(context.Context, domain.Voucher, domain.Voucher) error { return boom },
		},
	} {
		u.Action = domain.AuditVoucherUpdate
		if _, err := vs.Update(ctx, v.ID, u); !errors.Is(err, boom) {
			t.Fatalf("%s: Update = %v, want %v", name, err, boom)
		}
	}
	if stored, _ := vs.Get(ctx, v.ID); stored.Title != "Coffee" {
		t.Fatalf("a failed commit stored the title %q", stored.Title)
	}
	same, err := vs.Update(ctx, v.ID, ports.VoucherUpdate{Action: domain.AuditVoucherPause,
		Change: func(v domain.Voucher) (domain.Voucher, error) { return v, nil }})
	if err != nil || same.Stock != 15 {
		t.Fatalf("a change of nothing = %+v, %v", same, err)
	}
	if _, err := vs.Update(ctx, v.ID+1000, ports.VoucherUpdate{Change: func(v domain.Voucher) (domain.Voucher, error) { return v, nil }}); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("Update of an unknown voucher = %v, want %v", err, domain.ErrNotFound)
	}
	wantLines(t, "after failures", entries(t, log, ports.AuditQuery{}), []string{updated, created})
}

// TestVouchersUpdateKeepsStockOverSold: the sold CHECK is the last net under a removal
// of units the live orders hold: domain.ErrNotEnoughUnits, nothing stored.
func TestVouchersUpdateKeepsStockOverSold(t *testing.T) {
	t.Parallel()
	f := newOrderFixture(t)
	ctx := context.Background()
	v := f.voucher(t, 5)
	f.persist(t, reserve(1, v, 1, 1), reserve(2, v, 2, 1), reserve(3, v, 3, 1))
	_, err := f.vouchers.Update(ctx, v, ports.VoucherUpdate{Action: domain.AuditVoucherUpdate,
		Change: func(v domain.Voucher) (domain.Voucher, error) { v.Stock = 2; return v, nil }})
	if !errors.Is(err, domain.ErrNotEnoughUnits) {
		t.Fatalf("stock below the live units: %v, want %v", err, domain.ErrNotEnoughUnits)
	}
	if got, _ := f.vouchers.Get(ctx, v); got.Stock != 5 {
		t.Fatalf("stock %d stored, want 5", got.Stock)
	}
}

// TestAuditLogPages: newest first, one voucher's or all, a page after another by the
// last id; an entry of no voucher keeps none; entries cannot be changed or deleted.
func TestAuditLogPages(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := openMigrated(t)
	log := sqlstore.NewAuditLog(db)
	for i, v := range []domain.VoucherID{1, 2, 1, 0, 1} {
		e := domain.AuditEntry{Actor: "reconcile", Action: domain.AuditReconcileRepair, VoucherID: v,
			Before: json.RawMessage(fmt.Sprintf(`{"n":%d}`, i))}
		if err := log.Append(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	line := func(v, n int, after string) string {
		return fmt.Sprintf(`reconcile.repair reconcile  %d {"n":%d} %s`, v, n, after)
	}
	wantLines(t, "all", entries(t, log, ports.AuditQuery{}),
		[]string{line(1, 4, ""), line(0, 3, ""), line(1, 2, ""), line(2, 1, ""), line(1, 0, "")})
	wantLines(t, "voucher 1", entries(t, log, ports.AuditQuery{Voucher: 1}), []string{line(1, 4, ""), line(1, 2, ""), line(1, 0, "")})
	first, err := log.List(ctx, ports.AuditQuery{Voucher: 1, Limit: 2})
	if err != nil || len(first) != 2 {
		t.Fatalf("first page: %v, %v", first, err)
	}
	wantLines(t, "voucher 1 after the first page", entries(t, log, ports.AuditQuery{Voucher: 1, Before: first[1].ID}), []string{line(1, 0, "")})
	for i := 1; i < len(first); i++ {
		if !first[i].At.Before(first[i-1].At.Add(time.Millisecond)) || first[i].At != first[i].At.Truncate(time.Millisecond) {
			t.Fatalf("entry times %v, %v: want newest first, to the millisecond", first[i-1].At, first[i].At)
		}
	}
	if _, err := db.NewRaw("UPDATE audit_log SET actor = 'someone else'").Exec(ctx); err == nil {
		t.Fatal("an entry was changed")
	}
	if _, err := db.NewRaw("DELETE FROM audit_log").Exec(ctx); err == nil {
		t.Fatal("an entry was deleted")
	}
	if got := entries(t, log, ports.AuditQuery{}); len(got) != 5 {
		t.Fatalf("%d entries left, want 5", len(got))
	}
}

// TestUnitsByStatusHoldsTheMoment: while UnitsByStatus's at runs, a persist (which moves
// the sold counter) and an edit (Update) of the voucher wait; they commit once it has
// returned. And Hold keeps an edit waiting likewise.
func TestUnitsByStatusHoldsTheMoment(t *testing.T) {
	t.Parallel()
	f := newOrderFixture(t)
	ctx := context.Background()
	v := f.voucher(t, 10)
	f.persist(t, reserve(1, v, 1, 1))
	waits := func(what string, hold func(during func()) error, write func() error) {
		t.Helper()
		done := make(chan error, 1)
		err := hold(func() {
			go func() { done <- write() }()
			select {
			case err := <-done:
				t.Errorf("%s committed while held: %v", what, err)
			case <-time.After(300 * time.Millisecond):
			}
		})
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if err := <-done; err != nil {
			t.Fatalf("%s after the hold: %v", what, err)
		}
	}
	var during map[domain.OrderStatus]int
	waits("a persist under UnitsByStatus", func(run func()) error {
		units, err := f.orders.UnitsByStatus(ctx, v, func(context.Context) error { run(); return nil })
		during = units
		return err
	}, func() error { _, err := f.orders.Persist(ctx, []domain.Reservation{reserve(2, v, 2, 1)}); return err })
	if during[domain.StatusAwaitingPayment] != 1 {
		t.Fatalf("units read under the lock = %v, want the one order before", during)
	}
	rename := func() error {
		_, err := f.vouchers.Update(ctx, v, ports.VoucherUpdate{Action: domain.AuditVoucherUpdate,
			Change: func(v domain.Voucher) (domain.Voucher, error) { v.Title += "!"; return v, nil }})
		return err
	}
	waits("an edit under UnitsByStatus", func(run func()) error {
		_, err := f.orders.UnitsByStatus(ctx, v, func(context.Context) error { run(); return nil })
		return err
	}, rename)
	waits("an edit under Hold", func(run func()) error {
		return f.vouchers.Hold(ctx, v, func(context.Context, domain.Voucher) error { run(); return nil })
	}, rename)

	boom := errors.New("boom")
	if _, err := f.orders.UnitsByStatus(ctx, v, func(context.Context) error { return boom }); !errors.Is(err, boom) {
		t.Fatalf("UnitsByStatus with a failing at = %v, want %v", err, boom)
	}
	if err := f.vouchers.Hold(ctx, v+1000, func(context.Context, domain.Voucher) error { return nil }); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("Hold of an unknown voucher = %v, want %v", err, domain.ErrNotFound)
	}
}
