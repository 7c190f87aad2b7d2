package application_test

import (
	"context"
	"encoding/base64"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/seckill/seckill/adapters/memory"
	"github.com/seckill/seckill/application"
	"github.com/seckill/seckill/domain"
	"github.com/seckill/seckill/ports"
)

// grabAt has user grab one unit of voucher v with the clock at t0+at.
func (s sale) grabAt(t *testing.T, v domain.VoucherID, user domain.UserID, at time.Duration) domain.Reservation {
	t.Helper()
	s.clock.Set(t0.Add(at))
	r, err := s.grab.Handle(context.Background(), application.GrabVoucherCmd{VoucherID: v, UserID: user, Quantity: 1})
	if err != nil {
		t.Fatalf("grab voucher %s: %v", v, err)
	}
	return r
}

// vouchers creates n more vouchers on sale in s and returns their ids, oldest first.
func (s sale) moreVouchers(t *testing.T, n int) []domain.VoucherID {
	t.Helper()
	create := application.NewCreateVoucher(s.vouchers, s.stock, s.clock)
	var ids []domain.VoucherID
	for range n {
		v, err := create.Handle(context.Background(), application.CreateVoucherCmd{
			Title: "more", Stock: 10, BeginsAt: t0, EndsAt: t0.Add(time.Hour), PerUserLimit: 1})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, v.ID)
	}
	return ids
}

// persist persists the next n queued reservations, in the order they were taken.
func (s sale) persist(t *testing.T, n int) {
	t.Helper()
	// The oldest first: those an earlier call left delivered, then the rest, all read
	// at once (a read takes up to its count from each voucher's queue).
	ds, err := s.queue.Claim(context.Background(), 0, n)
	if err == nil && len(ds) < n {
		var more []ports.Delivery
		more, err = s.queue.Read(context.Background(), 100, 0)
		ds = append(ds, more...)
	}
	if err != nil || len(ds) < n {
		t.Fatalf("read %d entries: %d, %v", n, len(ds), err)
	}
	if _, err := s.fulfill.Handle(context.Background(), ds[:n]); err != nil {
		t.Fatal(err)
	}
}

type listed struct {
	id     domain.OrderID
	status domain.OrderStatus
}

// walkOrders lists user's orders in pages of limit and returns every page.
func walkOrders(t *testing.T, list *application.ListOrders, user domain.UserID, q application.ListOrdersQuery) [][]listed {
	t.Helper()
	var pages [][]listed
	for {
		if len(pages) > 10 {
			t.Fatalf("more than 10 pages: %v", pages)
		}
		page, err := list.Handle(context.Background(), application.Caller{User: user}, q)
		if err != nil {
			t.Fatalf("list %+v: %v", q, err)
		}
		var got []listed
		for _, o := range page.Orders {
			got = append(got, listed{o.ID, o.Status})
		}
		pages = append(pages, got)
		if page.NextCursor == "" {
			return pages
		}
		q.Cursor = page.NextCursor
	}
}

func TestListOrdersPages(t *testing.T) {
	t.Parallel()
	s := newSale(t, 10, 1)
	vs := append([]domain.VoucherID{s.id}, s.moreVouchers(t, 4)...)
	var rs []domain.Reservation
	for i, v := range vs {
		rs = append(rs, s.grabAt(t, v, 5, time.Duration(i+1)*time.Second))
	}
	s.grabAt(t, vs[0], 6, 10*time.Second) // another user's
	s.persist(t, 3)                       // the two newest of user 5 stay queued
	list := application.NewListOrders(s.orders, memory.Reservations{Stock: s.stock})

	queued, waiting := domain.StatusQueued, domain.StatusAwaitingPayment
	want := [][]listed{
		{{rs[4].OrderID, queued}, {rs[3].OrderID, queued}},
		{{rs[2].OrderID, waiting}, {rs[1].OrderID, waiting}},
		{{rs[0].OrderID, waiting}},
	}
	if got := walkOrders(t, list, 5, application.ListOrdersQuery{Limit: 2}); !slices.EqualFunc(got, want, slices.Equal) {
		t.Fatalf("pages of 2 = %v, want %v", got, want)
	}
	if got := walkOrders(t, list, 5, application.ListOrdersQuery{}); len(got) != 1 || len(got[0]) != 5 {
		t.Fatalf("default page = %v, want one page of all 5", got)
	}
	if got := walkOrders(t, list, 5, application.ListOrdersQuery{Voucher: vs[3], Limit: 1}); !slices.EqualFunc(got, [][]listed{{{rs[3].OrderID, queued}}}, slices.Equal) {
		t.Fatalf("orders of voucher %s = %v", vs[3], got)
	}

	// The queued ones become rows between two pages: each is still listed once.
	first, err := list.Handle(context.Background(), application.Caller{User: 5}, application.ListOrdersQuery{Limit: 2})
	if err != nil || len(first.Orders) != 2 || first.Orders[1].ID != rs[3].OrderID {
		t.Fatalf("first page = %+v, %v", first, err)
	}
	s.persist(t, 1) // the other user's
	s.persist(t, 2)
	var rest []domain.OrderID
	for q := (application.ListOrdersQuery{Limit: 2, Cursor: first.NextCursor}); ; {
		page, err := list.Handle(context.Background(), application.Caller{User: 5}, q)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range page.Orders {
			rest = append(rest, o.ID)
		}
		if q.Cursor = page.NextCursor; q.Cursor == "" {
			break
		}
	}
	if w := []domain.OrderID{rs[2].OrderID, rs[1].OrderID, rs[0].OrderID}; !slices.Equal(rest, w) {
		t.Fatalf("after the first page: %v, want %v", rest, w)
	}
}

// A reservation still queued behind newer orders already persisted is listed in its
// place, on a later page, not first.
func TestListOrdersQueuedBehindRows(t *testing.T) {
	t.Parallel()
	s := newSale(t, 10, 1)
	vs := append([]domain.VoucherID{s.id}, s.moreVouchers(t, 2)...)
	newer := s.grabAt(t, vs[1], 5, 3*time.Second)
	middle := s.grabAt(t, vs[2], 5, 2*time.Second)
	older := s.grabAt(t, vs[0], 5, time.Second)
	s.persist(t, 2)
	list := application.NewListOrders(s.orders, memory.Reservations{Stock: s.stock})
	want := [][]listed{
		{{newer.OrderID, domain.StatusAwaitingPayment}},
		{{middle.OrderID, domain.StatusAwaitingPayment}},
		{{older.OrderID, domain.StatusQueued}},
	}
	if got := walkOrders(t, list, 5, application.ListOrdersQuery{Limit: 1}); !slices.EqualFunc(got, want, slices.Equal) {
		t.Fatalf("pages of 1 = %v, want %v", got, want)
	}
}

func TestListOrdersRefusesBadPages(t *testing.T) {
	t.Parallel()
	s := newSale(t, 10, 1)
	for range 3 {
		s.grabAt(t, s.moreVouchers(t, 1)[0], 5, time.Second)
	}
	list := application.NewListOrders(s.orders, memory.Reservations{Stock: s.stock})
	ctx, me := context.Background(), application.Caller{User: 5}
	page, err := list.Handle(ctx, me, application.ListOrdersQuery{Limit: 1})
	if err != nil || page.NextCursor == "" {
		t.Fatalf("first page: %+v, %v", page, err)
	}
	vouchers, err := application.NewListVouchers(s.vouchers, s.stock, s.clock).Handle(ctx, application.ListVouchersQuery{Limit: 1})
	if err != nil || vouchers.NextCursor == "" {
		t.Fatalf("vouchers: %+v, %v", vouchers, err)
	}
	enc := base64.RawURLEncoding.EncodeToString
	for _, tc := range []struct {
		name  string
		q     application.ListOrdersQuery
		field string
	}{
		{"limit too big", application.ListOrdersQuery{Limit: application.MaxPageLimit + 1}, "limit"},
		{"negative limit", application.ListOrdersQuery{Limit: -1}, "limit"},
		{"not base64", application.ListOrdersQuery{Cursor: "%%%"}, "cursor"},
		{"padded", application.ListOrdersQuery{Cursor: page.NextCursor + "="}, "cursor"},
		{"garbage", application.ListOrdersQuery{Cursor: enc([]byte("hello"))}, "cursor"},
		{"a voucher cursor", application.ListOrdersQuery{Cursor: vouchers.NextCursor}, "cursor"},
		{"another filter's", application.ListOrdersQuery{Voucher: s.id, Cursor: page.NextCursor}, "cursor"},
		{"not canonical", application.ListOrdersQuery{Cursor: enc([]byte("o|0|+1|X"))}, "cursor"},
		{"empty id", application.ListOrdersQuery{Cursor: enc([]byte("o|0|1|"))}, "cursor"},
		{"NUL in the id", application.ListOrdersQuery{Cursor: enc([]byte("o|0|1|A\x00"))}, "cursor"},
		{"quote in the id", application.ListOrdersQuery{Cursor: enc([]byte("o|0|1|A'"))}, "cursor"},
	} {
		var ve *domain.ValidationError
		if _, err := list.Handle(ctx, me, tc.q); !errors.As(err, &ve) || ve.Field != tc.field {
			t.Errorf("%s: %v, want a validation error on %s", tc.name, err, tc.field)
		}
	}
}

func TestListVouchersPages(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	vouchers, stock, clock := memory.NewVouchers(), memory.NewStock(), memory.NewClock(t0)
	create := application.NewCreateVoucher(vouchers, stock, clock)
	windows := []struct{ begins, ends time.Duration }{
		{0, time.Hour},                // live at t0+30m
		{time.Hour, 2 * time.Hour},    // upcoming
		{0, 10 * time.Minute},         // ended
		{30 * time.Minute, time.Hour}, // live: begins at that moment
		{0, 30 * time.Minute},         // ended: ends at that moment
	}
	var ids []domain.VoucherID
	for _, w := range windows {
		v, err := create.Handle(ctx, application.CreateVoucherCmd{Title: "v", Stock: 3, BeginsAt: t0.Add(w.begins), EndsAt: t0.Add(w.ends), PerUserLimit: 1})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, v.ID)
	}
	clock.Set(t0.Add(30 * time.Minute))
	list := application.NewListVouchers(vouchers, stock, clock)

	walk := func(q application.ListVouchersQuery) [][]domain.VoucherID {
		t.Helper()
		var pages [][]domain.VoucherID
		for len(pages) <= 10 {
			page, err := list.Handle(ctx, q)
			if err != nil {
				t.Fatalf("list %+v: %v", q, err)
			}
			var got []domain.VoucherID
			for _, v := range page.Vouchers {
				if v.Remaining != 3 {
					t.Fatalf("voucher %s remaining %d, want 3", v.ID, v.Remaining)
				}
				got = append(got, v.ID)
			}
			pages = append(pages, got)
			if page.NextCursor == "" {
				return pages
			}
			q.Cursor = page.NextCursor
		}
		t.Fatalf("more than 10 pages: %v", pages)
		return nil
	}
	for _, tc := range []struct {
		q    application.ListVouchersQuery
		want [][]domain.VoucherID
	}{
		{application.ListVouchersQuery{Limit: 2}, [][]domain.VoucherID{{ids[4], ids[3]}, {ids[2], ids[1]}, {ids[0]}}},
		{application.ListVouchersQuery{}, [][]domain.VoucherID{{ids[4], ids[3], ids[2], ids[1], ids[0]}}},
		{application.ListVouchersQuery{Limit: 5}, [][]domain.VoucherID{{ids[4], ids[3], ids[2], ids[1], ids[0]}}},
		{application.ListVouchersQuery{Limit: 1, Status: "live"}, [][]domain.VoucherID{{ids[3]}, {ids[0]}}},
		{application.ListVouchersQuery{Status: "upcoming"}, [][]domain.VoucherID{{ids[1]}}},
		{application.ListVouchersQuery{Limit: 1, Status: "ended"}, [][]domain.VoucherID{{ids[4]}, {ids[2]}}},
	} {
		if got := walk(tc.q); !slices.EqualFunc(got, tc.want, slices.Equal) {
			t.Errorf("%+v: pages %v, want %v", tc.q, got, tc.want)
		}
	}

	first, err := list.Handle(ctx, application.ListVouchersQuery{Limit: 1, Status: "live"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		q     application.ListVouchersQuery
		field string
	}{
		{"limit too big", application.ListVouchersQuery{Limit: 201}, "limit"},
		{"unknown status", application.ListVouchersQuery{Status: "soon"}, "status"},
		{"another status's cursor", application.ListVouchersQuery{Status: "ended", Cursor: first.NextCursor}, "cursor"},
		{"no status with a filtered cursor", application.ListVouchersQuery{Cursor: first.NextCursor}, "cursor"},
		{"not an id", application.ListVouchersQuery{Cursor: base64.RawURLEncoding.EncodeToString([]byte("v||07"))}, "cursor"},
	} {
		var ve *domain.ValidationError
		if _, err := list.Handle(ctx, tc.q); !errors.As(err, &ve) || ve.Field != tc.field {
			t.Errorf("%s: %v, want a validation error on %s", tc.name, err, tc.field)
		}
	}
}
