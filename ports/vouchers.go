package ports

import (
	"context"
	"time"

	"github.com/seckill/seckill/domain"
)

// Vouchers stores vouchers. Every admin change of one is written with its audit
// log entry (domain.VoucherAudit) in one transaction: a change that fails leaves no
// entry.
type Vouchers interface {
	// Create stores v, with the audit entry of its creation by by, and sets v.ID and
	// v.CreatedAt. With a receipt (nil: none) it keeps the receipt's answer in the
	// same transaction, or stores nothing and returns ErrClaimLost when the claim no
	// longer holds the key.
	Create(ctx context.Context, v *domain.Voucher, by domain.Author, r *Receipt[domain.Voucher]) error
	// Get returns one voucher, or domain.ErrNotFound.
	Get(ctx context.Context, id domain.VoucherID) (domain.Voucher, error)
	// List returns one page of vouchers, newest (highest id) first: at most q.Limit of
	// those q selects. It is the only list of vouchers the API reads, so it is paged
	// (one method, not an unbounded List beside a paged one: nothing may read them all).
	List(ctx context.Context, q VoucherQuery) ([]domain.Voucher, error)
	// Active returns the vouchers whose sale has not ended at now.
	Active(ctx context.Context, now time.Time) ([]domain.Voucher, error)
	// Update changes voucher id as u says, in one transaction that holds the
	// voucher's lock throughout (no other Update or Hold of it runs meanwhile), and
	// returns the voucher as it now is, or domain.ErrNotFound. An error from u.Change
	// or u.Commit is returned as it is and stores nothing; so does ErrClaimLost.
	Update(ctx context.Context, id domain.VoucherID, u VoucherUpdate) (domain.Voucher, error)
	// Hold calls fn with voucher id as stored, under the lock Update takes, and
	// returns fn's error, or domain.ErrNotFound: what fn carries from the voucher
	// elsewhere is not overtaken by a change of it. fn must not use this store but
	// through the context it is given (which may carry the transaction).
	Hold(ctx context.Context, id domain.VoucherID, fn func(context.Context, domain.Voucher) error) error
}

// VoucherUpdate is one admin change of a voucher, as Vouchers.Update runs it: read
// the voucher under its lock, Change it, write it with its audit entry (Action by By,
// domain.VoucherAudit), run Commit, keep the Receipt's answer, commit.
type VoucherUpdate struct {
	Action domain.AuditAction
	By     domain.Author
	// Change returns the voucher as the change leaves it, given it as stored. A
	// voucher returned equal to the one given is a change of nothing: nothing is
	// written, no entry either (a receipt's answer is kept all the same).
	Change func(domain.Voucher) (domain.Voucher, error)
	// Commit, when set, runs after the voucher and its entry are written, just before
	// the receipt's answer and the commit, with the voucher before and after: what
	// lies outside the database and must change with it or not at all. It must not use
	// the store but through the context it is given.
	Commit func(ctx context.Context, before, after domain.Voucher) error
	// Receipt, when set, keeps the request's answer in the same transaction.
	Receipt *Receipt[domain.Voucher]
}

// SaleStatus is where a voucher's sale stands at a moment.
type SaleStatus string

// The sale statuses a list of vouchers can be filtered by.
const (
	// SaleUpcoming: begins_at is after the moment.
	SaleUpcoming SaleStatus = "upcoming"
	// SaleLive: begins_at is at or before the moment, and ends_at after it.
	SaleLive SaleStatus = "live"
	// SaleEnded: ends_at is at or before the moment.
	SaleEnded SaleStatus = "ended"
)

// VoucherQuery selects a page of vouchers.
type VoucherQuery struct {
	// Before, when not 0, keeps only vouchers whose id is below it: the last id of the
	// previous page (the keyset cursor).
	Before domain.VoucherID
	// Status, when not empty, keeps only the vouchers in that sale status at Now.
	Status SaleStatus
	// Campaign, when not 0, keeps only the campaign's vouchers.
	Campaign domain.CampaignID
	// Now is the moment Status is judged at.
	Now time.Time
	// Limit is the most vouchers returned; it is at least 1.
	Limit int
}

// VoucherOrders reads one voucher's persisted orders, a page at a time, for its
// admin's list and export.
type VoucherOrders interface {
	// ListByVoucher returns one page of the voucher's orders, by id ascending (order
	// ids are time-ordered: oldest first): at most q.Limit of those q selects. Each
	// page is read on its own, holding nothing from one page to the next, so a reader
	// of a million orders never holds what writers wait for (and pages read at
	// different moments: an order is on one page, as it was when that page was read).
	// An unknown voucher has no orders; a q.Limit below 1 returns a
	// *domain.ValidationError.
	ListByVoucher(ctx context.Context, voucher domain.VoucherID, q VoucherOrderQuery) ([]domain.Order, error)
}
