package history

import (
	"net/http"
	"slices"
	"strings"
)

// Campaign is one campaign's sale: the sales of its vouchers, each a History holding
// the requests and the orders of that voucher, and what binds them — the cap on the
// units sold across them and the limit of units per user across them.
type Campaign struct {
	// Vouchers are the vouchers' histories, by voucher id.
	Vouchers map[string]History
	// Cap is the campaign's cap on units sold across its vouchers; 0: none.
	Cap int
	// Limit is the most units one user holds across the campaign.
	Limit int
	// Stats are the campaign's stats at the end (Stock is the cap, or the sum of the
	// vouchers' stocks without one; Remaining what the cap has left).
	Stats Stats
}

// The kinds of Violation only a campaign has.
const (
	CapPassed          = "units sold past the campaign's cap"
	OverCampaignLimit  = "a user holds more of the campaign than its limit"
	CapNotReached      = "the campaign answered campaign_sold_out but its cap is not reached"
	CampaignStatsAddUp = "the campaign's stats do not add up"
)

// campaignSoldOut is the code of a grab the campaign's cap refused.
const campaignSoldOut = "campaign_sold_out"

// CheckCampaign returns every violation of c: each voucher's promises (a 202 is one
// order, one live order per user and voucher, no voucher oversold, a voucher that
// answered sold_out with no unit back sold all of it, its stats add up, pay and cancel
// answers borne out), then the campaign's: its live units within the cap, each user's
// within the limit, the cap all sold when campaign_sold_out was answered and no unit
// came back, its stats adding up to the cap, and every user told of their orders
// across the campaign (an already_purchased names one of theirs in it). The
// linearizability search is a single voucher's (History); a campaign's grab may be
// refused by another voucher's orders, so it is not run here.
func CheckCampaign(c Campaign) []Violation {
	var out []Violation
	merged := History{}
	for _, id := range sortedStrings(c.Vouchers) {
		h := c.Vouchers[id]
		vc := &checker{h: h, rows: rowsOf(h.Orders)}
		vc.accepted()
		vc.liveUnits()
		vc.stats()
		vc.samples()
		vc.transitions()
		for _, v := range vc.out {
			out = append(out, Violation{Kind: v.Kind, Detail: "voucher " + id + ": " + v.Detail})
		}
		merged.Requests = append(merged.Requests, h.Requests...)
		merged.Orders = append(merged.Orders, h.Orders...)
	}
	mc := &checker{h: merged, rows: rowsOf(merged.Orders)}
	live, perUser := 0, map[int64]int{}
	for _, o := range merged.Orders {
		if o.live() {
			live += o.Quantity
			perUser[o.User] += o.Quantity
		}
	}
	if c.Cap > 0 && live > c.Cap {
		mc.add(CapPassed, "%d units in live orders, cap %d", live, c.Cap)
	}
	for _, u := range sortedKeys(perUser) {
		if perUser[u] > c.Limit {
			mc.add(OverCampaignLimit, "user %d holds %d units, limit %d", u, perUser[u], c.Limit)
		}
	}
	capSoldOut := slices.ContainsFunc(merged.Requests, func(r Request) bool {
		return r.Op == OpGrab && r.Status == http.StatusConflict && r.Code == campaignSoldOut
	})
	if c.Cap > 0 && capSoldOut && live < c.Cap && !unitsReturned(merged.Orders) && !unitsAdded(merged.Requests) {
		mc.add(CapNotReached, "grabs were answered campaign_sold_out and no unit came back, yet %d of a cap of %d are sold", live, c.Cap)
	}
	if s := c.Stats; c.Cap > 0 && (s.Stock != c.Cap || s.Remaining+s.Queued+s.AwaitingPayment+s.Paid != s.Stock) {
		mc.add(CampaignStatsAddUp, "cap %d (stats %d) != remaining %d + queued %d + awaiting_payment %d + paid %d",
			c.Cap, s.Stock, s.Remaining, s.Queued, s.AwaitingPayment, s.Paid)
	}
	mc.told()
	return append(out, mc.out...)
}

// rowsOf indexes orders by id.
func rowsOf(os []Order) map[string]Order {
	rows := make(map[string]Order, len(os))
	for _, o := range os {
		rows[o.ID] = o
	}
	return rows
}

// sortedStrings returns m's keys in order.
func sortedStrings[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, strings.Compare)
	return keys
}
