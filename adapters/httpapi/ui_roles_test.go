package httpapi_test

import (
	"context"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/seckill/seckill/adapters/testenv"
	"github.com/seckill/seckill/domain"
)

// openPage opens the live page in a fresh headless Chromium and returns its tab.
func openPage(t *testing.T, a *api) context.Context {
	t.Helper()
	ctx := browser(t)
	navCtx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	if err := chromedp.Do(navCtx, chromedp.Navigate(a.url+"/ui/")); err != nil {
		t.Fatalf("open the page: %v", err)
	}
	return ctx
}

// useToken pastes tok in the page's token form.
func useToken(t *testing.T, ctx context.Context, tok string) {
	t.Helper()
	evaluate[bool](t, ctx, fmt.Sprintf(`document.getElementById("token").value = %q;
		document.getElementById("token-form").requestSubmit(); true`, tok))
}

// The live page knows a shopper's token from an admin's, in a real headless Chromium:
// with a shopper's it says whose it is, offers the grab and lists the shopper's
// orders, and shows none of the admin's page — no admin sign, no pause, edit or end
// buttons, no units by state, no instance figures — and never asks for what only an
// admin may read (so no 403 is shown anywhere). A sale ending decades from now tells
// its date, not a count of hours.
func TestUIShowsAShopperAShoppersPageInChromium(t *testing.T) {
	t.Parallel()
	a := newAPI(t)
	id := a.createVoucher(5, 1)
	now := time.Now()
	far := a.storeVoucher(domain.Voucher{Title: "far", Stock: 5, PerUserLimit: 1,
		BeginsAt: now.Add(-time.Minute), EndsAt: now.AddDate(72, 0, 0)})
	row := fmt.Sprintf(`tr[data-voucher-id="%s"]`, id)
	ctx := openPage(t, a)
	waitShown(t, ctx, id, "5 before the grab", func(n int) bool { return n == 5 })
	// Every path the page asks for from now on.
	evaluate[bool](t, ctx, `window.asked = []; window.fetch = ((f) => (u, o) => {
		window.asked.push(String(u)); return f(u, o); })(window.fetch); true`)
	useToken(t, ctx, a.token(77, false))
	waitText(t, ctx, "#who", "signed in as user 77")
	click(t, ctx, row+" button.grab")
	waitText(t, ctx, "#action-note", "grabbed, order ")
	order := regexp.MustCompile(`order (\S+) `).FindStringSubmatch(textOf(t, ctx, "#action-note"))[1]
	waitText(t, ctx, fmt.Sprintf(`#orders tr[data-order-id="%s"]`, order), "Coffee ("+id+")")
	a.fulfillAll()
	waitText(t, ctx, fmt.Sprintf(`#orders tr[data-order-id="%s"] .status`, order), "awaiting_payment")
	waitText(t, ctx, fmt.Sprintf(`#orders tr[data-order-id="%s"]`, order), "pay by ")

	for _, sel := range []string{"#who.admin-sign", "#ops", "#edit", row + " button.toggle", row + " button.edit",
		row + " button.end-now", "tr[data-detail-for]", "th.admin-only"} {
		if visible(t, ctx, sel) {
			t.Errorf("a shopper's page shows %s", sel)
		}
	}
	text := evaluate[string](t, ctx, `document.body.innerText`)
	for _, never := range []string{"403", "forbidden", "admin role required", "admin token", "stats not read", "refused"} {
		if strings.Contains(text, never) {
			t.Errorf("a shopper's page says %q:\n%s", never, text)
		}
	}
	for _, path := range evaluate[[]string](t, ctx, `window.asked`) {
		if strings.Contains(path, "/stats") || strings.Contains(path, "/metrics") {
			t.Errorf("a shopper's page asked for %s", path)
		}
	}
	ends := textOf(t, ctx, fmt.Sprintf(`tr[data-voucher-id="%s"] .countdown`, far))
	if want := fmt.Sprintf("ends on %d", now.AddDate(72, 0, 0).Year()); !regexp.MustCompile(`^ends on .*\d{4}$`).MatchString(ends) ||
		!strings.Contains(ends, fmt.Sprint(now.AddDate(72, 0, 0).Year())) {
		t.Errorf("a sale ending in 72 years counts down %q, want its date (%s …)", ends, want)
	}

	// The same page with an admin's token: the admin's page, with no grab.
	useToken(t, ctx, a.admin)
	testenv.Eventually(t, 3*testenv.Patience, "the admin's page shows", func() (bool, string) {
		return visible(t, ctx, "#who.admin-sign") && visible(t, ctx, "#ops") && visible(t, ctx, row+" button.toggle") &&
			!visible(t, ctx, row+" button.grab") && !visible(t, ctx, "#mine"), textOf(t, ctx, "#who")
	})
	// Its units by state say when they were read, apart from the row's live count.
	waitText(t, ctx, fmt.Sprintf(`tr[data-detail-for="%s"] [data-stats-at]`, id), "Units by state at ")
	waitText(t, ctx, fmt.Sprintf(`tr[data-detail-for="%s"] td[data-count="awaiting_payment"]`, id), "1")
}

// The admin's page shows the instance's figures once, above the list, and of the grab
// answers per second only the outcomes that came: with no grab since the last read,
// no rate at all, and the totals only of the outcomes seen.
func TestUIShowsOnlyTheRatesThatCameInChromium(t *testing.T) {
	t.Parallel()
	a := newAPI(t)
	id := a.createVoucher(3, 1)
	for u := range 5 {
		a.do(http.MethodPost, "/api/v1/vouchers/"+id+"/grab", a.token(domain.UserID(500+u), false), "")
	}
	ctx := openPage(t, a)
	waitShown(t, ctx, id, "0 after the sell-out", func(n int) bool { return n == 0 })
	useToken(t, ctx, a.admin)
	waitText(t, ctx, `#rate-totals [data-outcome="reserved"]`, "reserved 3")
	waitText(t, ctx, `#rate-totals [data-outcome="sold_out"]`, "sold_out 2")
	waitText(t, ctx, "#rates", "no grabs since the last read")
	if n := evaluate[int](t, ctx, `document.querySelectorAll("#rates [data-outcome], #rate-totals [data-outcome]").length`); n != 2 {
		t.Fatalf("%d outcomes shown, want reserved and sold_out only: %q %q", n, textOf(t, ctx, "#rates"), textOf(t, ctx, "#rate-totals"))
	}
	// The instance's figures sit above the list, not below its last voucher.
	if above := evaluate[bool](t, ctx, `document.getElementById("ops").getBoundingClientRect().bottom <=
		document.getElementById("vouchers").getBoundingClientRect().top`); !above {
		t.Fatal("the instance's figures are not above the list")
	}
}
