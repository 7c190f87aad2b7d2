package application

import (
	"context"
	"fmt"
	"iter"
	"time"

	"github.com/seckill/seckill/domain"
	"github.com/seckill/seckill/ports"
)

// VoucherOrdersQuery asks for a voucher's persisted orders, for its admin.
type VoucherOrdersQuery struct {
	Voucher domain.VoucherID
	// Status, when not empty, keeps only the orders in that status: awaiting_payment,
	// paid, cancelled, expired or failed (queued orders are not persisted yet).
	Status string
	// Limit is the page size, 1 to MaxPageLimit; 0 means DefaultPageLimit. Export
	// ignores it.
	Limit int
	// Cursor is NextCursor of the previous page; empty for the first page. Export
	// ignores it.
	Cursor string
}

// ListVoucherOrders reads a page of a voucher's persisted orders, oldest first. It
// reads the database only: reservations not yet persisted (queued, in Redis) are not
// listed.
type ListVoucherOrders struct {
	vouchers ports.Vouchers
	orders   ports.VoucherOrders
}

// NewListVoucherOrders returns the use case.
func NewListVoucherOrders(vouchers ports.Vouchers, orders ports.VoucherOrders) *ListVoucherOrders {
	return &ListVoucherOrders{vouchers: vouchers, orders: orders}
}

// Handle returns a page of the voucher's orders, oldest (lowest id) first, or
// domain.ErrNotFound for an unknown voucher. A limit out of range, a status that is
// not a persisted one, or a cursor that is not NextCursor of a page of this voucher's
// list under the same status returns a *domain.ValidationError.
func (uc *ListVoucherOrders) Handle(ctx context.Context, q VoucherOrdersQuery) (OrderPage, error) {
	limit, err := pageLimit(q.Limit)
	if err != nil {
		return OrderPage{}, err
	}
	status, err := persistedStatus(q.Status)
	if err != nil {
		return OrderPage{}, err
	}
	query := ports.VoucherOrderQuery{Status: status, Limit: limit + 1}
	if q.Cursor != "" {
		if query.After, err = decodeVoucherOrdersCursor(q.Cursor, q.Voucher, status); err != nil {
			return OrderPage{}, err
		}
	}
	if _, err := uc.vouchers.Get(ctx, q.Voucher); err != nil {
		return OrderPage{}, err
	}
	// One more than the page tells whether another page follows.
	os, err := uc.orders.ListByVoucher(ctx, q.Voucher, query)
	if err != nil {
		return OrderPage{}, fmt.Errorf("list orders of voucher %s: %w", q.Voucher, err)
	}
	page := OrderPage{Orders: os}
	if len(os) > limit {
		page.Orders = os[:limit]
		page.NextCursor = encodeVoucherOrdersCursor(q.Voucher, status, os[limit-1].ID)
	}
	return page, nil
}

// The pages of an export.
const (
	// ExportPage is how many orders one read of an export fetches: large enough that
	// its round trips (four on PostgreSQL: the page's own transaction) are a small part
	// of its cost — on PostgreSQL a million orders exported at 275–287k a second in
	// pages of 1,000, 310–355k in pages of 5,000 (BENCHMARKS.md) — small enough that
	// a page is a read of a few milliseconds holding one connection (on SQLite the
	// only one, which fulfillment then waits for: 20 ms at most there) and a megabyte
	// or two in memory.
	ExportPage = 5000
	// exportPageTimeout bounds each read of an export: the statement timeout of a
	// stream that has no deadline of its own, however many pages it reads. On
	// PostgreSQL the driver cancels the statement on the server when it passes.
	exportPageTimeout = 5 * time.Second
)

// ExportVoucherOrders reads every persisted order of a voucher, oldest first, a page
// at a time from the database as its reader asks for them, so an export of any size
// holds one page in memory. It never reads Redis: reservations not yet persisted
// (queued) are not exported.
type ExportVoucherOrders struct {
	vouchers ports.Vouchers
	orders   ports.VoucherOrders
}

// NewExportVoucherOrders returns the use case.
func NewExportVoucherOrders(vouchers ports.Vouchers, orders ports.VoucherOrders) *ExportVoucherOrders {
	return &ExportVoucherOrders{vouchers: vouchers, orders: orders}
}

// Handle checks the query — domain.ErrNotFound for an unknown voucher, a
// *domain.ValidationError for a status that is not a persisted one — and returns the
// voucher's orders (in that status, when given) as a sequence of pages, oldest (lowest
// id) first, each read when the sequence is iterated to it. Each page is one read
// under exportPageTimeout; none is held open between pages, so the export is not one
// moment's snapshot: each order is in it once, as it was when its page was read, and
// orders persisted meanwhile are in it if their ids sort after the page being read. A
// read that fails ends the sequence with its error.
func (uc *ExportVoucherOrders) Handle(ctx context.Context, q VoucherOrdersQuery) (iter.Seq2[[]domain.Order, error], error) {
	status, err := persistedStatus(q.Status)
	if err != nil {
		return nil, err
	}
	if _, err := uc.vouchers.Get(ctx, q.Voucher); err != nil {
		return nil, err
	}
	return func(yield func([]domain.Order, error) bool) {
		query := ports.VoucherOrderQuery{Status: status, Limit: ExportPage}
		for {
			page, err := uc.page(ctx, q.Voucher, query)
			if err != nil {
				yield(nil, err)
				return
			}
			if len(page) > 0 && !yield(page, nil) {
				return
			}
			if len(page) < ExportPage {
				return
			}
			query.After = page[len(page)-1].ID
		}
	}, nil
}

// page reads one page of an export under exportPageTimeout.
func (uc *ExportVoucherOrders) page(ctx context.Context, voucher domain.VoucherID, q ports.VoucherOrderQuery) ([]domain.Order, error) {
	ctx, cancel := context.WithTimeout(ctx, exportPageTimeout)
	defer cancel()
	os, err := uc.orders.ListByVoucher(ctx, voucher, q)
	if err != nil {
		return nil, fmt.Errorf("export orders of voucher %s after %q: %w", voucher, q.After, err)
	}
	return os, nil
}

// persistedStatus reads a status filter of a voucher's orders: empty for none, or one
// of the statuses a persisted order has. Anything else is a *domain.ValidationError.
func persistedStatus(s string) (domain.OrderStatus, error) {
	status := domain.OrderStatus(s)
	if s != "" && (!status.Valid() || status == domain.StatusQueued) {
		return "", domain.Invalid("status", "must be awaiting_payment, paid, cancelled, expired or failed (the orders listed are persisted ones)")
	}
	return status, nil
}
