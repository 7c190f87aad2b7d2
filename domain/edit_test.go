package domain_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/seckill/seckill/domain"
)

func TestVoucherApply(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	v := domain.Voucher{ID: 7, Title: "Coffee", Stock: 10, BeginsAt: t0, EndsAt: t0.Add(time.Hour), PerUserLimit: 2, Version: 3}
	n := func(i int) *int { return &i }
	at := func(d time.Duration) *time.Time { x := t0.Add(d); return &x }
	title := func(s string) *string { return &s }
	upcoming, live := t0.Add(-time.Minute), t0.Add(time.Minute)
	for _, tc := range []struct {
		name string
		edit domain.VoucherEdit
		now  time.Time
		want func(*domain.Voucher) // nil: want err
		err  error
	}{
		{"add", domain.VoucherEdit{AddUnits: n(5)}, live, func(v *domain.Voucher) { v.Stock = 15; v.Version = 4 }, nil},
		{"remove below the limit", domain.VoucherEdit{RemoveUnits: n(9)}, live, nil, domain.ErrInvalid},
		{"remove to the limit", domain.VoucherEdit{RemoveUnits: n(8)}, live, func(v *domain.Voucher) { v.Stock = 2; v.Version = 4 }, nil},
		{"remove every unit", domain.VoucherEdit{RemoveUnits: n(10)}, live, nil, domain.ErrNotEnoughUnits},
		{"remove more", domain.VoucherEdit{RemoveUnits: n(11)}, live, nil, domain.ErrNotEnoughUnits},
		{"stock over the maximum", domain.VoucherEdit{AddUnits: n(domain.MaxStock)}, live, nil, domain.ErrInvalid},
		{"zero", domain.VoucherEdit{AddUnits: n(0)}, live, nil, domain.ErrInvalid},
		{"negative", domain.VoucherEdit{RemoveUnits: n(-1)}, live, nil, domain.ErrInvalid},
		{"over the bound", domain.VoucherEdit{AddUnits: n(domain.MaxEditUnits + 1)}, live, nil, domain.ErrInvalid},
		{"both", domain.VoucherEdit{AddUnits: n(1), RemoveUnits: n(1)}, live, nil, domain.ErrInvalid},
		{"nothing", domain.VoucherEdit{}, live, nil, domain.ErrInvalid},
		{"end now", domain.VoucherEdit{EndsAt: &live}, live, func(v *domain.Voucher) { v.EndsAt = live; v.Version = 4 }, nil},
		{"end to the millisecond", domain.VoucherEdit{EndsAt: at(time.Minute + 1500*time.Microsecond)}, live,
			func(v *domain.Voucher) { v.EndsAt = t0.Add(time.Minute + time.Millisecond); v.Version = 4 }, nil},
		{"end at the start", domain.VoucherEdit{EndsAt: at(0)}, live, nil, domain.ErrInvalid},
		{"end before the start", domain.VoucherEdit{EndsAt: at(-time.Hour)}, live, nil, domain.ErrInvalid},
		{"start while upcoming", domain.VoucherEdit{BeginsAt: at(-time.Hour)}, upcoming, func(v *domain.Voucher) { v.BeginsAt = t0.Add(-time.Hour); v.Version = 4 }, nil},
		{"start once started", domain.VoucherEdit{BeginsAt: at(-time.Hour)}, t0, nil, domain.ErrAlreadyStarted},
		{"start after the end", domain.VoucherEdit{BeginsAt: at(2 * time.Hour)}, upcoming, nil, domain.ErrInvalid},
		{"limit", domain.VoucherEdit{PerUserLimit: n(5)}, live, func(v *domain.Voucher) { v.PerUserLimit = 5; v.Version = 4 }, nil},
		{"limit over the stock", domain.VoucherEdit{PerUserLimit: n(11)}, live, nil, domain.ErrInvalid},
		{"title: not a term", domain.VoucherEdit{Title: title("Tea")}, live, func(v *domain.Voucher) { v.Title = "Tea" }, nil},
		{"blank title", domain.VoucherEdit{Title: title(" ")}, live, nil, domain.ErrInvalid},
		{"the same limit: no new version", domain.VoucherEdit{PerUserLimit: n(2)}, live, func(*domain.Voucher) {}, nil},
	} {
		got, err := v.Apply(tc.edit, tc.now)
		if tc.err != nil {
			if !errors.Is(err, tc.err) {
				t.Errorf("%s: err %v, want %v", tc.name, err, tc.err)
			}
			continue
		}
		want := v
		tc.want(&want)
		if err != nil || !got.Terms(want) || got.Title != want.Title || got.Version != want.Version {
			t.Errorf("%s: %+v, %v; want %+v", tc.name, got, err, want)
		}
	}
	if v.Stock != 10 || v.Version != 3 {
		t.Fatalf("Apply changed its receiver: %+v", v)
	}
}

func TestVoucherAudit(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	v := domain.Voucher{ID: 7, Title: "Coffee", Stock: 10, BeginsAt: t0, EndsAt: t0.Add(time.Hour), PerUserLimit: 2}
	by := domain.Author{Actor: "1", RequestID: "r"}
	created := domain.VoucherAudit(domain.AuditVoucherCreate, by, nil, v)
	if created.Before != nil || created.VoucherID != 7 || created.Actor != "1" || created.RequestID != "r" ||
		string(created.After) != `{"begins_at":"2026-01-01T00:00:00.000Z","ends_at":"2026-01-01T01:00:00.000Z","paused":false,"per_user_limit":2,"stock":10,"title":"Coffee"}` {
		t.Fatalf("create entry: %+v (%s)", created, created.After)
	}
	w := v
	w.Stock, w.Paused, w.Title = 12, true, `"quoted"`
	got := domain.VoucherAudit(domain.AuditVoucherUpdate, by, &v, w)
	if b, a := string(got.Before), string(got.After); b != `{"paused":false,"stock":10,"title":"Coffee"}` ||
		a != `{"paused":true,"stock":12,"title":"\"quoted\""}` || !strings.Contains(a, `\"quoted\"`) {
		t.Fatalf("update entry: before %s, after %s", b, a)
	}
}
