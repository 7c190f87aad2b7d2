package history

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"testing"
	"time"
)

// campaignBug is a bug planted in the simulated campaign below.
type campaignBug int

const (
	campaignCorrect campaignBug = iota
	// capUnchecked: a grab is judged against its voucher's units only.
	capUnchecked
	// limitPerVoucher: the per-user limit is judged within each voucher, not across
	// the campaign.
	limitPerVoucher
	// capLeaks: a cancelled unit goes back to its voucher but is also counted back to
	// the cap twice.
	capLeaks
)

// simulateCampaign runs users grabbing random vouchers of a campaign (some cancelling)
// against a small engine judging each grab at once, with bug planted, and records
// the campaign's history as the end-to-end tests do.
func simulateCampaign(seed uint64, bug campaignBug) Campaign {
	rng := rand.New(rand.NewPCG(seed, 11))
	const vouchers, stock, capUnits, limit, users = 5, 40, 130, 2, 80
	left := make([]int, vouchers)
	for v := range left {
		left[v] = stock
	}
	capLeft := capUnits
	holds := map[int64][]Order{} // live orders per user
	hists := make([]History, vouchers)
	voucherOf := map[string]int{}
	at := time.Unix(1_700_000_000, 0)
	n := 0
	for range 3 {
		for u := int64(1); u <= users; u++ {
			v := rng.IntN(vouchers)
			r := Request{Op: OpGrab, User: u, Status: http.StatusAccepted}
			held, heldHere := 0, ""
			for _, o := range holds[u] {
				held += o.Quantity
				if voucherOf[o.ID] == v {
					heldHere = o.ID
				}
			}
			overLimit := held+1 > limit
			if bug == limitPerVoucher {
				overLimit = heldHere != ""
			}
			switch {
			case heldHere != "":
				r.Status, r.Code, r.OrderID = http.StatusConflict, "already_purchased", heldHere
			case overLimit:
				r.Status, r.Code, r.OrderID = http.StatusConflict, "already_purchased", holds[u][0].ID
			case left[v] == 0:
				r.Status, r.Code = http.StatusConflict, "sold_out"
			case capLeft <= 0 && bug != capUnchecked:
				r.Status, r.Code = http.StatusConflict, campaignSoldOut
			default:
				n++
				o := Order{ID: fmt.Sprintf("o%04d", n), User: u, Quantity: 1, Status: "awaiting_payment", CreatedAt: at}
				r.OrderID = o.ID
				left[v]--
				capLeft--
				voucherOf[o.ID] = v
				holds[u] = append(holds[u], o)
				hists[v].Orders = append(hists[v].Orders, o)
			}
			hists[v].Requests = append(hists[v].Requests, r)
			if r.Status == http.StatusAccepted && rng.IntN(8) == 0 {
				hists[v].Requests = append(hists[v].Requests, Request{Op: OpCancel, User: u, OrderID: r.OrderID, Status: http.StatusOK})
				for i, o := range hists[v].Orders {
					if o.ID == r.OrderID {
						hists[v].Orders[i].Status = "cancelled"
					}
				}
				holds[u] = holds[u][:len(holds[u])-1]
				left[v]++
				capLeft++
				if bug == capLeaks {
					capLeft++
				}
			}
		}
	}
	c := Campaign{Vouchers: map[string]History{}, Cap: capUnits, Limit: limit}
	for v, h := range hists {
		h.Stock, h.Limit, h.BeginsAt, h.EndsAt = stock, 1, at, at.Add(time.Hour)
		h.Stats = Stats{Stock: stock, Remaining: left[v]}
		for _, o := range h.Orders {
			switch o.Status {
			case "awaiting_payment":
				h.Stats.AwaitingPayment += o.Quantity
			case "cancelled":
				h.Stats.Cancelled += o.Quantity
			}
		}
		c.Stats.AwaitingPayment += h.Stats.AwaitingPayment
		c.Stats.Cancelled += h.Stats.Cancelled
		c.Vouchers[fmt.Sprint(v+1)] = h
	}
	c.Stats.Stock, c.Stats.Remaining = capUnits, capUnits-c.Stats.AwaitingPayment
	return c
}

// TestCampaignCheckerFindsEachPlantedBug: correct runs pass; each planted bug is named
// by the violation it causes, in some of twenty seeds (a bug shows only where the
// simulated demand meets it: the cap within reach, a user after a third voucher).
func TestCampaignCheckerFindsEachPlantedBug(t *testing.T) {
	for seed := range uint64(5) {
		if vs := CheckCampaign(simulateCampaign(seed, campaignCorrect)); len(vs) > 0 {
			t.Fatalf("seed %d, a correct campaign: %v", seed, vs)
		}
	}
	for _, tc := range []struct {
		bug  campaignBug
		want string
	}{
		{capUnchecked, CapPassed},
		{limitPerVoucher, OverCampaignLimit},
		{capLeaks, CapPassed},
	} {
		found := false
		for seed := range uint64(20) {
			for _, v := range CheckCampaign(simulateCampaign(seed, tc.bug)) {
				found = found || v.Kind == tc.want
			}
		}
		if !found {
			t.Errorf("bug %d: no seed's history was found to break %q", tc.bug, tc.want)
		}
	}
}

// TestCampaignCheckerNamesUnknownAndUntoldOrders: an already_purchased naming an order
// of another user, and an order its user never heard of, are found across vouchers.
func TestCampaignCheckerNamesUnknownAndUntoldOrders(t *testing.T) {
	c := simulateCampaign(1, campaignCorrect)
	h := c.Vouchers["1"]
	h.Orders = append(h.Orders, Order{ID: "ghost", User: 999, Quantity: 1, Status: "cancelled", CreatedAt: h.BeginsAt})
	h.Requests = append(h.Requests, Request{Op: OpGrab, User: 998, Status: http.StatusConflict, Code: "already_purchased", OrderID: "o0001x"})
	h.Stats.Cancelled++
	c.Vouchers["1"] = h
	var kinds []string
	for _, v := range CheckCampaign(c) {
		kinds = append(kinds, v.Kind)
	}
	got := strings.Join(kinds, "; ")
	for _, want := range []string{UnknownOrderNamed, UnreportedOrder} {
		if !strings.Contains(got, want) {
			t.Errorf("violations %q lack %q", got, want)
		}
	}
}
