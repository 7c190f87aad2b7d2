package memory

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/seckill/seckill/domain"
	"github.com/seckill/seckill/ports"
)

// Campaigns is an in-memory ports.Campaigns kept with the vouchers of a Vouchers, as
// the SQL adapter keeps both in one database: Vouchers.Create numbers a campaign's
// vouchers under the same lock, the changes append to the same audit log and keep
// their receipts' answers in the same Idempotency. A campaign's Sold is its vouchers'
// sold counters summed (the Orders over those vouchers move them).
type Campaigns struct {
	vouchers *Vouchers
}

var _ ports.Campaigns = (*Campaigns)(nil)

// NewCampaigns returns the campaigns kept with vouchers (none yet).
func NewCampaigns(vouchers *Vouchers) *Campaigns {
	return &Campaigns{vouchers: vouchers}
}

// Create stores c with the next id, its audit entry and r's answer with it
// (ports.ErrClaimLost, nothing stored, when r's claim no longer holds its key); an
// empty admission or challenge is stored as first come with none, as the SQL adapter
// stores it.
func (s *Campaigns) Create(_ context.Context, c *domain.Campaign, by domain.Author, r *ports.Receipt[domain.Campaign]) error {
	vs := s.vouchers
	vs.mu.Lock()
	defer vs.mu.Unlock()
	stored := *c
	stored.ID = vs.nextCampaign + 1
	stored.CreatedAt = time.Unix(int64(stored.ID), 0).UTC()
	stored.Sold, stored.Variants, stored.Version = 0, 0, 0
	if stored.Admission == "" {
		stored.Admission = domain.AdmissionFirstCome
	}
	if stored.Challenge == "" {
		stored.Challenge = domain.ChallengeNone
	}
	err := answer(vs.Idempotency, r, stored, func() {
		vs.nextCampaign = stored.ID
		vs.campaigns[stored.ID] = stored
		vs.Log.add(domain.CampaignAudit(domain.AuditCampaignCreate, by, nil, stored))
	})
	if err != nil {
		return err
	}
	*c = stored
	return nil
}

// Get returns a campaign, its Sold summed from its vouchers, or domain.ErrNotFound.
func (s *Campaigns) Get(_ context.Context, id domain.CampaignID) (domain.Campaign, error) {
	s.vouchers.mu.Lock()
	defer s.vouchers.mu.Unlock()
	return s.get(id)
}

// get is Get with the vouchers' lock held.
func (s *Campaigns) get(id domain.CampaignID) (domain.Campaign, error) {
	c, ok := s.vouchers.campaigns[id]
	if !ok {
		return domain.Campaign{}, fmt.Errorf("campaign %s: %w", id, domain.ErrNotFound)
	}
	c.Sold = 0
	for _, v := range c.VoucherIDs() {
		c.Sold += s.vouchers.byID[v].Sold
	}
	return c, nil
}

// List returns a page of campaigns, newest first, as the SQL adapter selects them.
func (s *Campaigns) List(_ context.Context, q ports.CampaignQuery) ([]domain.Campaign, error) {
	if q.Limit < 1 {
		return nil, domain.Invalid("limit", "must be at least 1")
	}
	s.vouchers.mu.Lock()
	defer s.vouchers.mu.Unlock()
	var ids []domain.CampaignID
	for id := range s.vouchers.campaigns {
		if q.Before == 0 || id < q.Before {
			ids = append(ids, id)
		}
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] > ids[j] })
	out := make([]domain.Campaign, 0, min(len(ids), q.Limit))
	for _, id := range ids[:min(len(ids), q.Limit)] {
		c, err := s.get(id)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

// Update runs u under the vouchers' lock, as the SQL adapter runs it in one
// transaction: Change; a cap below Sold is domain.ErrNotEnoughUnits; then Commit, and
// (when something changed) the campaign with its entry and, when its window moved,
// each of its vouchers with the new window and its version one more, with the
// receipt's answer, all or nothing.
func (s *Campaigns) Update(ctx context.Context, id domain.CampaignID, u ports.CampaignUpdate) (domain.Campaign, error) {
	vs := s.vouchers
	vs.mu.Lock()
	defer vs.mu.Unlock()
	before, err := s.get(id)
	if err != nil {
		return domain.Campaign{}, err
	}
	after, err := u.Change(before)
	if err != nil {
		return domain.Campaign{}, err
	}
	after.ID, after.Sold, after.Variants, after.CreatedAt = before.ID, before.Sold, before.Variants, before.CreatedAt
	if after.Cap != nil && *after.Cap < after.Sold {
		return domain.Campaign{}, domain.ErrNotEnoughUnits
	}
	if u.Commit != nil {
		if err := u.Commit(ctx, before, after); err != nil {
			return domain.Campaign{}, err
		}
	}
	err = answer(vs.Idempotency, u.Receipt, after, func() {
		if !campaignChanged(before, after) {
			return
		}
		vs.campaigns[id] = after
		vs.Log.add(domain.CampaignAudit(u.Action, u.By, &before, after))
		if before.BeginsAt.Equal(after.BeginsAt) && before.EndsAt.Equal(after.EndsAt) {
			return
		}
		for _, vid := range after.VoucherIDs() {
			v := vs.byID[vid]
			v.BeginsAt, v.EndsAt = after.BeginsAt, after.EndsAt
			v.Version++
			vs.byID[vid] = v
		}
	})
	if err != nil {
		return domain.Campaign{}, err
	}
	return after, nil
}

// campaignChanged reports whether after differs from before in what an admin sets
// or in its version (Cap compared by value, not by pointer).
func campaignChanged(before, after domain.Campaign) bool {
	sameCap := (before.Cap == nil) == (after.Cap == nil) && (before.Cap == nil || *before.Cap == *after.Cap)
	return !sameCap || before.Title != after.Title || before.PerUserLimit != after.PerUserLimit ||
		!before.BeginsAt.Equal(after.BeginsAt) || !before.EndsAt.Equal(after.EndsAt) || before.Version != after.Version
}
