package httpapi_test

import (
	"context"
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

	"github.com/seckill/seckill/adapters/testenv"
	"github.com/seckill/seckill/domain"
)

// The page's files are served from the binary, with their types; nothing else is.
func TestUIServesItsFiles(t *testing.T) {
	t.Parallel()
	a := newAPI(t)
	for _, tc := range []struct{ path, ctype, contains string }{
		{"/ui/", "text/html", `<script src="app.js">`},
		{"/ui/index.html", "text/html", "<title>"},
		{"/ui/app.js", "text/javascript", "sessionStorage"},
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
// shows the voucher's stats and the grab counts, and its pause button pauses the sale.
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
	burst(2000, 60) // sells the rest
	waitShown(t, ctx, id, fmt.Sprintf("0 after the sell-out (was %d)", mid), func(n int) bool { return n == 0 })

	// The admin view: paste a token, see the stats and the grab counts, pause the
	// sale from the page.
	evaluate[bool](t, ctx, fmt.Sprintf(`document.getElementById("token").value = %q;
		document.getElementById("token-form").requestSubmit(); true`, a.admin))
	if stored := evaluate[string](t, ctx, `sessionStorage.getItem("seckill.adminToken") || ""`); stored != a.admin {
		t.Fatalf("the token is not kept in sessionStorage: %q", stored)
	}
	waitText(t, ctx, fmt.Sprintf(`tr[data-voucher-id="%s"] .orders`, id), fmt.Sprintf("queued %d ·", stock))
	waitText(t, ctx, `#rates tr[data-outcome="reserved"]`, fmt.Sprintf("total %d", stock))
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
