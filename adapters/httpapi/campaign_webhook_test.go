package httpapi_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/seckill/seckill/adapters/httpapi"
	"github.com/seckill/seckill/domain"
)

// TestWebhookBodyOfACampaign: a campaign's event carries its terms, the units sold and
// its vouchers' ids as strings.
func TestWebhookBodyOfACampaign(t *testing.T) {
	limit := 300
	at := time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC)
	c := domain.Campaign{ID: 4, Title: "Runner drop", BeginsAt: at, EndsAt: at.Add(time.Hour), PerUserLimit: 2, Cap: &limit,
		Sold: 300, Variants: 2}
	body, err := httpapi.WebhookBody(0)(domain.Event{ID: "e1", Type: domain.EventCampaignSoldOut, At: at, Campaign: &c})
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Type string `json:"type"`
		Data struct {
			ID       string   `json:"id"`
			Cap      *int     `json:"cap"`
			Sold     int      `json:"sold"`
			Vouchers []string `json:"vouchers"`
			EndsAt   string   `json:"ends_at"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatal(err)
	}
	d := got.Data
	if got.Type != "campaign.sold_out" || d.ID != "4" || d.Cap == nil || *d.Cap != 300 || d.Sold != 300 ||
		len(d.Vouchers) != 2 || d.Vouchers[0] != c.ID.Variant(1).String() || d.EndsAt != "2026-12-05T11:00:00.000Z" {
		t.Fatalf("campaign.sold_out body = %s", body)
	}
}
