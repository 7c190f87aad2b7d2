package httpapi_test

import (
	"context"
	"encoding/json"
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

// A shopper joins a drop's one waiting room from the live page, in a real headless
// Chromium: the join from one size's row puts the user in the drop's queue, which
// every size's row then follows; once let in, the pass grabs another size.
func TestUIJoinsADropsWaitingRoomInChromium(t *testing.T) {
	t.Parallel()
	a := newCampaignAPI(t)
	now := time.Now().UTC()
	body, _ := json.Marshal(map[string]any{"title": "Sneakers", "per_user_limit": 1, "begins_at": now.Add(6 * time.Second),
		"ends_at": now.Add(time.Hour), "admission": "waiting_room", "queue_window": 5, "queue_opens_at": now})
	r := a.do(http.MethodPost, "/api/v1/campaigns", a.admin, string(body))
	if r.Status != http.StatusCreated {
		t.Fatalf("create: %d %s", r.Status, r.Raw)
	}
	c := r.Body["id"].(string)
	v1, v2 := a.createVariant(c, "Size 41", 5), a.createVariant(c, "Size 42", 5)
	a.stepRooms()
	ctx := browser(t)
	navCtx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	if err := chromedp.Do(navCtx, chromedp.Navigate(a.url+"/ui/")); err != nil {
		t.Fatalf("open the page: %v", err)
	}
	waitText(t, ctx, fmt.Sprintf(`#campaigns tr[data-campaign-id="%s"] [data-drop-room]`, c), "one waiting room")
	waitText(t, ctx, fmt.Sprintf(`tr[data-voucher-id="%s"] [data-room]`, v2), "the drop's waiting room")
	evaluate[bool](t, ctx, fmt.Sprintf(`document.getElementById("token").value = %q;
		document.getElementById("token-form").requestSubmit(); true`, a.token(78, false)))
	click(t, ctx, fmt.Sprintf(`tr[data-voucher-id="%s"] button.join`, v1))
	waitText(t, ctx, "#action-note", "drop "+c+": in the queue")
	// One place for the drop: the other size's row follows it, and offers the grab
	// with the pass once the user is let in.
	click(t, ctx, fmt.Sprintf(`tr[data-voucher-id="%s"] button.grab`, v2))
	waitText(t, ctx, "#action-note", "grabbed, order ")
	waitText(t, ctx, "#orders tbody", "Size 42 ("+v2+")")
	if r := a.do(http.MethodGet, "/api/v1/campaigns/"+c+"/queue", a.token(78, false), ""); r.Status != http.StatusOK ||
		r.Body["admitted"] != true || r.Body["pass"] != nil {
		t.Fatalf("the place once the pass grabbed: %d %s", r.Status, r.Raw)
	}
	waitText(t, ctx, fmt.Sprintf(`tr[data-voucher-id="%s"] [data-place]`, v1), "let in")
}

// A shopper enters a drop's one draw from the live page, in a real headless Chromium:
// the drops table marks the drop as sold by one draw and counts its entrants, the
// enter button of one size's row enters the draw choosing that size, the other size's
// changes the choice; once drawn, the drops table tells how many entered and won, the
// shopper's orders list the size chosen last, and so do the published entrants.
func TestUIEntersADropsDrawInChromium(t *testing.T) {
	t.Parallel()
	a := newCampaignAPI(t)
	ctx := browser(t)
	navCtx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	if err := chromedp.Do(navCtx, chromedp.Navigate(a.url+"/ui/")); err != nil {
		t.Fatalf("open the page: %v", err)
	}
	// Signed in first, the page reads every second: the drop shows at once.
	evaluate[bool](t, ctx, fmt.Sprintf(`document.getElementById("token").value = %q;
		document.getElementById("token-form").requestSubmit(); true`, a.token(78, false)))
	waitText(t, ctx, "#who-text", "signed in as user 78")

	// The entries close at begins_at: the steps before it wait on a page already open.
	now := time.Now().UTC()
	body, _ := json.Marshal(map[string]any{"title": "Sneakers", "per_user_limit": 1, "begins_at": now.Add(25 * time.Second),
		"ends_at": now.Add(time.Hour), "admission": "draw", "entries_open_at": now.Add(-time.Minute)})
	r := a.do(http.MethodPost, "/api/v1/campaigns", a.admin, string(body))
	if r.Status != http.StatusCreated {
		t.Fatalf("create: %d %s", r.Status, r.Raw)
	}
	c := r.Body["id"].(string)
	v1, v2 := a.createVariant(c, "Size 41", 5), a.createVariant(c, "Size 42", 5)
	drop := fmt.Sprintf(`#campaigns tr[data-campaign-id="%s"]`, c)
	waitText(t, ctx, drop+" [data-drop-draw]", "one draw")
	waitText(t, ctx, drop+` [data-draw="entries"]`, "draw: 0 entered")
	waitText(t, ctx, fmt.Sprintf(`tr[data-voucher-id="%s"] [data-draw]`, v2), "the drop's draw")

	click(t, ctx, fmt.Sprintf(`tr[data-voucher-id="%s"] button.enter`, v1))
	waitText(t, ctx, "#action-note", "drop "+c+": entered, choosing Size 41")
	waitText(t, ctx, drop+` [data-draw="entries"]`, "draw: 1 entered")
	waitText(t, ctx, fmt.Sprintf(`tr[data-voucher-id="%s"] button.enter`, v1), "entered: your choice")
	click(t, ctx, fmt.Sprintf(`tr[data-voucher-id="%s"] button.enter`, v2))
	waitText(t, ctx, "#action-note", "drop "+c+": entered, choosing Size 42")
	waitText(t, ctx, fmt.Sprintf(`tr[data-voucher-id="%s"] [data-draw="entries"]`, v1), "the drop's draw · 1 entered")

	a.stepDraws()
	waitText(t, ctx, drop+` [data-draw="drawn"]`, "1 entered · 1 won · seed")
	waitText(t, ctx, fmt.Sprintf(`tr[data-voucher-id="%s"] [data-draw="drawn"]`, v2), "the drop's draw · drawn")
	waitText(t, ctx, "#orders tbody", "Size 42 ("+v2+")")
	if got, want := a.entrantsOf(c), fmt.Sprintf("78,%s\n", v2); got != want {
		t.Fatalf("the published entrants %q; want %q", got, want)
	}
}
