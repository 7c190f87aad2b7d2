package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/seckill/seckill/adapters/httpapi"
	"github.com/seckill/seckill/adapters/testenv"
	"github.com/seckill/seckill/domain"
)

// The page's files are served from the binary, with their types; nothing else is.
func TestUIServesItsFiles(t *testing.T) {
	t.Parallel()
	a := newAPI(t)
	for _, tc := range []struct{ path, ctype, contains string }{
		{"/ui/", "text/html", `<script type="module" src="app.js">`},
		{"/ui/index.html", "text/html", "<title>"},
		{"/ui/app.js", "text/javascript", `from "./api.js"`},
		{"/ui/api.js", "text/javascript", "sessionStorage"},
		{"/ui/style.css", "text/css", ".bar"},
	} {
		res, err := http.Get(a.url + tc.path)
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(res.Body)
		_ = res.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		if res.StatusCode != http.StatusOK || !strings.HasPrefix(res.Header.Get("Content-Type"), tc.ctype) || !strings.Contains(string(body), tc.contains) {
			t.Errorf("GET %s: %d %q, want 200 %s with %q", tc.path, res.StatusCode, res.Header.Get("Content-Type"), tc.ctype, tc.contains)
		}
		checkResponse(t, http.MethodGet, tc.path, res.StatusCode, res.Header, body)
	}
	for _, p := range []string{"/ui/nope.js", "/ui/../openapi.json", "/ui/ui"} {
		if r := a.do(http.MethodGet, p, "", ""); r.Status != http.StatusNotFound || r.code() != "not_found" {
			t.Errorf("GET %s: %d %s, want 404 not_found", p, r.Status, r.Raw)
		}
	}
	// The page's address without its slash, and the site's root, lead to the page.
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for _, tc := range []struct {
		path   string
		status int
	}{{"/ui", http.StatusMovedPermanently}, {"/", http.StatusFound}} {
		res, err := client.Get(a.url + tc.path)
		if err != nil {
			t.Fatal(err)
		}
		_ = res.Body.Close()
		if res.StatusCode != tc.status || res.Header.Get("Location") != "/ui/" {
			t.Fatalf("GET %s: %d to %q, want %d to /ui/", tc.path, res.StatusCode, res.Header.Get("Location"), tc.status)
		}
		checkResponse(t, http.MethodGet, tc.path, res.StatusCode, res.Header, nil)
	}
}

// chromium finds Debian's chromium (scripts/test.sh installs it when missing). Outside
// CI a machine without it skips the browser tests; in CI that fails.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("chromium is not installed (scripts/test.sh installs it with apt-get as root)")
	}
	t.Skip("chromium is not installed: skipping the browser test (scripts/test.sh installs it as root)")
	return ""
}

// browser starts a headless Chromium with a fresh profile and returns a context
// driving one tab of it.
func browser(t *testing.T) context.Context {
	t.Helper()
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromium(t)),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	// Start the browser now. The first run's context owns the browser, so it must be
	// the test's, not one with a deadline that would close the browser when it lapses.
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	return ctx
}

// evaluate runs a JavaScript expression in the page and returns its result. It reads
// the DOM afresh each time: the page re-renders every second, so a node found once
// would soon be stale.
func evaluate[T any](t *testing.T, ctx context.Context, js string) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](js))
	if err != nil {
		t.Fatalf("evaluate %s: %v", js, err)
	}
	return v
}

// textOf is the text of the first element selector matches, "" when none does.
func textOf(t *testing.T, ctx context.Context, selector string) string {
	t.Helper()
	return evaluate[string](t, ctx, fmt.Sprintf(`(document.querySelector(%q) || {textContent: ""}).textContent`, selector))
}

// waitText waits, generously, until the text of selector contains want.
func waitText(t *testing.T, ctx context.Context, selector, want string) {
	t.Helper()
	testenv.Eventually(t, 3*testenv.Patience, fmt.Sprintf("the page shows %q at %s", want, selector), func() (bool, string) {
		got := textOf(t, ctx, selector)
		return strings.Contains(got, want), fmt.Sprintf("%q", got)
	})
}

// shownRemaining reads the remaining count the page shows for voucher id, -1 while the
// page does not show the voucher.
func shownRemaining(t *testing.T, ctx context.Context, id string) int {
	t.Helper()
	text := textOf(t, ctx, fmt.Sprintf(`tr[data-voucher-id="%s"] .remaining`, id))
	if text == "" {
		return -1
	}
	n, err := strconv.Atoi(strings.TrimSpace(text))
	if err != nil {
		t.Fatalf("remaining shown as %q", text)
	}
	return n
}

// waitShown waits, generously, until the page shows voucher id with a remaining count
// that ok accepts, and returns it.
func waitShown(t *testing.T, ctx context.Context, id string, what string, ok func(int) bool) int {
	t.Helper()
	var n int
	testenv.Eventually(t, 3*testenv.Patience, fmt.Sprintf("the page shows voucher %s with %s remaining", id, what), func() (bool, string) {
		n = shownRemaining(t, ctx, id)
		return ok(n), fmt.Sprintf("%d remaining", n)
	})
	return n
}

// The live page, in a real headless Chromium, shows a voucher the test creates and its
// remaining count falling while a burst of grabs sells it; with an admin token it
// shows the voucher's units by state, its waitlist's length and the grab counts, and
// its pause button pauses the sale.
func TestUIShowsTheSaleLiveInChromium(t *testing.T) {
	t.Parallel()
	a := newAPI(t)
	const stock = 40
	id := a.createVoucher(stock, 1)
	ctx := browser(t)
	navCtx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	if err := chromedp.Do(navCtx, chromedp.Navigate(a.url+"/ui/")); err != nil {
		t.Fatalf("open the page: %v", err)
	}
	waitShown(t, ctx, id, fmt.Sprintf("%d before the sale", stock), func(n int) bool { return n == stock })
	// The page follows the sale's event stream (and reads the list only every 10 s).
	testenv.Eventually(t, 3*testenv.Patience, "the page follows the sale's stream", func() (bool, string) {
		n := evaluate[string](t, ctx, `document.body.dataset.followed || ""`)
		return n == "1", "streams followed: " + n
	})
	eventsSeen := func() int {
		n, _ := strconv.Atoi(evaluate[string](t, ctx, `document.body.dataset.events || "0"`))
		return n
	}
	before := eventsSeen()

	burst := func(from, users int) {
		var wg sync.WaitGroup
		for u := from; u < from+users; u++ {
			tok := a.token(domain.UserID(u), false)
			wg.Add(1)
			go func() { defer wg.Done(); a.do(http.MethodPost, "/api/v1/vouchers/"+id+"/grab", tok, "") }()
		}
		wg.Wait()
	}
	burst(1000, 15)
	mid := waitShown(t, ctx, id, "25 after 15 grabs", func(n int) bool { return n == stock-15 })
	if after := eventsSeen(); after <= before {
		t.Fatalf("the count fell with no voucher event received (%d before, %d after): the page polled", before, after)
	}
	burst(2000, 60) // sells the rest
	waitShown(t, ctx, id, fmt.Sprintf("0 after the sell-out (was %d)", mid), func(n int) bool { return n == 0 })
	// Two users wait for a unit to come back.
	for _, u := range []domain.UserID{3000, 3001} {
		if r := a.do(http.MethodPost, "/api/v1/vouchers/"+id+"/waitlist", a.token(u, false), ""); r.Status != http.StatusAccepted {
			t.Fatalf("join the waitlist: %d %s", r.Status, r.Raw)
		}
	}

	// The admin view: paste a token, see the stats and the grab counts, pause the
	// sale from the page.
	evaluate[bool](t, ctx, fmt.Sprintf(`document.getElementById("token").value = %q;
		document.getElementById("token-form").requestSubmit(); true`, a.admin))
	if stored := evaluate[string](t, ctx, `sessionStorage.getItem("seckill.token") || ""`); stored != a.admin {
		t.Fatalf("the token is not kept in sessionStorage: %q", stored)
	}
	waitText(t, ctx, fmt.Sprintf(`tr[data-detail-for="%s"] td[data-count="queued"]`, id), strconv.Itoa(stock))
	waitText(t, ctx, fmt.Sprintf(`tr[data-detail-for="%s"] [data-waitlist]`, id), "2")
	waitText(t, ctx, `#rate-totals [data-outcome="reserved"]`, fmt.Sprintf("reserved %d", stock))
	// The page's own stream is among the instance's open streams.
	testenv.Eventually(t, 3*testenv.Patience, "the page shows the streams open", func() (bool, string) {
		n, err := strconv.Atoi(textOf(t, ctx, "#streams"))
		return err == nil && n >= 1, textOf(t, ctx, "#streams")
	})
	evaluate[bool](t, ctx, fmt.Sprintf(`document.querySelector('tr[data-voucher-id="%s"] button.toggle').click(); true`, id))
	testenv.Eventually(t, 3*testenv.Patience, "the page's pause button paused the sale", func() (bool, string) {
		return a.do(http.MethodGet, "/api/v1/vouchers/"+id, "", "").Body["paused"] == true, ""
	})
	waitText(t, ctx, fmt.Sprintf(`tr[data-voucher-id="%s"] button.toggle`, id), "resume")
}

// The live page tells time by the server's clock, not the browser's: with the
// server's clock two hours ahead of the browser's, a sale that began an hour ago by
// the server (an hour from now by the browser) shows live, and one that begins ten
// minutes from now by the server (two hours and ten minutes by the browser) shows
// upcoming, counting down from ten minutes at most.
func TestUICountsDownByTheServersClock(t *testing.T) {
	t.Parallel()
	clock := &shiftedClock{}
	clock.set(2 * time.Hour)
	a := newAPI(t, withClock(clock))
	now := time.Now()
	began := a.storeVoucher(domain.Voucher{Title: "began", Stock: 5, PerUserLimit: 1,
		BeginsAt: now.Add(time.Hour), EndsAt: now.Add(5 * time.Hour)})
	soon := a.storeVoucher(domain.Voucher{Title: "soon", Stock: 5, PerUserLimit: 1,
		BeginsAt: now.Add(2*time.Hour + 10*time.Minute), EndsAt: now.Add(5 * time.Hour)})
	ctx := browser(t)
	navCtx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	if err := chromedp.Do(navCtx, chromedp.Navigate(a.url+"/ui/")); err != nil {
		t.Fatalf("open the page: %v", err)
	}
	waitText(t, ctx, fmt.Sprintf(`tr[data-voucher-id="%s"] .badge`, began), "live")
	waitText(t, ctx, fmt.Sprintf(`tr[data-voucher-id="%s"] .badge`, soon), "upcoming")
	waitText(t, ctx, fmt.Sprintf(`tr[data-voucher-id="%s"] .countdown`, soon), "starts in ")
	shown := textOf(t, ctx, fmt.Sprintf(`tr[data-voucher-id="%s"] .countdown`, soon))
	m := regexp.MustCompile(`^starts in (\d+)m (\d+)s$`).FindStringSubmatch(shown)
	if m == nil {
		t.Fatalf("countdown %q, want minutes and seconds (the server's ten minutes), not the browser's two hours", shown)
	}
	minutes, _ := strconv.Atoi(m[1])
	seconds, _ := strconv.Atoi(m[2])
	if left := 60*minutes + seconds; left > 600 {
		t.Fatalf("countdown %q: %d s, want at most 600 (by the server's clock)", shown, left)
	}
}

// countsShown is the units by state the page shows for voucher id, by the stats' names
// (empty while it shows none).
func countsShown(t *testing.T, ctx context.Context, id string) map[string]string {
	t.Helper()
	return evaluate[map[string]string](t, ctx, fmt.Sprintf(`Object.fromEntries(Array.from(
		document.querySelectorAll('tr[data-detail-for="%s"] td[data-count]'), (td) => [td.dataset.count, td.textContent]))`, id))
}

// click waits, generously, until selector matches a button, and clicks it. The page
// re-renders every second: the button is found and clicked in one go.
func click(t *testing.T, ctx context.Context, selector string) {
	t.Helper()
	testenv.Eventually(t, 3*testenv.Patience, "the page shows "+selector, func() (bool, string) {
		return evaluate[bool](t, ctx, fmt.Sprintf(`(() => { const b = document.querySelector(%q);
			if (!b || b.disabled) return false; b.click(); return true; })()`, selector)), ""
	})
}

// stepRooms runs the waiting rooms' step every 100 ms, as a worker does, until the
// test ends.
func (a *api) stepRooms() {
	a.every(func() { _ = a.rooms.Handle(context.Background()) })
}

// every runs step every 100 ms, as a worker's loop does, until the test ends.
func (a *api) every(step func()) {
	stop := make(chan struct{})
	a.t.Cleanup(func() { close(stop) })
	go func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
				step()
			}
		}
	}()
}

// visible tells whether selector matches an element the page displays.
func visible(t *testing.T, ctx context.Context, selector string) bool {
	t.Helper()
	return evaluate[bool](t, ctx, fmt.Sprintf(`(() => { const e = document.querySelector(%q);
		return !!e && e.getClientRects().length > 0; })()`, selector))
}

// submitEdit fills the page's edit form with fields (name → value) and submits it.
func submitEdit(t *testing.T, ctx context.Context, fields map[string]string) {
	t.Helper()
	js := `(() => { const f = document.getElementById("edit-form"); f.reset();`
	for name, value := range fields {
		js += fmt.Sprintf(` f.elements[%q].value = %q;`, name, value)
	}
	evaluate[bool](t, ctx, js+` document.getElementById("edit-result").textContent = ""; f.requestSubmit(); return true; })()`)
}

// The live page runs a sale for the people running it, in a real headless Chromium: a
// sold-out sale reads sold_out; with an admin token (and a sign that it is in use) each
// sale's units by state match its stats and a chart of its last minutes fills with
// samples; the edit form adds units (under an Idempotency-Key) and shows a refused
// removal's code; "end now" ends the sale for grabs too; signing out forgets the token.
func TestUIRunsASaleInChromium(t *testing.T) {
	t.Parallel()
	a := newAPI(t)
	id := a.createVoucher(4, 1)
	row := fmt.Sprintf(`tr[data-voucher-id="%s"]`, id)
	detail := fmt.Sprintf(`tr[data-detail-for="%s"]`, id)
	ctx := browser(t)
	navCtx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	if err := chromedp.Do(navCtx, chromedp.Navigate(a.url+"/ui/")); err != nil {
		t.Fatalf("open the page: %v", err)
	}
	waitShown(t, ctx, id, "4 before the sale", func(n int) bool { return n == 4 })
	if visible(t, ctx, "#who") {
		t.Fatal("the token's sign shows with no token")
	}

	// Sold out: the tag is the server's state, not a green "live".
	orders := make([]string, 4)
	for i := range orders {
		r := a.do(http.MethodPost, "/api/v1/vouchers/"+id+"/grab", a.token(domain.UserID(100+i), false), "")
		if r.Status != http.StatusAccepted {
			t.Fatalf("grab %d: %d %s", i, r.Status, r.Raw)
		}
		orders[i] = r.Body["order_id"].(string)
	}
	waitText(t, ctx, row+" .badge", "sold_out")
	if got := textOf(t, ctx, row+" .badge"); got != "sold_out" {
		t.Fatalf("sold-out voucher tagged %q", got)
	}

	// The admin view, with its sign.
	evaluate[bool](t, ctx, fmt.Sprintf(`document.getElementById("token").value = %q;
		document.getElementById("token-form").requestSubmit(); true`, a.admin))
	testenv.Eventually(t, 3*testenv.Patience, "the admin sign shows", func() (bool, string) {
		return visible(t, ctx, "#who.admin-sign") && strings.Contains(textOf(t, ctx, "#who"), "admin token in use"), ""
	})

	// The units by state: two awaiting payment, one paid, one cancelled (back on sale).
	a.fulfillAll()
	if r := a.do(http.MethodPost, "/api/v1/orders/"+orders[0]+"/pay", a.token(100, false), ""); r.Status != http.StatusOK {
		t.Fatalf("pay: %d %s", r.Status, r.Raw)
	}
	if r := a.do(http.MethodPost, "/api/v1/orders/"+orders[1]+"/cancel", a.token(101, false), ""); r.Status != http.StatusOK {
		t.Fatalf("cancel: %d %s", r.Status, r.Raw)
	}
	want := map[string]string{"remaining": "1", "queued": "0", "awaiting_payment": "2", "paid": "1", "cancelled": "1", "expired": "0", "failed": "0"}
	testenv.Eventually(t, 3*testenv.Patience, "the page's counts match the stats", func() (bool, string) {
		r := a.do(http.MethodGet, "/api/v1/vouchers/"+id+"/stats", a.admin, "")
		shown := countsShown(t, ctx, id)
		for k, w := range want {
			if api := fmt.Sprint(r.Body[k]); api != w || shown[k] != w {
				return false, fmt.Sprintf("%s: stats %s, page %q, want %s (page %v, stats %s)", k, api, shown[k], w, shown, r.Raw)
			}
		}
		return true, ""
	})

	// The chart: a few samples drawn, the grabs seen as a rate above zero.
	testenv.Eventually(t, 3*testenv.Patience, "the chart has points", func() (bool, string) {
		c := evaluate[map[string]string](t, ctx, fmt.Sprintf(`(() => { const s = document.querySelector('%s svg.chart');
			return s ? {samples: s.dataset.samples, peak: s.dataset.peakRate,
				left: s.querySelector("polyline.left").getAttribute("points"),
				rate: s.querySelector("polyline.rate").getAttribute("points")} : {}; })()`, detail))
		samples, _ := strconv.Atoi(c["samples"])
		peak, _ := strconv.ParseFloat(c["peak"], 64)
		return samples >= 5 && len(strings.Fields(c["left"])) == samples && len(strings.Fields(c["rate"])) == samples-1 && peak > 0,
			fmt.Sprintf("%v", c)
	})

	// Edit: add units through the form, under an Idempotency-Key.
	evaluate[bool](t, ctx, `window.sentKeys = []; window.fetch = ((f) => (u, o) => {
		if (o && o.method === "PATCH") window.sentKeys.push(o.headers["Idempotency-Key"] || ""); return f(u, o); })(window.fetch); true`)
	click(t, ctx, row+" button.edit")
	testenv.Eventually(t, 3*testenv.Patience, "the edit form shows", func() (bool, string) { return visible(t, ctx, "#edit-form"), "" })
	submitEdit(t, ctx, map[string]string{"add_units": "10"})
	waitText(t, ctx, "#edit-result", "Saved")
	waitShown(t, ctx, id, "11 after adding 10", func(n int) bool { return n == 11 })
	waitText(t, ctx, row+" .stock", "14")
	if v := a.do(http.MethodGet, "/api/v1/vouchers/"+id, "", ""); v.Body["remaining"] != 11.0 || v.Body["stock"] != 14.0 {
		t.Fatalf("after the page's edit the API reads %s, want remaining 11 of 14", v.Raw)
	}
	if keys := evaluate[[]string](t, ctx, `window.sentKeys`); len(keys) != 1 || len(keys[0]) < 16 {
		t.Fatalf("the edit was sent with Idempotency-Keys %q, want one", keys)
	}

	// A removal of more than is on sale: refused with its code, nothing changed.
	submitEdit(t, ctx, map[string]string{"remove_units": "1000"})
	waitText(t, ctx, "#edit-result", "not_enough_units")
	if r := a.remaining(id); r != 11 {
		t.Fatalf("a refused removal changed remaining to %v", r)
	}

	// End now, after a confirm: the tag reads ended, and so do grabs.
	evaluate[bool](t, ctx, `window.confirmed = ""; window.confirm = (m) => { window.confirmed = m; return true; }; true`)
	click(t, ctx, row+" button.end-now")
	waitText(t, ctx, row+" .badge", "ended")
	if asked := evaluate[string](t, ctx, `window.confirmed`); !strings.Contains(asked, id) {
		t.Fatalf("end now asked %q, want a confirm naming the voucher", asked)
	}
	testenv.Eventually(t, 3*testenv.Patience, "a grab after end now answers 409 ended", func() (bool, string) {
		r := a.do(http.MethodPost, "/api/v1/vouchers/"+id+"/grab", a.token(200, false), "")
		return r.Status == http.StatusConflict && r.code() == "ended", r.Raw
	})

	// Sign out: the sign and the admin's controls go, the token is forgotten.
	click(t, ctx, "#sign-out")
	testenv.Eventually(t, 3*testenv.Patience, "signed out", func() (bool, string) {
		return !visible(t, ctx, "#who") && !visible(t, ctx, row+" button.edit") && !visible(t, ctx, detail), ""
	})
	if stored := evaluate[string](t, ctx, `sessionStorage.getItem("seckill.token") || ""`); stored != "" {
		t.Fatalf("the token is still in sessionStorage after sign out: %q", stored)
	}
}

// A person grabs a sale with a proof of work from the live page, in a real headless
// Chromium, and never sees the challenge: with a user's token the page fetches a
// challenge, solves it with Web Crypto and sends the proof (X-Seckill-Pow) with the
// grab, which is taken and spends the proof.
func TestUIGrabsWithAProofOfWorkInChromium(t *testing.T) {
	t.Parallel()
	a := newAPI(t)
	const difficulty = 12
	id := a.createPowVoucher(3, difficulty)
	row := fmt.Sprintf(`tr[data-voucher-id="%s"]`, id)
	ctx := browser(t)
	navCtx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	if err := chromedp.Do(navCtx, chromedp.Navigate(a.url+"/ui/")); err != nil {
		t.Fatalf("open the page: %v", err)
	}
	waitShown(t, ctx, id, "3 before the grab", func(n int) bool { return n == 3 })
	// The proofs the page sends, as the server gets them.
	evaluate[bool](t, ctx, `window.proofs = []; window.fetch = ((f) => (u, o) => {
		if (o && o.headers && o.headers["X-Seckill-Pow"]) window.proofs.push(o.headers["X-Seckill-Pow"]); return f(u, o); })(window.fetch); true`)
	evaluate[bool](t, ctx, fmt.Sprintf(`document.getElementById("token").value = %q;
		document.getElementById("token-form").requestSubmit(); true`, a.token(77, false)))
	click(t, ctx, row+" button.grab")
	waitText(t, ctx, "#action-note", "grabbed, order ")
	waitShown(t, ctx, id, "2 after the grab", func(n int) bool { return n == 2 })
	proofs := evaluate[[]string](t, ctx, `window.proofs`)
	if len(proofs) != 1 {
		t.Fatalf("the page sent proofs %q, want one", proofs)
	}
	challenge, nonce, _ := strings.Cut(proofs[0], ":")
	if !domain.PowSolves(challenge, nonce, difficulty) {
		t.Fatalf("the page's proof %q does not solve its challenge at %d bits", proofs[0], difficulty)
	}
	// The proof was spent: the same grab again is refused for want of a proof, with a
	// fresh challenge.
	r := a.serveFrom(http.MethodPost, "/api/v1/vouchers/"+id+"/grab", a.token(77, false), "", "192.0.2.1:1", "X-Seckill-Pow", proofs[0])
	if e, _ := r.Body["error"].(map[string]any); r.Status != http.StatusForbidden || r.code() != "challenge_required" || e["challenge"] == "" || e["difficulty"] != float64(difficulty) {
		t.Fatalf("the spent proof again: %d %s, want 403 challenge_required with a fresh challenge", r.Status, r.Raw)
	}
}

// A person joins a waiting room from the live page, follows its place, and once let
// in grabs with its pass, in a real headless Chromium: the page sends the pass
// (X-Seckill-Pass) it read from GET …/queue, and the grab uses it up. Then an admin's
// page of the sale tells the room's figures (GET …/queue/stats): who joined, who was
// let in, the passes outstanding, the published seed.
func TestUIJoinsAWaitingRoomAndGrabsWithItsPassInChromium(t *testing.T) {
	t.Parallel()
	a := newAPI(t)
	now := time.Now().UTC()
	// The sale starts in an hour, its queue open now: both users join before the start
	// however long the browser takes, and the start is then moved to a moment away.
	body, _ := json.Marshal(map[string]any{"title": "Room", "stock": 3, "begins_at": now.Add(time.Hour),
		"ends_at": now.Add(2 * time.Hour), "admission": "waiting_room", "queue_window": 2, "queue_opens_at": now})
	r := a.do(http.MethodPost, "/api/v1/vouchers", a.admin, string(body))
	if r.Status != http.StatusCreated {
		t.Fatalf("create: %d %s", r.Status, r.Raw)
	}
	id := r.Body["id"].(string)
	row := fmt.Sprintf(`tr[data-voucher-id="%s"]`, id)
	// Another user joins before the start, through the API.
	if r := a.do(http.MethodPost, "/api/v1/vouchers/"+id+"/queue", a.token(79, false), ""); r.Status != http.StatusAccepted {
		t.Fatalf("join of user 79: %d %s", r.Status, r.Raw)
	}
	a.stepRooms()
	ctx := browser(t)
	navCtx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	if err := chromedp.Do(navCtx, chromedp.Navigate(a.url+"/ui/")); err != nil {
		t.Fatalf("open the page: %v", err)
	}
	waitShown(t, ctx, id, "3 before the sale", func(n int) bool { return n == 3 })
	evaluate[bool](t, ctx, `window.passes = []; window.fetch = ((f) => (u, o) => {
		if (o && o.headers && o.headers["X-Seckill-Pass"]) window.passes.push(o.headers["X-Seckill-Pass"]); return f(u, o); })(window.fetch); true`)
	evaluate[bool](t, ctx, fmt.Sprintf(`document.getElementById("token").value = %q;
		document.getElementById("token-form").requestSubmit(); true`, a.token(78, false)))
	click(t, ctx, row+" button.join")
	waitText(t, ctx, "#action-note", "in the queue")
	start, _ := json.Marshal(map[string]any{"begins_at": time.Now().Add(time.Second)})
	if r := a.do(http.MethodPatch, "/api/v1/vouchers/"+id, a.admin, string(start)); r.Status != http.StatusOK {
		t.Fatalf("move the start: %d %s", r.Status, r.Raw)
	}
	waitText(t, ctx, row+" [data-room]", "window 2 passes")
	// After the shuffle at the start the row tells how many joined before it, and its
	// seed as published.
	waitText(t, ctx, row+" [data-room-entrants]", "2 joined before the start")
	shownSeed := func() string {
		return evaluate[string](t, ctx, fmt.Sprintf(`(document.querySelector('%s [data-room-seed] code') || {title: ""}).title`, row))
	}
	var seed string
	testenv.Eventually(t, 3*testenv.Patience, "the row shows the published seed", func() (bool, string) {
		place := a.do(http.MethodGet, "/api/v1/vouchers/"+id+"/queue", a.token(78, false), "")
		seed, _ = place.Body["seed"].(string)
		shown := shownSeed()
		return seed != "" && shown == seed, fmt.Sprintf("shown %q, published %q", shown, seed)
	})
	// Let in: the page offers the grab with the pass.
	click(t, ctx, row+" button.grab")
	waitText(t, ctx, "#action-note", "grabbed, order ")
	waitShown(t, ctx, id, "2 after the grab", func(n int) bool { return n == 2 })
	waitText(t, ctx, "#orders tbody", "Room ("+id+")")
	passes := evaluate[[]string](t, ctx, `window.passes`)
	if len(passes) != 1 {
		t.Fatalf("the page sent passes %q, want one", passes)
	}
	// The pass was used: the same grab again is refused.
	again := a.serveFrom(http.MethodPost, "/api/v1/vouchers/"+id+"/grab", a.token(78, false), "", "192.0.2.1:1", httpapi.PassHeader, passes[0])
	if again.Status != http.StatusForbidden && again.Status != http.StatusConflict {
		t.Fatalf("the used pass again: %d %s, want it refused", again.Status, again.Raw)
	}

	// An admin's page: both joined before the start and were let in (the window is
	// 2); one pass was used by the grab, the other is outstanding.
	if r := a.do(http.MethodGet, "/api/v1/vouchers/"+id+"/queue/stats", a.token(78, false), ""); r.Status != http.StatusForbidden {
		t.Fatalf("a shopper's read of the room's figures: %d %s", r.Status, r.Raw)
	}
	evaluate[bool](t, ctx, fmt.Sprintf(`document.getElementById("token").value = %q;
		document.getElementById("token-form").requestSubmit(); true`, a.admin))
	testenv.Eventually(t, 3*testenv.Patience, "the admin's page shows the room's figures", func() (bool, string) {
		got := evaluate[string](t, ctx, fmt.Sprintf(
			`Array.from(document.querySelectorAll('%s [data-queue]'), (e) => e.dataset.queue + " " + e.textContent).join(", ")`, row))
		return got == "joined 2, admitted 2, waiting 0, passes_outstanding 1", got
	})
	waitText(t, ctx, row+" [data-queue-figures]", "(2 before the start, 0 after)")
	waitText(t, ctx, row+" [data-queue-figures]", "of 2")
	if shown := shownSeed(); shown != seed {
		t.Fatalf("the admin's page shows seed %q, published %q", shown, seed)
	}
}
