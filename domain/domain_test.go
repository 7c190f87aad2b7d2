package domain_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/seckill/seckill/domain"
)

func TestParseIDs(t *testing.T) {
	t.Parallel()
	good := map[string]int64{"1": 1, "42": 42, "9223372036854775807": 1<<63 - 1}
	for s, want := range good {
		if id, err := domain.ParseVoucherID(s); err != nil || int64(id) != want {
			t.Errorf("ParseVoucherID(%q) = %d, %v", s, id, err)
		}
		if id, err := domain.ParseUserID(s); err != nil || int64(id) != want {
			t.Errorf("ParseUserID(%q) = %d, %v", s, id, err)
		}
	}
	for _, s := range []string{"", "0", "-1", "+1", "1.5", "abc", " 1", "9223372036854775808", "0x10", "1e3", "01", "007", "00"} {
		if _, err := domain.ParseVoucherID(s); !errors.Is(err, domain.ErrInvalid) {
			t.Errorf("ParseVoucherID(%q) err = %v, want ErrInvalid", s, err)
		}
		if _, err := domain.ParseUserID(s); !errors.Is(err, domain.ErrInvalid) {
			t.Errorf("ParseUserID(%q) err = %v, want ErrInvalid", s, err)
		}
	}
}

func TestVoucherValidate(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ok := domain.Voucher{Title: "x", Stock: 10, BeginsAt: t0, EndsAt: t0.Add(time.Minute), PerUserLimit: 1}
	if err := ok.Validate(); err != nil {
		t.Fatalf("valid voucher: %v", err)
	}
	bad := map[string]func(*domain.Voucher){
		"title":          func(v *domain.Voucher) { v.Title = strings.Repeat("é", domain.MaxTitleLength+1) },
		"stock":          func(v *domain.Voucher) { v.Stock = domain.MaxStock + 1 },
		"ends_at":        func(v *domain.Voucher) { v.EndsAt = v.BeginsAt.Add(-time.Second) },
		"begins_at":      func(v *domain.Voucher) { v.BeginsAt = time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC) },
		"per_user_limit": func(v *domain.Voucher) { v.PerUserLimit = -1 },
	}
	for field, edit := range bad {
		v := ok
		edit(&v)
		var ve *domain.ValidationError
		if err := v.Validate(); !errors.As(err, &ve) || ve.Field != field || !errors.Is(err, domain.ErrInvalid) {
			t.Errorf("%s: err = %v", field, err)
		}
	}
}

func TestVoucherTitle(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, title := range []string{"x", "Café au lait", "咖啡", "👨\u200d👩\u200d👧 family", strings.Repeat("é", domain.MaxTitleLength), "tab-free title"} {
		v := domain.Voucher{Title: title, Stock: 1, BeginsAt: t0, EndsAt: t0.Add(time.Minute), PerUserLimit: 1}
		if err := v.Validate(); err != nil {
			t.Errorf("title %q: %v", title, err)
		}
	}
	for _, title := range []string{"", "   ", "a\x00b", "a\tb", "line\nbreak", "bell\a", "del\x7f", "c1\u0085", "sep\u2028", "para\u2029", "private\ue000", "bad\xffutf8", strings.Repeat("x", domain.MaxTitleLength+1)} {
		v := domain.Voucher{Title: title, Stock: 1, BeginsAt: t0, EndsAt: t0.Add(time.Minute), PerUserLimit: 1}
		var ve *domain.ValidationError
		if err := v.Validate(); !errors.As(err, &ve) || ve.Field != "title" {
			t.Errorf("title %q: err = %v, want a validation error on title", title, err)
		}
	}
}

func TestVoucherValidateNew(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	v := domain.Voucher{Title: "x", Stock: 1, BeginsAt: t0.Add(-time.Hour), EndsAt: t0.Add(time.Minute), PerUserLimit: 1}
	if err := v.ValidateNew(t0); err != nil {
		t.Fatalf("a sale that has begun but not ended: %v", err)
	}
	for _, now := range []time.Time{t0.Add(time.Minute), t0.Add(time.Hour)} {
		var ve *domain.ValidationError
		if err := v.ValidateNew(now); !errors.As(err, &ve) || ve.Field != "ends_at" {
			t.Errorf("created at %v, ending %v: err = %v, want a validation error on ends_at", now, v.EndsAt, err)
		}
	}
	v.Stock = 0
	var ve *domain.ValidationError
	if err := v.ValidateNew(t0); !errors.As(err, &ve) || ve.Field != "stock" {
		t.Errorf("ValidateNew skips Validate: err = %v", err)
	}
}

func TestVoucherWindow(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	v := domain.Voucher{BeginsAt: t0, EndsAt: t0.Add(time.Minute)}
	cases := []struct {
		at   time.Time
		want error
	}{
		{t0.Add(-time.Nanosecond), domain.ErrNotStarted},
		{t0, nil},
		{t0.Add(time.Minute - time.Nanosecond), nil},
		{t0.Add(time.Minute), domain.ErrEnded},
	}
	for _, c := range cases {
		if got := v.Window(c.at); !errors.Is(got, c.want) {
			t.Errorf("Window(%v) = %v, want %v", c.at, got, c.want)
		}
	}
}

func TestOrderTransitions(t *testing.T) {
	t.Parallel()
	allowed := map[[2]domain.OrderStatus]bool{
		{domain.StatusQueued, domain.StatusAwaitingPayment}:    true,
		{domain.StatusQueued, domain.StatusFailed}:             true,
		{domain.StatusAwaitingPayment, domain.StatusPaid}:      true,
		{domain.StatusAwaitingPayment, domain.StatusCancelled}: true,
		{domain.StatusAwaitingPayment, domain.StatusExpired}:   true,
		{domain.StatusAwaitingPayment, domain.StatusFailed}:    true,
	}
	for _, from := range allStatuses {
		if !from.Valid() {
			t.Errorf("%s not valid", from)
		}
		for _, to := range allStatuses {
			if got, want := from.CanBecome(to), allowed[[2]domain.OrderStatus{from, to}]; got != want {
				t.Errorf("%s -> %s allowed = %v, want %v", from, to, got, want)
			}
		}
	}
	if domain.OrderStatus("shipped").Valid() {
		t.Error("unknown status is valid")
	}
	for s, holds := range map[domain.OrderStatus]bool{domain.StatusQueued: true, domain.StatusAwaitingPayment: true,
		domain.StatusPaid: true, domain.StatusCancelled: false, domain.StatusExpired: false, domain.StatusFailed: false} {
		if s.HoldsStock() != holds {
			t.Errorf("%s holds stock = %v", s, !holds)
		}
	}
}

func TestAlreadyPurchasedError(t *testing.T) {
	t.Parallel()
	var err error = &domain.AlreadyPurchasedError{OrderID: "o1"}
	if !errors.Is(err, domain.ErrAlreadyPurchased) || errors.Is(err, domain.ErrSoldOut) {
		t.Fatalf("errors.Is wrong for %v", err)
	}
}

func TestVoucherTimesInRange(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for field, edit := range map[string]func(*domain.Voucher){
		"begins_at": func(v *domain.Voucher) { v.BeginsAt = time.Date(1969, 12, 31, 0, 0, 0, 0, time.UTC) },
		"ends_at":   func(v *domain.Voucher) { v.EndsAt = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC) },
	} {
		v := domain.Voucher{Title: "x", Stock: 1, BeginsAt: t0, EndsAt: t0.Add(time.Hour), PerUserLimit: 1}
		edit(&v)
		var ve *domain.ValidationError
		if err := v.Validate(); !errors.As(err, &ve) || ve.Field != field {
			t.Errorf("%s out of range: err = %v", field, err)
		}
	}
	v := domain.Voucher{Title: "x", Stock: 1, BeginsAt: time.Unix(0, 0), EndsAt: time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC), PerUserLimit: 1}
	if err := v.Validate(); err != nil {
		t.Errorf("the widest window: %v", err)
	}
}
