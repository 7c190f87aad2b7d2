package httpapi_test

import (
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/seckill/seckill/adapters/testenv"
)

// TestPublicReadsAreCacheable: the voucher list and a voucher carry a short public
// freshness and a validator; a request naming the validator is answered 304 with no
// body, and a changed voucher gets a new validator.
func TestPublicReadsAreCacheable(t *testing.T) {
	t.Parallel()
	a := newAPI(t, func(s *setup) { s.http.PublicMaxAge = 2 })
	id := a.createVoucher(5, 1)
	for _, path := range []string{"/api/v1/vouchers", "/api/v1/vouchers/" + id} {
		first := a.raw(http.MethodGet, path, "", "", "")
		tag := first.Header.Get("ETag")
		if first.StatusCode != http.StatusOK || first.Header.Get("Cache-Control") != "public, max-age=2" || !strings.HasPrefix(tag, `W/"`) {
			t.Fatalf("GET %s: %d, Cache-Control %q, ETag %q", path, first.StatusCode, first.Header.Get("Cache-Control"), tag)
		}
		again := a.conditional(path, tag)
		if again.StatusCode != http.StatusNotModified || len(again.Body) != 0 || again.Header.Get("ETag") != tag {
			t.Fatalf("GET %s If-None-Match %s: %d, %d bytes, ETag %q; want 304, none, the same tag", path, tag, again.StatusCode, len(again.Body), again.Header.Get("ETag"))
		}
		if other := a.conditional(path, `"another", `+strings.TrimPrefix(tag, "W/")); other.StatusCode != http.StatusNotModified {
			t.Fatalf("GET %s with the tag in a list, strong form: %d, want 304", path, other.StatusCode)
		}
	}
	tag := a.raw(http.MethodGet, "/api/v1/vouchers/"+id, "", "", "").Header.Get("ETag")
	a.do(http.MethodPost, "/api/v1/vouchers/"+id+"/grab", a.token(7, false), "")
	if r := a.conditional("/api/v1/vouchers/"+id, tag); r.StatusCode != http.StatusOK || r.Header.Get("ETag") == tag {
		t.Fatalf("after a grab: %d, ETag %q (was %q); want 200 with a new tag", r.StatusCode, r.Header.Get("ETag"), tag)
	}
	if r := a.raw(http.MethodGet, "/api/v1/vouchers/999", "", "", ""); r.StatusCode != http.StatusNotFound || r.Header.Get("ETag") != "" {
		t.Fatalf("an unknown voucher: %d, ETag %q; want 404 without a validator", r.StatusCode, r.Header.Get("ETag"))
	}
	if r := a.raw(http.MethodGet, "/api/v1/time", "", "", ""); r.Header.Get("Cache-Control") != "no-store" {
		t.Fatalf("the clock: Cache-Control %q, want no-store", r.Header.Get("Cache-Control"))
	}
}

// TestLargeAnswersAreGzipped: an answer of a kilobyte or more is gzipped for a
// client that accepts it, and decodes to the plain answer; the OpenAPI document and
// the page are revalidated with their validator.
func TestLargeAnswersAreGzipped(t *testing.T) {
	t.Parallel()
	a := newAPI(t)
	want := a.raw(http.MethodGet, "/openapi.json", "", "", "").Body
	req, _ := http.NewRequest(http.MethodGet, a.url+"/openapi.json", nil)
	req.Header.Set("Accept-Encoding", "gzip")
	res, err := http.DefaultTransport.RoundTrip(req) // the transport alone does not decode
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	if res.Header.Get("Content-Encoding") != "gzip" || len(raw) >= len(want)/3 {
		t.Fatalf("openapi.json: Content-Encoding %q, %d bytes against %d plain", res.Header.Get("Content-Encoding"), len(raw), len(want))
	}
	zr, err := gzip.NewReader(strings.NewReader(string(raw)))
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(zr)
	if string(got) != string(want) {
		t.Fatal("the gzipped document does not decode to the plain one")
	}
	t.Logf("openapi.json: %d bytes plain, %d gzipped", len(want), len(raw))
	for _, path := range []string{"/openapi.json", "/ui/app.js"} {
		first := a.raw(http.MethodGet, path, "", "", "")
		if first.Header.Get("Cache-Control") != "no-cache" || first.Header.Get("ETag") == "" {
			t.Fatalf("%s: Cache-Control %q, ETag %q", path, first.Header.Get("Cache-Control"), first.Header.Get("ETag"))
		}
		if r := a.conditional(path, first.Header.Get("ETag")); r.StatusCode != http.StatusNotModified {
			t.Fatalf("%s revalidated: %d, want 304", path, r.StatusCode)
		}
	}
	// A small answer is sent as it is.
	small, _ := http.NewRequest(http.MethodGet, a.url+"/healthz", nil)
	small.Header.Set("Accept-Encoding", "gzip")
	if r, err := http.DefaultTransport.RoundTrip(small); err != nil || r.Header.Get("Content-Encoding") != "" {
		t.Fatalf("healthz: %v, Content-Encoding %q", err, r.Header.Get("Content-Encoding"))
	} else {
		_ = r.Body.Close()
	}
}

// conditional GETs path with If-None-Match tag.
func (a *api) conditional(path, tag string) rawAnswer {
	a.t.Helper()
	return a.raw(http.MethodGet, path, "", "", "", "If-None-Match", tag)
}

// TestCORSAnswersListedOriginsOnly: a listed origin gets its own value back and the
// headers a client reads exposed, its preflight the methods and headers the API
// takes; any other origin gets no CORS header; no credentials ever.
func TestCORSAnswersListedOriginsOnly(t *testing.T) {
	t.Parallel()
	const shop = "https://www.shop.example"
	a := newAPI(t, func(s *setup) { s.http.CORSOrigins = []string{shop} })
	id := a.createVoucher(5, 1)
	get := func(origin string) rawAnswer {
		return a.raw(http.MethodGet, "/api/v1/vouchers/"+id, "", "", "", "Origin", origin)
	}
	r := get(shop)
	if r.Header.Get("Access-Control-Allow-Origin") != shop || !strings.Contains(r.Header.Get("Access-Control-Expose-Headers"), "Retry-After") ||
		r.Header.Get("Access-Control-Allow-Credentials") != "" {
		t.Fatalf("listed origin: %v", r.Header)
	}
	if r := get("https://evil.example"); r.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Fatalf("another origin: %v", r.Header)
	}
	pre := a.raw(http.MethodOptions, "/api/v1/vouchers/"+id+"/grab", "", "", "", "Origin", shop,
		"Access-Control-Request-Method", "POST", "Access-Control-Request-Headers", "authorization, x-seckill-pass")
	if pre.StatusCode != http.StatusNoContent || pre.Header.Get("Access-Control-Allow-Origin") != shop ||
		!strings.Contains(pre.Header.Get("Access-Control-Allow-Methods"), "POST") ||
		!strings.Contains(pre.Header.Get("Access-Control-Allow-Headers"), "X-Seckill-Pass") {
		t.Fatalf("preflight: %d %v", pre.StatusCode, pre.Header)
	}
}

// TestAStorefrontOnAnotherOriginInChromium: a page served from another origin reads
// a voucher with fetch, grabs it with a bearer token (a preflighted POST) and reads
// Retry-After-style exposed headers — in a real Chromium, whose CORS checks are the
// ones a shop's customers meet; an origin not listed is blocked by the browser.
func TestAStorefrontOnAnotherOriginInChromium(t *testing.T) {
	t.Parallel()
	shop := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "<!doctype html><title>shop</title>")
	}))
	defer shop.Close()
	a := newAPI(t, func(s *setup) { s.http.CORSOrigins = []string{shop.URL} })
	id := a.createVoucher(5, 1)
	ctx := browser(t)
	run, cancel := context.WithTimeout(ctx, 3*testenv.Patience)
	defer cancel()
	if _, err := chromedp.Run(run, chromedp.Navigate(shop.URL)); err != nil {
		t.Fatal(err)
	}
	script := fmt.Sprintf(`(async () => {
		const v = await (await fetch(%[1]q + "/api/v1/vouchers/%[2]s")).json();
		const g = await fetch(%[1]q + "/api/v1/vouchers/%[2]s/grab", {method: "POST",
			headers: {Authorization: "Bearer %[3]s", "Content-Type": "application/json"}, body: "{}"});
		const body = await g.json();
		return JSON.stringify({title: v.title, status: g.status, order: !!body.order_id, rid: !!g.headers.get("X-Request-Id")});
	})()`, a.url, id, a.token(7, false))
	got, err := chromedp.Run(run, chromedp.Evaluate[string](script, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("the storefront's calls: %v", err)
	}
	if got != `{"title":"Coffee","status":202,"order":true,"rid":true}` {
		t.Fatalf("the storefront saw %s", got)
	}
	// The same page, its origin not listed: the browser refuses to hand it the answer.
	b := newAPI(t)
	blocked := fmt.Sprintf(`fetch(%q + "/api/v1/vouchers").then(() => "read", () => "blocked")`, b.url)
	if got, err = chromedp.Run(run, chromedp.Evaluate[string](blocked, chromedp.EvalAwaitPromise)); err != nil || got != "blocked" {
		t.Fatalf("an unlisted origin's fetch: %q, %v; want blocked", got, err)
	}
}
