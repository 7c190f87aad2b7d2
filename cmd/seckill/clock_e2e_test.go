package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/seckill/seckill/adapters/testenv"
	"github.com/seckill/seckill/cmd/internal/history"
	"github.com/seckill/seckill/domain"
)

// TestInstancesWhoseClocksDisagreeKeepOneSaleClock: three instances sell one sale —
// one on time, one whose host clock is 10 s fast, one 10 s slow (the test build
// shifts their clocks) — with grabs sent to each from before the sale opens to after
// it ends. The sale is judged by one clock, Redis's, whatever each host says: every
// 202 is persisted and stamped inside the window, each instance answers not_started
// before it and ended after it, no voucher leaves the workers' set with an entry
// unread (reconcile is clean), unpaid orders expire after the payment timeout and not
// before, a user's rate is one rate across instances, and each instance reports how
// far its host is off (seckill_clock_offset_seconds) and warns about it.
func TestInstancesWhoseClocksDisagreeKeepOneSaleClock(t *testing.T) {
	const timeout = 4 * time.Second
	a := startFulfillInstance(t, "SECKILL_PAYMENT_TIMEOUT="+timeout.String())
	fast := a.another("SECKILL_TEST_CLOCK_SKEW=10s")
	slow := a.another("SECKILL_TEST_CLOCK_SKEW=-10s")
	instances := []*fulfillInstance{a, fast, slow}
	ctx := context.Background()

	for i, want := range []float64{0, -10, 10} {
		testenv.Eventually(t, 30*time.Second, fmt.Sprintf("instance %d's clock offset", i), func() (bool, string) {
			got := scrapeURL(t, instances[i].base+"/metrics")["seckill_clock_offset_seconds"]
			return math.Abs(got-want) < 1, fmt.Sprint(got)
		})
	}
	for i, in := range instances[1:] {
		if !strings.Contains(in.logs.String(), "clock is off redis's time") {
			t.Errorf("instance %d, 10 s off, did not warn:\n%s", i+1, in.logs)
		}
	}

	redisNow := func() time.Time {
		now, err := a.redis.Time(ctx).Result()
		if err != nil {
			t.Fatal(err)
		}
		return now
	}
	start := redisNow()
	begins, ends := start.Add(2*time.Second).Truncate(time.Millisecond), start.Add(8*time.Second).Truncate(time.Millisecond)
	id := a.createSale(1000, 1, begins, ends)

	// Grabs through each instance, a fresh user each, every 100 ms from before the
	// sale opens until two seconds after it ends.
	type answer struct {
		instance int
		user     int64
		status   int
		code     string
		order    string
	}
	var (
		mu      sync.Mutex
		answers []answer
		wg      sync.WaitGroup
		rec     recorder
	)
	after := ends.Add(2 * time.Second)
	for i, in := range instances {
		wg.Go(func() {
			for n := int64(0); ; n++ {
				if now, err := a.redis.Time(ctx).Result(); err == nil && now.After(after) {
					return
				}
				user := int64(i+1)*100_000 + n
				token, _ := a.tokens.Mint(domain.UserID(user), false, time.Hour)
				r := rec.do(http.DefaultClient, history.OpGrab, user, token, http.MethodPost, in.base+"/api/v1/vouchers/"+id+"/grab")
				mu.Lock()
				answers = append(answers, answer{instance: i, user: user, status: r.Status, code: r.Code, order: r.OrderID})
				mu.Unlock()
				// The pace of the grabs, not a wait for anything.
				time.Sleep(100 * time.Millisecond)
			}
		})
	}
	wg.Wait()

	accepted := map[string]answer{}
	seen := map[int]map[string]bool{}
	for _, an := range answers {
		if seen[an.instance] == nil {
			seen[an.instance] = map[string]bool{}
		}
		switch {
		case an.status == http.StatusAccepted:
			accepted[an.order] = an
			seen[an.instance]["reserved"] = true
		case an.status == http.StatusConflict && (an.code == "not_started" || an.code == "ended"):
			seen[an.instance][an.code] = true
		default:
			t.Fatalf("instance %d answered user %d: %d %q", an.instance, an.user, an.status, an.code)
		}
	}
	for i := range instances {
		for _, want := range []string{"not_started", "reserved", "ended"} {
			if !seen[i][want] {
				t.Fatalf("instance %d never answered %s: %v", i, want, seen[i])
			}
		}
	}

	// Every 202 is one order, judged inside the window by the sale's clock.
	a.waitSettled(id, len(accepted), 30*time.Second)
	rows, err := a.dbOrders(id)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != len(accepted) {
		t.Fatalf("%d orders for %d grabs answered 202", len(rows), len(accepted))
	}
	var first dbOrder
	for _, o := range rows {
		an, ok := accepted[o.ID]
		if !ok || an.user != o.User {
			t.Fatalf("order %s of user %d answers no 202 of that user", o.ID, o.User)
		}
		if o.CreatedAt.Before(begins) || !o.CreatedAt.Before(ends) {
			t.Fatalf("order %s (instance %d) judged at %s, outside [%s, %s)", o.ID, an.instance,
				o.CreatedAt.Format(time.RFC3339Nano), begins.Format(time.RFC3339Nano), ends.Format(time.RFC3339Nano))
		}
		if first.ID == "" || o.CreatedAt.Before(first.CreatedAt) {
			first = o
		}
	}
	// The workers read every entry however the instances' clocks judged the end.
	if code, report := a.reconcileCLI(id, false); code != 0 {
		t.Fatalf("reconcile after the sale: exit %d %v", code, report)
	}

	// An unpaid order expires once the timeout has passed by the sale's clock, not
	// when a fast host's sweeper thinks so.
	testenv.Eventually(t, 30*time.Second, "the first order expired", func() (bool, string) {
		status, o := a.call(http.MethodGet, "/api/v1/orders/"+first.ID, a.token(domain.UserID(first.User), false), nil)
		if status != http.StatusOK || o["status"] != "expired" {
			return false, fmt.Sprintf("%d %v", status, o)
		}
		if seen := redisNow(); seen.Before(first.CreatedAt.Add(timeout)) {
			t.Fatalf("order created at %s expired by %s, before the %v payment timeout", first.CreatedAt, seen, timeout)
		}
		return true, ""
	})

	// One user's rate across instances: a grab through the fast instance then one
	// through the slow are two grabs, within the burst.
	other := a.createVoucher(10, 1)
	token := a.token(7, false)
	if status, body := fast.call(http.MethodPost, "/api/v1/vouchers/"+other+"/grab", token, nil); status != http.StatusAccepted {
		t.Fatalf("grab through the fast instance: %d %v", status, body)
	}
	status, body := slow.call(http.MethodPost, "/api/v1/vouchers/"+other+"/grab", token, nil)
	if e, _ := body["error"].(map[string]any); status != http.StatusConflict || e["code"] != "already_purchased" {
		t.Fatalf("the same user's next grab through the slow instance: %d %v, want 409 already_purchased", status, body)
	}
}

// idSlack is how far apart by created_at two orders listed in id order may be the
// other way round: both taken within it on two instances, one minted first and
// stamped second. Grabs sent one after another never wait for their turn, so a few
// milliseconds would do; a minute is the skew this would not tolerate.
const idSlack = 50 * time.Millisecond

// TestAVoucherOrdersPageInTheSaleClocksOrder: two instances, one whose host clock is
// 60 s behind (the test build shifts it), take a sale's orders in turn. Order ids tell
// the sale's clock, not the host's, so a voucher's orders, paged oldest first by id,
// are in the order of their created_at: the orders the instance behind took after the
// first page was read are all on the later pages, the pages hold every order once,
// and the CSV export starts with the oldest. (Before, ids told the host's clock: all
// the orders the instance behind took sorted before the others'.)
func TestAVoucherOrdersPageInTheSaleClocksOrder(t *testing.T) {
	a := startFulfillInstance(t)
	behind := a.another("SECKILL_TEST_CLOCK_SKEW=-60s")
	testenv.Eventually(t, 30*time.Second, "the instance behind measured its clock", func() (bool, string) {
		got := scrapeURL(t, behind.base+"/metrics")["seckill_clock_offset_seconds"]
		return math.Abs(got-60) < 1, fmt.Sprint(got)
	})
	id := a.createVoucher(100, 1)
	admin := a.token(1, true)
	grab := func(in *fulfillInstance, user int64) {
		t.Helper()
		if status, body := in.call(http.MethodPost, "/api/v1/vouchers/"+id+"/grab", in.token(domain.UserID(user), false), nil); status != http.StatusAccepted {
			t.Fatalf("grab of user %d: %d %v", user, status, body)
		}
	}
	type page struct {
		Orders []struct {
			ID        string    `json:"order_id"`
			User      int64     `json:"user_id,string"`
			CreatedAt time.Time `json:"created_at"`
		} `json:"orders"`
		NextCursor string `json:"next_cursor"`
	}
	read := func(cursor string) page {
		t.Helper()
		path := "/api/v1/vouchers/" + id + "/orders?limit=5"
		if cursor != "" {
			path += "&cursor=" + cursor
		}
		status, body := a.call(http.MethodGet, path, admin, nil)
		if status != http.StatusOK {
			t.Fatalf("GET %s: %d %v", path, status, body)
		}
		raw, _ := json.Marshal(body)
		var p page
		if err := json.Unmarshal(raw, &p); err != nil {
			t.Fatal(err)
		}
		return p
	}

	// Ten orders on the instance on time, then the first page is read; then ten more
	// on each instance in turn.
	for u := range int64(10) {
		grab(a, 1000+u)
	}
	a.waitSettled(id, 10, 30*time.Second)
	first := read("")
	for u := range int64(10) {
		grab(a, 2000+u)
		grab(behind, 3000+u)
	}
	a.waitSettled(id, 30, 30*time.Second)

	listed := first.Orders
	for cursor := first.NextCursor; cursor != ""; {
		p := read(cursor)
		listed = append(listed, p.Orders...)
		cursor = p.NextCursor
	}
	seen := map[string]bool{}
	late := 0
	for i, o := range listed {
		if seen[o.ID] {
			t.Fatalf("order %s listed twice", o.ID)
		}
		seen[o.ID] = true
		// An id's time is the sale's clock when the grab was taken, a moment before the
		// reservation is stamped created_at: orders taken within a few milliseconds of
		// each other on two instances may be listed in either order (docs/api.md).
		if i > 0 && o.CreatedAt.Before(listed[i-1].CreatedAt.Add(-idSlack)) {
			t.Errorf("order %d, %s (user %d), created at %s, listed after %s (user %d), created at %s",
				i, o.ID, o.User, o.CreatedAt.Format(time.RFC3339Nano), listed[i-1].ID, listed[i-1].User, listed[i-1].CreatedAt.Format(time.RFC3339Nano))
		}
		if o.User >= 3000 && i >= len(first.Orders) {
			late++
		}
	}
	if len(listed) != 30 || late != 10 {
		t.Fatalf("the pages list %d orders (want 30), %d of the 10 the instance behind took after the first page on later pages", len(listed), late)
	}

	// The export is in the same order: it starts with the oldest.
	req, _ := http.NewRequest(http.MethodGet, a.base+"/api/v1/vouchers/"+id+"/orders", nil)
	req.Header.Set("Authorization", "Bearer "+admin)
	req.Header.Set("Accept", "text/csv")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("export: %d %v", res.StatusCode, err)
	}
	rows := strings.Split(strings.TrimSpace(string(raw)), "\n")[1:]
	for i, row := range rows {
		if i >= len(listed) || !strings.HasPrefix(row, listed[i].ID+",") {
			t.Fatalf("export row %d, %q, is not the listing's %d", i, row, i)
		}
	}
}
