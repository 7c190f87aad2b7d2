package memory

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/seckill/seckill/domain"
	"github.com/seckill/seckill/ports"
)

// Vouchers is an in-memory ports.Vouchers, with the audit log its changes append to.
type Vouchers struct {
	mu     sync.Mutex
	byID   map[domain.VoucherID]domain.Voucher
	nextID domain.VoucherID
	// campaigns are the campaigns a Campaigns over these vouchers stores, under mu: a
	// campaign's voucher is numbered under the lock its campaign is changed under, as
	// the SQL adapter numbers it under the campaign's row lock.
	campaigns    map[domain.CampaignID]domain.Campaign
	nextCampaign domain.CampaignID
	// Idempotency keeps the answers of the receipts Create and the Orders over these
	// vouchers are given.
	Idempotency *Idempotency
	// Log is the audit log Create and Update append to.
	Log *AuditLog
}

var _ ports.Vouchers = (*Vouchers)(nil)

// NewVouchers returns an empty repository, with an empty store of idempotency keys
// and an empty audit log.
func NewVouchers() *Vouchers {
	return &Vouchers{byID: map[domain.VoucherID]domain.Voucher{}, campaigns: map[domain.CampaignID]domain.Campaign{},
		Idempotency: NewIdempotency(), Log: &AuditLog{}}
}

// Create stores v with the next id, its audit entry and r's answer with it
// (ports.ErrClaimLost, nothing stored, when r's claim no longer holds its key). A
// voucher with a CampaignID becomes that campaign's next variant
// (domain.Campaign.Variant), which the campaign counts; an unknown campaign, a full
// one or a per-user limit above the campaign's is a *domain.ValidationError.
func (r *Vouchers) Create(_ context.Context, v *domain.Voucher, by domain.Author, receipt *ports.Receipt[domain.Voucher]) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	stored := *v
	stored.ID = r.nextID + 1
	stored.CreatedAt = time.Unix(int64(stored.ID), 0).UTC()
	stored.Version = 0
	var c domain.Campaign
	if v.CampaignID != 0 {
		var ok bool
		if c, ok = r.campaigns[v.CampaignID]; !ok {
			return domain.Invalid("campaign_id", "no such campaign")
		}
		var err error
		if stored, err = c.Variant(stored); err != nil {
			return err
		}
		c.Variants++
	}
	err := answer(r.Idempotency, receipt, stored, func() {
		if c.ID != 0 {
			r.campaigns[c.ID] = c
		} else {
			r.nextID = stored.ID
		}
		r.byID[stored.ID] = stored
		r.Log.add(domain.VoucherAudit(domain.AuditVoucherCreate, by, nil, stored))
	})
	if err != nil {
		return err
	}
	*v = stored
	return nil
}

// Update runs u under the repository's lock, as the SQL adapter runs it in one
// transaction: Change, then (when something changed) the voucher and its entry, then
// Commit and the receipt's answer, all or nothing.
func (r *Vouchers) Update(ctx context.Context, id domain.VoucherID, u ports.VoucherUpdate) (domain.Voucher, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	before, ok := r.byID[id]
	if !ok {
		return domain.Voucher{}, fmt.Errorf("voucher %s: %w", id, domain.ErrNotFound)
	}
	after, err := u.Change(before)
	if err != nil {
		return domain.Voucher{}, err
	}
	after.ID, after.Sold, after.CreatedAt = before.ID, before.Sold, before.CreatedAt
	if after.Sold > after.Stock {
		return domain.Voucher{}, domain.ErrNotEnoughUnits
	}
	if u.Commit != nil {
		if err := u.Commit(ctx, before, after); err != nil {
			return domain.Voucher{}, err
		}
	}
	err = answer(r.Idempotency, u.Receipt, after, func() {
		if after != before {
			r.byID[id] = after
			r.Log.add(domain.VoucherAudit(u.Action, u.By, &before, after))
		}
	})
	if err != nil {
		return domain.Voucher{}, err
	}
	return after, nil
}

// Hold calls fn with the voucher under the repository's lock.
func (r *Vouchers) Hold(ctx context.Context, id domain.VoucherID, fn func(context.Context, domain.Voucher) error) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	v, ok := r.byID[id]
	if !ok {
		return fmt.Errorf("voucher %s: %w", id, domain.ErrNotFound)
	}
	return fn(ctx, v)
}

// AuditLog is an in-memory ports.AuditLog.
type AuditLog struct {
	mu      sync.Mutex
	entries []domain.AuditEntry
}

var _ ports.AuditLog = (*AuditLog)(nil)

// add appends e with the next id.
func (l *AuditLog) add(e domain.AuditEntry) {
	l.mu.Lock()
	defer l.mu.Unlock()
	e.ID = int64(len(l.entries) + 1)
	e.At = time.Unix(e.ID, 0).UTC()
	l.entries = append(l.entries, e)
}

// Append appends e.
func (l *AuditLog) Append(_ context.Context, e domain.AuditEntry) error {
	l.add(e)
	return nil
}

// List returns a page of entries, newest first, as the SQL adapter selects them.
func (l *AuditLog) List(_ context.Context, q ports.AuditQuery) ([]domain.AuditEntry, error) {
	if q.Limit < 1 {
		return nil, domain.Invalid("limit", "must be at least 1")
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []domain.AuditEntry
	for i := len(l.entries) - 1; i >= 0 && len(out) < q.Limit; i-- {
		e := l.entries[i]
		if (q.Voucher == 0 || e.VoucherID == q.Voucher) && (q.Before == 0 || e.ID < q.Before) {
			out = append(out, e)
		}
	}
	return out, nil
}

// Entries returns every entry appended so far, oldest first.
func (l *AuditLog) Entries() []domain.AuditEntry {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.entries)
}

// Put replaces a stored voucher, as a test arranging a state would.
func (r *Vouchers) Put(v domain.Voucher) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.byID[v.ID] = v
}

// Get returns a voucher or domain.ErrNotFound.
func (r *Vouchers) Get(_ context.Context, id domain.VoucherID) (domain.Voucher, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	v, ok := r.byID[id]
	if !ok {
		return domain.Voucher{}, fmt.Errorf("voucher %s: %w", id, domain.ErrNotFound)
	}
	return v, nil
}

// List returns a page of vouchers, newest first, as the SQL adapter selects them.
func (r *Vouchers) List(_ context.Context, q ports.VoucherQuery) ([]domain.Voucher, error) {
	if q.Limit < 1 {
		return nil, domain.Invalid("limit", "must be at least 1")
	}
	inStatus := map[ports.SaleStatus]func(domain.Voucher) bool{
		"":                 func(domain.Voucher) bool { return true },
		ports.SaleUpcoming: func(v domain.Voucher) bool { return v.BeginsAt.After(q.Now) },
		ports.SaleLive:     func(v domain.Voucher) bool { return !v.BeginsAt.After(q.Now) && v.EndsAt.After(q.Now) },
		ports.SaleEnded:    func(v domain.Voucher) bool { return !v.EndsAt.After(q.Now) },
	}[q.Status]
	if inStatus == nil {
		return nil, domain.Invalid("status", "must be live, upcoming or ended")
	}
	out := r.filter(func(v domain.Voucher) bool {
		return (q.Before == 0 || v.ID < q.Before) && (q.Campaign == 0 || v.CampaignID == q.Campaign) && inStatus(v)
	})
	return out[:min(len(out), q.Limit)], nil
}

// Active returns the vouchers not ended at now, newest first.
func (r *Vouchers) Active(_ context.Context, now time.Time) ([]domain.Voucher, error) {
	return r.filter(func(v domain.Voucher) bool { return v.EndsAt.After(now) }), nil
}

func (r *Vouchers) filter(keep func(domain.Voucher) bool) []domain.Voucher {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []domain.Voucher
	for _, v := range r.byID {
		if keep(v) {
			out = append(out, v)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID > out[j].ID })
	return out
}
