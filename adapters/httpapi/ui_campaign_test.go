package httpapi_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/seckill/seckill/domain"
)

// The live page, in a real headless Chromium, shows a drop: its units left under the
// cap falling as its vouchers sell, its cap and limit per person, its vouchers marked
// as the drop's in the list; and a shopper's grab of a voucher with units, once the
// drop's cap is reached, reads campaign_sold_out.
func TestUIShowsADropInChromium(t *testing.T) {
	t.Parallel()
	a := newCampaignAPI(t)
	c := a.createCampaign(2, `,"cap":3`)
	v1, v2 := a.createVariant(c, "Size 41", 5), a.createVariant(c, "Size 42", 5)
	ctx := browser(t)
	navCtx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	if err := chromedp.Do(navCtx, chromedp.Navigate(a.url+"/ui/")); err != nil {
		t.Fatalf("open the page: %v", err)
	}
	row := fmt.Sprintf(`#campaigns tr[data-campaign-id="%s"]`, c)
	waitText(t, ctx, row+" .remaining", "3")
	waitText(t, ctx, row+" .cap", "3")
	waitText(t, ctx, row+" .limit", "2")
	waitText(t, ctx, row+" .variants", "Size 41 (5), Size 42 (5)")
	waitText(t, ctx, fmt.Sprintf(`tr[data-voucher-id="%s"] .drop-of`, v2), "drop Sneakers")

	for u, v := range map[domain.UserID]string{10: v1, 11: v2, 12: v2} {
		if r := a.do(http.MethodPost, "/api/v1/vouchers/"+v+"/grab", a.token(u, false), ""); r.Status != http.StatusAccepted {
			t.Fatalf("user %d grabs %s: %d %s", u, v, r.Status, r.Raw)
		}
	}
	waitText(t, ctx, row+" .remaining", "0")
	waitText(t, ctx, row+" .variants", "Size 41 (4), Size 42 (3)")

	// A shopper grabs Size 41 from the page: units left, the cap reached.
	evaluate[bool](t, ctx, fmt.Sprintf(`document.getElementById("token").value = %q;
		document.getElementById("token-form").requestSubmit(); true`, a.token(20, false)))
	grab := fmt.Sprintf(`tr[data-voucher-id="%s"] button[data-action="grab"]`, v1)
	waitText(t, ctx, grab, "grab")
	evaluate[bool](t, ctx, fmt.Sprintf(`document.querySelector(%q).click(); true`, grab))
	waitText(t, ctx, "#action-note", "campaign_sold_out")
}
