package application_test

import (
	"cmp"
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

// voucherOrders is a voucher with n persisted orders, ids 1..n in order, and every
// third one paid.
type voucherOrders struct {
	vouchers *memory.Vouchers
	orders   *memory.Orders
	id       domain.VoucherID
	ids      []domain.OrderID
}

func newVoucherOrders(t *testing.T, n int) voucherOrders {
	t.Helper()
	ctx := context.Background()
	vouchers := memory.NewVouchers()
	v := domain.Voucher{Title: "big", Stock: n + 1, BeginsAt: t0, EndsAt: t0.Add(time.Hour), PerUserLimit: 1}
	if err := vouchers.Create(ctx, &v, domain.Author{}, nil); err != nil {
		t.Fatal(err)
	}
	orders := memory.NewOrders(vouchers)
	f := voucherOrders{vouchers: vouchers, orders: orders, id: v.ID}
	var rs []domain.Reservation
	for i := 1; i <= n; i++ {
		id := domain.OrderID(fmt.Sprintf("01KB%022d", i))
		rs = append(rs, domain.Reservation{OrderID: id, VoucherID: v.ID, UserID: domain.UserID(i), Quantity: 1, At: t0})
		f.ids = append(f.ids, id)
	}
	if _, err := orders.Persist(ctx, rs); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i += 3 {
		if _, err := orders.Transition(ctx, f.ids[i], 0, domain.StatusPaid, nil); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

// A voucher's orders page oldest first, filtered by status; bad input is a validation
// error and an unknown voucher not found.
func TestListVoucherOrders(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newVoucherOrders(t, 7)
	list := application.NewListVoucherOrders(f.vouchers, f.orders)
	walk := func(status string, limit int) []domain.OrderID {
		t.Helper()
		var ids []domain.OrderID
		q := application.VoucherOrdersQuery{Voucher: f.id, Status: status, Limit: limit}
		for pages := 0; ; pages++ {
			page, err := list.Handle(ctx, q)
			if err != nil || pages > 10 {
				t.Fatalf("page %d of %+v: %v", pages, q, err)
			}
			for _, o := range page.Orders {
				ids = append(ids, o.ID)
			}
			if page.NextCursor == "" {
				return ids
			}
			q.Cursor = page.NextCursor
		}
	}
	paid := []domain.OrderID{f.ids[0], f.ids[3], f.ids[6]}
	for _, limit := range []int{1, 2, 3, 7, 0} {
		if got := walk("", limit); !slices.Equal(got, f.ids) {
			t.Fatalf("pages of %d: %v, want %v", limit, got, f.ids)
		}
		if got := walk("paid", limit); !slices.Equal(got, paid) {
			t.Fatalf("paid, pages of %d: %v, want %v", limit, got, paid)
		}
	}
	first, err := list.Handle(ctx, application.VoucherOrdersQuery{Voucher: f.id, Limit: 2})
	if err != nil || first.NextCursor == "" {
		t.Fatalf("first page: %+v, %v", first, err)
	}
	for name, q := range map[string]application.VoucherOrdersQuery{
		"queued status":            {Voucher: f.id, Status: "queued"},
		"unknown status":           {Voucher: f.id, Status: "shipped"},
		"limit over the maximum":   {Voucher: f.id, Limit: application.MaxPageLimit + 1},
		"garbage cursor":           {Voucher: f.id, Cursor: "!!"},
		"cursor of another filter": {Voucher: f.id, Status: "paid", Cursor: first.NextCursor},
		"cursor of another list":   {Voucher: f.id + 1, Cursor: first.NextCursor},
	} {
		if _, err := list.Handle(ctx, q); !errors.Is(err, domain.ErrInvalid) {
			t.Errorf("%s: %v, want a validation error", name, err)
		}
	}
	if _, err := list.Handle(ctx, application.VoucherOrdersQuery{Voucher: f.id + 1}); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("unknown voucher: %v, want ErrNotFound", err)
	}
}

// generatedOrders is a voucher's n orders, ids 1..n in order, every third paid,
// listed as ports.VoucherOrders lists them; it counts the pages read and fails the
// read numbered failAt.
type generatedOrders struct {
	voucher       domain.VoucherID
	all           []domain.Order
	reads, failAt int
}

func newGeneratedOrders(voucher domain.VoucherID, n int) *generatedOrders {
	g := &generatedOrders{voucher: voucher}
	for i := range n {
		status := domain.StatusAwaitingPayment
		if i%3 == 0 {
			status = domain.StatusPaid
		}
		g.all = append(g.all, domain.Order{ID: domain.OrderID(fmt.Sprintf("01KB%022d", i+1)), VoucherID: voucher,
			UserID: domain.UserID(i + 1), Quantity: 1, Status: status, CreatedAt: t0})
	}
	return g
}

func (g *generatedOrders) ListByVoucher(ctx context.Context, v domain.VoucherID, q ports.VoucherOrderQuery) ([]domain.Order, error) {
	g.reads++
	if _, ok := ctx.Deadline(); !ok {
		return nil, errors.New("a page read without a deadline")
	}
	if g.reads == g.failAt {
		return nil, domain.ErrUnavailable
	}
	out := []domain.Order{}
	from, _ := slices.BinarySearchFunc(g.all, q.After, func(o domain.Order, id domain.OrderID) int { return cmp.Compare(o.ID, id) })
	for _, o := range g.all[from:] {
		if len(out) == q.Limit {
			break
		}
		if v == g.voucher && o.ID > q.After && (q.Status == "" || o.Status == q.Status) {
			out = append(out, o)
		}
	}
	return out, nil
}

// An export yields every order, oldest first, a page at a time as it is iterated —
// each read under a deadline of its own, none before the first page is asked for, none
// after the reader stops — and ends with the error of a read that fails.
func TestExportVoucherOrders(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const n = 2*application.ExportPage + 345 // three pages, the last of 345
	vouchers := memory.NewVouchers()
	v := domain.Voucher{Title: "big", Stock: n, BeginsAt: t0, EndsAt: t0.Add(time.Hour), PerUserLimit: 1}
	if err := vouchers.Create(ctx, &v, domain.Author{}, nil); err != nil {
		t.Fatal(err)
	}
	reads := newGeneratedOrders(v.ID, n)
	export := application.NewExportVoucherOrders(vouchers, reads)
	pages, err := export.Handle(ctx, application.VoucherOrdersQuery{Voucher: v.ID})
	if err != nil {
		t.Fatal(err)
	}
	if reads.reads != 0 {
		t.Fatalf("%d pages read before the export was iterated", reads.reads)
	}
	var got []domain.OrderID
	var sizes []int
	for page, err := range pages {
		if err != nil {
			t.Fatal(err)
		}
		sizes = append(sizes, len(page))
		for _, o := range page {
			got = append(got, o.ID)
		}
	}
	var want []domain.OrderID
	for _, o := range reads.all {
		want = append(want, o.ID)
	}
	if !slices.Equal(got, want) || !slices.Equal(sizes, []int{application.ExportPage, application.ExportPage, 345}) || reads.reads != 3 {
		t.Fatalf("exported %d orders in pages %v with %d reads; want all %d in order, in pages of %d", len(got), sizes, reads.reads, n, application.ExportPage)
	}

	// The paid ones only: every third.
	paid, err := export.Handle(ctx, application.VoucherOrdersQuery{Voucher: v.ID, Status: "paid"})
	if err != nil {
		t.Fatal(err)
	}
	count := 0
	for page, err := range paid {
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range page {
			if o.Status != domain.StatusPaid {
				t.Fatalf("exported %+v among the paid", o)
			}
			count++
		}
	}
	if count != (n+2)/3 {
		t.Fatalf("exported %d paid orders, want %d", count, (n+2)/3)
	}

	// A reader that stops after the first page reads no more.
	reads.reads = 0
	pages, _ = export.Handle(ctx, application.VoucherOrdersQuery{Voucher: v.ID})
	for _, err := range pages {
		if err != nil {
			t.Fatal(err)
		}
		break
	}
	if reads.reads != 1 {
		t.Fatalf("%d pages read for a reader that took one", reads.reads)
	}

	// A read that fails ends the export with its error, after the pages before it.
	reads.reads, reads.failAt = 0, 2
	pages, _ = export.Handle(ctx, application.VoucherOrdersQuery{Voucher: v.ID})
	var yielded int
	var last error
	for page, err := range pages {
		yielded += len(page)
		last = err
	}
	if yielded != application.ExportPage || !errors.Is(last, domain.ErrUnavailable) {
		t.Fatalf("export failing on its second read: %d orders, then %v; want a page, then unavailable", yielded, last)
	}

	if _, err := export.Handle(ctx, application.VoucherOrdersQuery{Voucher: v.ID, Status: "queued"}); !errors.Is(err, domain.ErrInvalid) {
		t.Fatalf("export of queued orders: %v, want a validation error", err)
	}
	if _, err := export.Handle(ctx, application.VoucherOrdersQuery{Voucher: v.ID + 1}); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("export of an unknown voucher: %v, want ErrNotFound", err)
	}
}
