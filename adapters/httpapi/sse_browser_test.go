package httpapi_test

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/chromedp"

	"github.com/seckill/seckill/adapters/testenv"
	"github.com/seckill/seckill/domain"
)

// A browser's own EventSource, in a real headless Chromium, refused at the stream
// limit, reconnects by itself until a stream frees and then receives the voucher's
// events, each with an id. (A 503 ended it for good: WHATWG's EventSource takes any
// answer other than 200 as final.)
func TestEventSourceOutlastsTheStreamLimitInChromium(t *testing.T) {
	t.Parallel()
	a := newAPI(t, func(s *setup) { s.streams.Max, s.streams.Retry = 1, 200*time.Millisecond })
	voucher := a.createVoucher(10, 1)
	path := "/api/v1/vouchers/" + voucher + "/events"
	held, _ := a.stream(path, "") // takes the one stream
	held.next()

	ctx := browser(t)
	navCtx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	// A page of the API's origin (EventSource follows the same-origin rules).
	if err := chromedp.Do(navCtx, chromedp.Navigate(a.url+"/api/v1/time")); err != nil {
		t.Fatalf("open a page: %v", err)
	}
	evaluate[bool](t, ctx, fmt.Sprintf(`window.seen = {events: [], errors: 0, closed: false};
		window.es = new EventSource(%q);
		es.addEventListener("voucher", (e) => seen.events.push({id: e.lastEventId, remaining: JSON.parse(e.data).remaining}));
		es.addEventListener("error", () => { seen.errors++; if (es.readyState === EventSource.CLOSED) seen.closed = true; });
		true`, path))
	testenv.Eventually(t, 3*testenv.Patience, "the EventSource is refused and reconnects, three times", func() (bool, string) {
		if evaluate[bool](t, ctx, `seen.closed`) {
			t.Fatal("the EventSource was closed for good by its refusal")
		}
		if n := evaluate[int](t, ctx, `seen.events.length`); n != 0 {
			t.Fatalf("%d events past the limit", n)
		}
		n := evaluate[int](t, ctx, `seen.errors`)
		return n >= 3, fmt.Sprintf("%d refusals", n)
	})

	held.close()
	testenv.Eventually(t, 3*testenv.Patience, "the EventSource receives the voucher once a stream is free", func() (bool, string) {
		return evaluate[int](t, ctx, `seen.events.length`) >= 1, evaluate[string](t, ctx, `JSON.stringify(seen)`)
	})
	a.grabOne(voucher, a.token(10, false))
	testenv.Eventually(t, 3*testenv.Patience, "the EventSource receives the grab", func() (bool, string) {
		return evaluate[bool](t, ctx, `seen.events.some((e) => e.remaining === 9)`), evaluate[string](t, ctx, `JSON.stringify(seen)`)
	})
	if ids := evaluate[bool](t, ctx, `seen.events.every((e) => e.id !== "")`); !ids {
		t.Fatalf("an event without an id: %s", evaluate[string](t, ctx, `JSON.stringify(seen)`))
	}
}

// The live page, in a real headless Chromium, whose sale's stream is refused at the
// limit, reads the list every second meanwhile (it shows the grabs with no event
// received), and follows the stream again once one is free (the grabs then come as
// events).
func TestUIFallsBackToPollingAndRecoversInChromium(t *testing.T) {
	t.Parallel()
	a := newAPI(t, func(s *setup) { s.streams.Max, s.streams.Retry = 1, 200*time.Millisecond })
	const stock = 20
	voucher := a.createVoucher(stock, 1)
	held, _ := a.stream("/api/v1/vouchers/"+voucher+"/events", "") // takes the one stream
	held.next()

	ctx := browser(t)
	navCtx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	if err := chromedp.Do(navCtx, chromedp.Navigate(a.url+"/ui/")); err != nil {
		t.Fatalf("open the page: %v", err)
	}
	waitShown(t, ctx, voucher, fmt.Sprintf("%d before the sale", stock), func(n int) bool { return n == stock })
	dataset := func(name string) string {
		return evaluate[string](t, ctx, fmt.Sprintf(`document.body.dataset.%s || ""`, name))
	}
	testenv.Eventually(t, 3*testenv.Patience, "the page polls for want of its stream", func() (bool, string) {
		return dataset("polling") == "1" && dataset("followed") == "0",
			fmt.Sprintf("polling %q, followed %q", dataset("polling"), dataset("followed"))
	})
	grab := func(from, n int) {
		for u := from; u < from+n; u++ {
			a.grabOne(voucher, a.token(domain.UserID(u), false))
		}
	}
	grab(1000, 3)
	waitShown(t, ctx, voucher, "3 fewer, read by polling", func(n int) bool { return n == stock-3 })
	if n := dataset("events"); n != "" && n != "0" {
		t.Fatalf("%s events received past the limit", n)
	}
	waitText(t, ctx, "#status", "down: reading every second")

	held.close()
	testenv.Eventually(t, 3*testenv.Patience, "the page follows its stream again", func() (bool, string) {
		return dataset("polling") == "0" && dataset("followed") == "1",
			fmt.Sprintf("polling %q, followed %q", dataset("polling"), dataset("followed"))
	})
	before, _ := strconv.Atoi(dataset("events"))
	grab(2000, 2)
	waitShown(t, ctx, voucher, "2 fewer again", func(n int) bool { return n == stock-5 })
	testenv.Eventually(t, 3*testenv.Patience, "the grabs came as events", func() (bool, string) {
		after, _ := strconv.Atoi(dataset("events"))
		return after > before, fmt.Sprintf("%d events before, %d after", before, after)
	})
}

// The live page, in a real headless Chromium, whose sale's stream is answered 502 (as
// a proxy might: an answer EventSource takes as final and never retries) reads the
// list every second meanwhile, opens the stream again a few seconds later, and
// follows it once it is answered.
func TestUIReopensAStreamAfterAFinalErrorInChromium(t *testing.T) {
	t.Parallel()
	a := newAPI(t)
	const stock = 20
	voucher := a.createVoucher(stock, 1)
	ctx := browser(t)
	// The browser's own network layer answers the page's streams 502 while refuse is set.
	var refuse atomic.Bool
	refuse.Store(true)
	paused := chromedp.Events(ctx, fetch.RequestPaused)
	if _, err := chromedp.Call(ctx, fetch.Enable, fetch.EnableParams{Patterns: []*fetch.RequestPattern{{URLPattern: "*/events*"}}}); err != nil {
		t.Fatalf("intercept the streams: %v", err)
	}
	var refused atomic.Int64
	go func() {
		for ev, err := range paused {
			if err != nil {
				return
			}
			if refuse.Load() {
				refused.Add(1)
				_, _ = chromedp.Call(ctx, fetch.FulfillRequest, fetch.FulfillRequestParams{RequestID: ev.RequestID,
					ResponseCode: http.StatusBadGateway, Body: []byte("bad gateway")})
			} else {
				_, _ = chromedp.Call(ctx, fetch.ContinueRequest, fetch.ContinueRequestParams{RequestID: ev.RequestID})
			}
		}
	}()
	navCtx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	if err := chromedp.Do(navCtx, chromedp.Navigate(a.url+"/ui/")); err != nil {
		t.Fatalf("open the page: %v", err)
	}
	waitShown(t, ctx, voucher, fmt.Sprintf("%d before the sale", stock), func(n int) bool { return n == stock })
	dataset := func(name string) string {
		return evaluate[string](t, ctx, fmt.Sprintf(`document.body.dataset.%s || ""`, name))
	}
	testenv.Eventually(t, 3*testenv.Patience, "the page's stream is refused twice, and the page polls", func() (bool, string) {
		return refused.Load() >= 2 && dataset("polling") == "1",
			fmt.Sprintf("%d refused, polling %q", refused.Load(), dataset("polling"))
	})
	a.grabOne(voucher, a.token(1000, false))
	waitShown(t, ctx, voucher, "1 fewer, read by polling", func(n int) bool { return n == stock-1 })

	refuse.Store(false)
	testenv.Eventually(t, 3*testenv.Patience, "the page follows its stream again", func() (bool, string) {
		return dataset("polling") == "0" && dataset("followed") == "1",
			fmt.Sprintf("polling %q, followed %q", dataset("polling"), dataset("followed"))
	})
	before, _ := strconv.Atoi(dataset("events"))
	a.grabOne(voucher, a.token(1001, false))
	testenv.Eventually(t, 3*testenv.Patience, "the grab came as an event", func() (bool, string) {
		after, _ := strconv.Atoi(dataset("events"))
		return after > before && shownRemaining(t, ctx, voucher) == stock-2,
			fmt.Sprintf("%d events before, %d after", before, after)
	})
}
