package domain_test

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/seckill/seckill/domain"
)

func TestOrderStatusReachableFrom(t *testing.T) {
	t.Parallel()
	tests := []struct {
		to   domain.OrderStatus
		from []domain.OrderStatus
	}{
		{domain.StatusQueued, nil},
		{domain.StatusAwaitingPayment, []domain.OrderStatus{domain.StatusQueued}},
		{domain.StatusPaid, []domain.OrderStatus{domain.StatusAwaitingPayment}},
		{domain.StatusCancelled, []domain.OrderStatus{domain.StatusAwaitingPayment}},
		{domain.StatusExpired, []domain.OrderStatus{domain.StatusAwaitingPayment}},
		{domain.StatusFailed, []domain.OrderStatus{domain.StatusQueued, domain.StatusAwaitingPayment}},
		{"shipped", nil},
	}
	for _, tc := range tests {
		from := tc.to.ReachableFrom()
		if !slices.Equal(from, tc.from) {
			t.Errorf("%s.ReachableFrom() = %v, want %v", tc.to, from, tc.from)
		}
		// The list and CanBecome are one table read two ways.
		for _, f := range allStatuses {
			if got, want := slices.Contains(from, f), f.CanBecome(tc.to); got != want {
				t.Errorf("%s in %s.ReachableFrom() = %v, but %s.CanBecome(%s) = %v", f, tc.to, got, f, tc.to, want)
			}
		}
	}
}

// TestOrderStatusNoReturn holds the promise the stores' retries rely on: a status an
// order has left is never reached again.
func TestOrderStatusNoReturn(t *testing.T) {
	t.Parallel()
	for _, start := range allStatuses {
		seen := map[domain.OrderStatus]bool{start: true}
		walk := []domain.OrderStatus{start}
		for len(walk) > 0 {
			s := walk[0]
			walk = walk[1:]
			for _, next := range allStatuses {
				if !s.CanBecome(next) {
					continue
				}
				if next == start {
					t.Fatalf("%s comes back to itself through %s", start, s)
				}
				if !seen[next] {
					seen[next] = true
					walk = append(walk, next)
				}
			}
		}
	}
}

func TestReservationValidate(t *testing.T) {
	t.Parallel()
	ok := domain.Reservation{OrderID: "o1", VoucherID: 1, UserID: 1, Quantity: 1, At: time.Unix(0, 0)}
	if err := ok.Validate(); err != nil {
		t.Fatalf("a valid reservation: %v", err)
	}
	tests := []struct {
		name  string
		edit  func(*domain.Reservation)
		field string
	}{
		{"zero quantity", func(r *domain.Reservation) { r.Quantity = 0 }, "quantity"},
		{"negative quantity", func(r *domain.Reservation) { r.Quantity = -1 }, "quantity"},
		{"no order id", func(r *domain.Reservation) { r.OrderID = "" }, "order_id"},
		{"zero user", func(r *domain.Reservation) { r.UserID = 0 }, "user"},
		{"negative user", func(r *domain.Reservation) { r.UserID = -1 }, "user"},
		// Several wrong fields: the first in Validate's order is named.
		{"everything wrong", func(r *domain.Reservation) { *r = domain.Reservation{} }, "quantity"},
		{"order id and user", func(r *domain.Reservation) { r.OrderID, r.UserID = "", 0 }, "order_id"},
	}
	for _, tc := range tests {
		r := ok
		tc.edit(&r)
		var ve *domain.ValidationError
		if err := r.Validate(); !errors.As(err, &ve) || ve.Field != tc.field || !errors.Is(err, domain.ErrInvalid) {
			t.Errorf("%s: Validate() = %v, want a *ValidationError on %s", tc.name, err, tc.field)
		}
	}
}

// allStatuses lists every order status.
var allStatuses = []domain.OrderStatus{domain.StatusQueued, domain.StatusAwaitingPayment, domain.StatusPaid,
	domain.StatusCancelled, domain.StatusExpired, domain.StatusFailed}

// An unpaid order's deadline: created_at plus the window while it is queued or
// awaiting payment, none after; it lapses strictly after the deadline, the moment the
// sweeper's cutoff passes its created_at.
func TestPaymentWindow(t *testing.T) {
	t.Parallel()
	w := domain.PaymentWindow(15 * time.Minute)
	created := time.Date(2026, 1, 1, 12, 0, 0, 123_000_000, time.UTC)
	deadline := created.Add(15 * time.Minute)
	for _, s := range allStatuses {
		at, ok := w.ExpiresAt(domain.Order{Status: s, CreatedAt: created})
		unpaid := s == domain.StatusQueued || s == domain.StatusAwaitingPayment
		if ok != unpaid || (ok && !at.Equal(deadline)) {
			t.Errorf("%s: ExpiresAt = %v, %v; want %v, %v", s, at, ok, deadline, unpaid)
		}
	}
	o := domain.Order{Status: domain.StatusAwaitingPayment, CreatedAt: created}
	for _, tc := range []struct {
		now  time.Time
		want bool
	}{{deadline.Add(-time.Millisecond), false}, {deadline, false}, {deadline.Add(time.Nanosecond), true}} {
		if got := w.Lapsed(o, tc.now); got != tc.want {
			t.Errorf("Lapsed at %v = %v, want %v", tc.now, got, tc.want)
		}
		// The sweeper expires what was created before DueBefore: the lapsed ones.
		if swept := o.CreatedAt.Before(w.DueBefore(tc.now)); swept != tc.want {
			t.Errorf("at %v the sweeper's cutoff takes it: %v, want %v", tc.now, swept, tc.want)
		}
	}
	if w.Lapsed(domain.Order{Status: domain.StatusPaid, CreatedAt: created}, deadline.Add(time.Hour)) {
		t.Error("a paid order lapsed")
	}
}
