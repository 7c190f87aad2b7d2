package memory

import (
	"context"
	"fmt"

	"github.com/seckill/seckill/domain"
	"github.com/seckill/seckill/ports"
)

var _ ports.CampaignStock = (*Stock)(nil)

// campaignTerms are a campaign's terms as the stock holds them: its cap (nil: none),
// its per-user limit, how many vouchers it has, and the version they are of.
type campaignTerms struct {
	cap      *int
	limit    int
	variants int
	version  int64
}

// termsOf returns c's terms, its cap copied.
func termsOf(c domain.Campaign, variants int) campaignTerms {
	t := campaignTerms{limit: c.PerUserLimit, variants: variants, version: c.Version}
	if c.Cap != nil {
		n := *c.Cap
		t.cap = &n
	}
	return t
}

// WarmCampaign loads c's terms unless the stock holds them at c.Version or a later
// one; the number of its vouchers only ever grows, whatever the version.
func (s *Stock) WarmCampaign(_ context.Context, c domain.Campaign) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.Err != nil {
		return s.Err
	}
	held, ok := s.campaigns[c.ID]
	if ok && held.version >= c.Version {
		held.variants = max(held.variants, c.Variants)
		s.campaigns[c.ID] = held
		return nil
	}
	s.campaigns[c.ID] = termsOf(c, max(held.variants, c.Variants))
	return nil
}

// EditCampaign carries c's terms whatever version the stock holds, or returns
// domain.ErrNotEnoughUnits, changing nothing, when c's cap is below the units its
// vouchers hold taken. A campaign whose terms the stock does not hold changes nothing.
func (s *Stock) EditCampaign(_ context.Context, c domain.Campaign) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.Err != nil {
		return s.Err
	}
	held, ok := s.campaigns[c.ID]
	if !ok {
		return nil
	}
	variants := max(held.variants, c.Variants)
	if c.Cap != nil && *c.Cap < s.taken(c.ID, variants) {
		return domain.ErrNotEnoughUnits
	}
	s.campaigns[c.ID] = termsOf(c, variants)
	return nil
}

// taken returns the units the first n vouchers of campaign id hold taken (stock minus
// remaining) in their sales; a voucher without one holds none. s.mu is held.
func (s *Stock) taken(id domain.CampaignID, n int) int {
	taken := 0
	for k := 1; k <= n; k++ {
		if sl, ok := s.sales[id.Variant(k)]; ok {
			taken += sl.v.Stock - sl.remaining
		}
	}
	return taken
}

// campaignSale is the campaign's side of a grab by user of its voucher number, as
// reserve.lua reads it: the cap's units left (cap minus the units every voucher of the
// campaign holds taken) and what user holds of its other vouchers. Terms not loaded,
// or not yet counting the voucher, or a voucher of the campaign without a sale, is
// domain.ErrNotFound (no sale state); one being restored, whose buyers are not all
// known yet, is unavailable. s.mu is held.
func (s *Stock) campaignSale(id domain.CampaignID, number int, user domain.UserID) (domain.CampaignSale, error) {
	terms, ok := s.campaigns[id]
	if !ok || number > terms.variants {
		return domain.CampaignSale{}, domain.ErrNotFound
	}
	c := domain.CampaignSale{Capped: terms.cap != nil, PerUserLimit: terms.limit}
	taken := 0
	for k := 1; k <= terms.variants; k++ {
		sl, ok := s.sales[id.Variant(k)]
		if !ok {
			return domain.CampaignSale{}, domain.ErrNotFound
		}
		if sl.restoring {
			return domain.CampaignSale{}, fmt.Errorf("campaign %s: voucher %s: sale state being restored: %w", id, sl.v.ID, domain.ErrUnavailable)
		}
		taken += sl.v.Stock - sl.remaining
		if order, held := sl.buyers[user]; held && k != number {
			c.UserUnits += s.quantity(order)
			c.UserOrders = append(c.UserOrders, order)
		}
	}
	if c.Capped {
		c.CapLeft = *terms.cap - taken
	}
	return c, nil
}

// quantity returns the units of the reservation order, or 1 when none is recorded,
// as reserve.lua counts an order it finds no record of. s.mu is held.
func (s *Stock) quantity(order domain.OrderID) int {
	for i := len(s.Reserved) - 1; i >= 0; i-- {
		if s.Reserved[i].OrderID == order {
			return s.Reserved[i].Quantity
		}
	}
	return 1
}
