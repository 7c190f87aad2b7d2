package redisstore

import (
	"context"
	_ "embed"
	"fmt"
	"strconv"

	"github.com/seckill/seckill/domain"
	"github.com/seckill/seckill/ports"
)

var _ ports.CampaignStock = (*Stock)(nil)

// campaignScript loads or changes a campaign's terms; campaign.lua documents it.
//
//go:embed campaign.lua
var campaignSrc string
var campaignScript = newScript(campaignSrc)

// WarmCampaign loads c's terms unless the stock holds them at c.Version or a later
// one; the number of its vouchers only ever grows.
func (s *Stock) WarmCampaign(ctx context.Context, c domain.Campaign) error {
	_, err := s.runCampaign(ctx, "warm", c)
	return err
}

// EditCampaign carries c's terms whatever version the stock holds, or returns
// domain.ErrNotEnoughUnits when c's cap is below the units its vouchers hold taken.
func (s *Stock) EditCampaign(ctx context.Context, c domain.Campaign) error {
	n, err := s.runCampaign(ctx, "edit", c)
	if err == nil && n < 0 {
		return domain.ErrNotEnoughUnits
	}
	return err
}

// runCampaign runs campaignScript in mode for c.
func (s *Stock) runCampaign(ctx context.Context, mode string, c domain.Campaign) (int64, error) {
	keys := append([]string{s.keys.Campaign(c.ID)}, s.variantMetas(c.ID, c.Variants)...)
	capped := ""
	if c.Cap != nil {
		capped = strconv.Itoa(*c.Cap)
	}
	expire := c.EndsAt.Add(s.grace).UnixMilli()
	n, err := campaignScript.Run(ctx, s.client, keys, mode, capped, c.PerUserLimit, c.Variants, c.Version, expire).Int64()
	if err != nil {
		return 0, fmt.Errorf("campaign %s: %s its terms: %w", c.ID, mode, err)
	}
	if c.Variants > 0 {
		s.campaigns.Store(c.ID, c.Variants)
	}
	return n, nil
}

// variantMetas returns the meta keys of a campaign's first n vouchers.
func (s *Stock) variantMetas(id domain.CampaignID, n int) []string {
	keys := make([]string, n)
	for k := range keys {
		keys[k] = s.keys.Meta(id.Variant(k + 1))
	}
	return keys
}

// campaignKeys returns the keys reserve.lua judges a campaign's grab by: the
// campaign's terms and holders, then each of its n vouchers' meta, buyers and orders.
func (s *Stock) campaignKeys(id domain.CampaignID, n int) []string {
	keys := make([]string, 0, 2+3*n)
	keys = append(keys, s.keys.Campaign(id), s.keys.CampaignHolders(id))
	for k := 1; k <= n; k++ {
		v := id.Variant(k)
		keys = append(keys, s.keys.Meta(v), s.keys.Buyers(v), s.keys.Orders(v))
	}
	return keys
}

// campaignVariants returns how many vouchers campaign holds as this process last
// learnt it, or, before it learns it, number (the grabbed voucher's own number, the
// least the campaign holds): the grab script answers with the true count when the
// guess is wrong, and the batch is judged again (reserveBatch). 0 for no campaign.
func (s *Stock) campaignVariants(campaign domain.CampaignID, number int) int {
	if campaign == 0 {
		return 0
	}
	if n, ok := s.campaigns.Load(campaign); ok {
		return max(n.(int), number)
	}
	return number
}

// campaignTail returns what a script that judges voucher id against its campaign
// takes after its own keys and arguments (campaign_terms in prelude.lua): the
// campaign's keys, how many vouchers this process believes it holds, and id's number
// in it; no keys and 0, 0 outside a campaign.
func (s *Stock) campaignTail(id domain.VoucherID) ([]string, int, int) {
	campaign, number := id.Campaign()
	variants := s.campaignVariants(campaign, number)
	if variants == 0 {
		return nil, 0, 0
	}
	return s.campaignKeys(campaign, variants), variants, number
}

// learnVariants learns count, a script's answer that voucher id's campaign holds
// another number of vouchers than the variants it was told (nothing was judged: the
// caller runs it again). A campaign only grows, so a count that is not more is an
// error, which also bounds the caller's retries.
func (s *Stock) learnVariants(id domain.VoucherID, variants int, count any) error {
	campaign, _ := id.Campaign()
	text, _ := count.(string)
	n, err := strconv.Atoi(text)
	if err != nil || n <= variants {
		return fmt.Errorf("campaign %s: unexpected count of vouchers %v", campaign, count)
	}
	s.campaigns.Store(campaign, n)
	return nil
}
