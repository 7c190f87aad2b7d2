package main

import (
	"fmt"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seckill/seckill/adapters/testenv"
	"github.com/seckill/seckill/domain"
)

// TestWaitlistWinsReturnedUnitsEndToEnd runs a sold-out sale whose units come back
// every way they can — two cancels, four orders left to expire (a short
// SECKILL_PAYMENT_TIMEOUT), three units added by an admin — while grabs of fresh users
// race for them without pause (no sold-out flag, no per-user rate): every unit goes to
// the waitlist, in its order, as an awaiting_payment order its owner finds in GET
// /api/v1/orders and pays; no racing grab takes one, nothing is oversold, and nobody
// holds two. A waitlisted user whose order expires unpaid before the test pays it
// passes the unit on to the next: the waitlist is longer than the units.
func TestWaitlistWinsReturnedUnitsEndToEnd(t *testing.T) {
	fi := startFulfillInstance(t, "SECKILL_PAYMENT_TIMEOUT=3s", "SECKILL_USER_RATE=0", "SECKILL_SOLD_OUT_TTL=0")
	const stock, added, waiting = 6, 3, 30
	v := fi.createVoucher(stock, 1)
	path := "/api/v1/vouchers/" + v + "/waitlist"
	holders := map[int64]string{}
	for u := int64(1); u <= stock; u++ {
		status, body := fi.call(http.MethodPost, "/api/v1/vouchers/"+v+"/grab", fi.token(domain.UserID(u), false), nil)
		if status != http.StatusAccepted {
			t.Fatalf("grab of holder %d: %d %v", u, status, body)
		}
		holders[u] = body["order_id"].(string)
	}
	testenv.Eventually(t, testenv.Patience, "the holders' orders persisted", func() (bool, string) {
		os, err := fi.dbOrders(v)
		return err == nil && len(os) == stock, fmt.Sprintf("%d orders, %v", len(os), err)
	})
	if status, body := fi.call(http.MethodPost, path, fi.token(1, false), nil); status != http.StatusConflict ||
		body["error"].(map[string]any)["code"] != "already_purchased" {
		t.Fatalf("join of a holder: %d %v", status, body)
	}
	line := make([]int64, waiting)
	for i := range line {
		line[i] = int64(1001 + i)
		status, body := fi.call(http.MethodPost, path, fi.token(domain.UserID(line[i]), false), nil)
		if status != http.StatusAccepted || body["position"] != float64(i+1) {
			t.Fatalf("join of user %d: %d %v, want position %d", line[i], status, body, i+1)
		}
	}

	// Fresh users grab without pause until the end.
	var stop atomic.Bool
	var racing sync.WaitGroup
	var tries, taken atomic.Int64
	var odd sync.Map // status → count of answers other than 409 sold_out
	client := &http.Client{Timeout: 10 * time.Second}
	for g := range 3 {
		racing.Go(func() {
			for i := 0; !stop.Load(); i++ {
				req, _ := http.NewRequest(http.MethodPost, fi.base+"/api/v1/vouchers/"+v+"/grab", nil)
				req.Header.Set("Authorization", "Bearer "+fi.token(domain.UserID(100_000*(g+1)+i), false))
				res, err := client.Do(req)
				if err != nil {
					continue
				}
				_ = res.Body.Close()
				tries.Add(1)
				switch res.StatusCode {
				case http.StatusAccepted:
					taken.Add(1)
				case http.StatusConflict:
				default:
					n, _ := odd.LoadOrStore(res.StatusCode, new(atomic.Int64))
					n.(*atomic.Int64).Add(1)
				}
			}
		})
	}

	// The units come back: two cancels, three added, four expiries (holders 3 to 6 never pay).
	admin := fi.token(1, true)
	for _, u := range []int64{1, 2} {
		if status, body := fi.call(http.MethodPost, "/api/v1/orders/"+holders[u]+"/cancel", fi.token(domain.UserID(u), false), nil); status != http.StatusOK {
			t.Fatalf("cancel of holder %d: %d %v", u, status, body)
		}
	}
	if status, code := patch(client, fi.base, admin, v, fmt.Sprintf(`{"add_units":%d}`, added), "add-"+v); status != http.StatusOK {
		t.Fatalf("add units: %d %s", status, code)
	}

	// The waitlisted users pay what they are handed, as they find it in their orders.
	paid := map[int64]bool{}
	testenv.Eventually(t, 4*testenv.Patience, "every returned unit paid by a waitlisted user", func() (bool, string) {
		for _, u := range line {
			if paid[u] {
				continue
			}
			status, body := fi.call(http.MethodGet, "/api/v1/orders", fi.token(domain.UserID(u), false), nil)
			if status != http.StatusOK {
				continue
			}
			for _, o := range body["orders"].([]any) {
				o := o.(map[string]any)
				if o["status"] != "awaiting_payment" {
					continue
				}
				if status, _ := fi.call(http.MethodPost, "/api/v1/orders/"+o["order_id"].(string)+"/pay", fi.token(domain.UserID(u), false), nil); status == http.StatusOK {
					paid[u] = true
				}
			}
		}
		return len(paid) == stock+added, fmt.Sprintf("%d paid: %v", len(paid), paid)
	})
	stop.Store(true)
	racing.Wait()
	odd.Range(func(k, n any) bool {
		t.Errorf("racing grabs answered %v %d times (want only 409 sold_out)", k, n.(*atomic.Int64).Load())
		return true
	})
	if n := taken.Load(); n != 0 {
		t.Fatalf("%d of %d racing grabs took a returned unit", n, tries.Load())
	}
	t.Logf("%d racing grabs, every one answered sold_out", tries.Load())

	// The database: the units paid are the stock, each by a different waitlisted user,
	// handed out in the waitlist's order; the holders' orders closed.
	orders, err := fi.dbOrders(v)
	if err != nil {
		t.Fatal(err)
	}
	var owners []int64
	live := map[int64]int{}
	for _, o := range orders {
		switch o.Status {
		case "paid":
			owners = append(owners, o.User)
			live[o.User]++
		case "awaiting_payment", "queued":
			live[o.User]++
		}
		if o.User > 100_000 {
			t.Errorf("a racing grab's order %s (%s)", o.ID, o.Status)
		}
		if u := o.User; u <= stock && o.Status != "cancelled" && o.Status != "expired" {
			t.Errorf("holder %d's order is %s", u, o.Status)
		}
	}
	for u, n := range live {
		if n > 1 {
			t.Errorf("user %d holds %d live orders", u, n)
		}
	}
	slices.Sort(owners)
	if len(owners) != stock+added || owners[0] < 1001 || owners[len(owners)-1] > 1000+waiting {
		t.Fatalf("paid by %v, want %d waitlisted users", owners, stock+added)
	}
	st := fi.stats(v)
	if st["stock"] != stock+added || st["paid"] != stock+added || st["remaining"] != 0 || st["queued"] != 0 {
		t.Fatalf("stats %v", st)
	}
	if got, want := st["waitlist"], float64(waiting-len(handedOff(orders))); got != want {
		t.Fatalf("waitlist length %v, want %v (those not handed a unit)", got, want)
	}
	if m := scrapeURL(t, fi.base+"/metrics"); m["seckill_waitlist_handoffs_total"] < stock+added {
		t.Fatalf("hand-offs counted %v, want at least %d", m["seckill_waitlist_handoffs_total"], stock+added)
	}
}

// handedOff returns the waitlisted users (above 1000) who were handed an order, of any
// status, among orders.
func handedOff(orders []dbOrder) map[int64]bool {
	out := map[int64]bool{}
	for _, o := range orders {
		if o.User > 1000 {
			out[o.User] = true
		}
	}
	return out
}

// TestWaitlistInTheZeroSetupMode: with nothing installed (the in-process Redis and
// SQLite), a cancelled unit of a sold-out voucher becomes an awaiting_payment order of
// the first on its waitlist, as on Redis and PostgreSQL.
func TestWaitlistInTheZeroSetupMode(t *testing.T) {
	fi := startZeroSetup(t)
	v := fi.createVoucher(1, 1)
	path := "/api/v1/vouchers/" + v + "/waitlist"
	status, body := fi.call(http.MethodPost, "/api/v1/vouchers/"+v+"/grab", fi.token(1, false), nil)
	if status != http.StatusAccepted {
		t.Fatalf("grab: %d %v", status, body)
	}
	held := body["order_id"].(string)
	for i, u := range []domain.UserID{2, 3} {
		if status, body := fi.call(http.MethodPost, path, fi.token(u, false), nil); status != http.StatusAccepted || body["position"] != float64(i+1) {
			t.Fatalf("join of user %d: %d %v", u, status, body)
		}
	}
	testenv.Eventually(t, testenv.Patience, "the holder's order cancelled", func() (bool, string) {
		status, body := fi.call(http.MethodPost, "/api/v1/orders/"+held+"/cancel", fi.token(1, false), nil)
		return status == http.StatusOK, fmt.Sprintf("%d %v", status, body)
	})
	testenv.Eventually(t, testenv.Patience, "user 2's order awaiting payment", func() (bool, string) {
		status, body := fi.call(http.MethodGet, "/api/v1/orders", fi.token(2, false), nil)
		orders, _ := body["orders"].([]any)
		return status == http.StatusOK && len(orders) == 1 && orders[0].(map[string]any)["status"] == "awaiting_payment",
			fmt.Sprintf("%d %v", status, body)
	})
	if status, body := fi.call(http.MethodGet, path, fi.token(3, false), nil); status != http.StatusOK || body["position"] != 1.0 {
		t.Fatalf("user 3's place: %d %v", status, body)
	}
	if status, body := fi.call(http.MethodPost, "/api/v1/vouchers/"+v+"/grab", fi.token(4, false), nil); status != http.StatusConflict {
		t.Fatalf("a grab after the hand-off: %d %v, want sold_out", status, body)
	}
}

// TestWaitlistHandOffSurvivesKillNine: the hand-off is a stream entry like a grab's, so
// an order handed to the waitlist is not lost when every process dies before any
// worker persisted it: the API-only instance that ran the cancel (and its hand-off) is
// killed with kill -9 while no worker runs, and a worker started afterwards persists
// the handed-off order, awaiting payment, for the first on the waitlist.
func TestWaitlistHandOffSurvivesKillNine(t *testing.T) {
	fi := startFulfillInstance(t, "SECKILL_ROLES=api")
	v := fi.createVoucher(1, 1)
	worker := fi.startWorkerOnly()
	status, body := fi.call(http.MethodPost, "/api/v1/vouchers/"+v+"/grab", fi.token(1, false), nil)
	if status != http.StatusAccepted {
		t.Fatalf("grab: %d %v", status, body)
	}
	held := body["order_id"].(string)
	testenv.Eventually(t, testenv.Patience, "the holder's order persisted", func() (bool, string) {
		os, err := fi.dbOrders(v)
		return err == nil && len(os) == 1 && os[0].Status == "awaiting_payment", fmt.Sprintf("%v %v", os, err)
	})
	// No worker from here on.
	if err := worker.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = worker.Wait() // "signal: killed"
	if status, body := fi.call(http.MethodPost, "/api/v1/vouchers/"+v+"/waitlist", fi.token(2, false), nil); status != http.StatusAccepted {
		t.Fatalf("join: %d %v", status, body)
	}
	entries := fi.streamLen(v)
	if status, body := fi.call(http.MethodPost, "/api/v1/orders/"+held+"/cancel", fi.token(1, false), nil); status != http.StatusOK {
		t.Fatalf("cancel: %d %v", status, body)
	}
	if got := fi.streamLen(v); got != entries+1 {
		t.Fatalf("stream holds %d entries after the cancel, want %d (the hand-off's)", got, entries+1)
	}
	fi.kill()
	fi.startWorkerOnly()
	testenv.Eventually(t, testenv.Patience, "the handed-off order persisted by the new worker", func() (bool, string) {
		os, err := fi.dbOrders(v)
		if err != nil {
			return false, err.Error()
		}
		for _, o := range os {
			if o.User == 2 && o.Status == "awaiting_payment" {
				return true, ""
			}
		}
		return false, fmt.Sprint(os)
	})
}
