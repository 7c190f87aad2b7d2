package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/seckill/seckill/adapters/testenv"
	"github.com/seckill/seckill/cmd/internal/history"
	"github.com/seckill/seckill/domain"
)

// campaignSale is a drop on sale through one or more instances: its id, its vouchers'
// ids, its cap and per-user limit.
type campaignSale struct {
	id       string
	vouchers []string
	stock    int
	cap      int
	limit    int
	// begins and ends are its window, as created.
	begins, ends time.Time
}

// createDrop creates a campaign on sale now, of n vouchers of stock units each, under
// cap and limit, through in.
func (in *instance) createDrop(n, stock, cap, limit int) campaignSale {
	in.t.Helper()
	now := time.Now().UTC()
	admin := in.token(1, true)
	status, c := in.call(http.MethodPost, "/api/v1/campaigns", admin, map[string]any{
		"title": "Sneaker drop", "begins_at": now.Add(-time.Minute).Truncate(time.Millisecond), "ends_at": now.Add(time.Hour).Truncate(time.Millisecond),
		"per_user_limit": limit, "cap": cap,
	})
	if status != http.StatusCreated {
		in.t.Fatalf("create campaign: %d %v", status, c)
	}
	sale := campaignSale{id: c["id"].(string), stock: stock, cap: cap, limit: limit, begins: now.Add(-time.Minute), ends: now.Add(time.Hour)}
	for k := range n {
		status, v := in.call(http.MethodPost, "/api/v1/vouchers", admin, map[string]any{
			"title": fmt.Sprintf("Size %d", 36+k), "stock": stock, "campaign_id": sale.id,
		})
		if status != http.StatusCreated || v["campaign_id"] != sale.id {
			in.t.Fatalf("create voucher %d of campaign %s: %d %v", k+1, sale.id, status, v)
		}
		sale.vouchers = append(sale.vouchers, v["id"].(string))
	}
	return sale
}

// dropRecorder records a drop's requests, by voucher, as the history checker reads
// them.
type dropRecorder struct {
	mu      sync.Mutex
	byVouch map[string][]history.Request
	unsure  map[int64]bool
	client  *http.Client
}

// send sends one request and returns its status, its error code and the order id
// its answer names (a 202's, an already_purchased's, a pay's or cancel's).
func (r *dropRecorder) send(method, url, token string) (int, string, string) {
	req, _ := http.NewRequest(method, url, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := r.client.Do(req)
	if err != nil {
		return 0, "", ""
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	var body struct {
		OrderID string `json:"order_id"`
		Error   struct {
			Code    string `json:"code"`
			OrderID string `json:"order_id"`
		} `json:"error"`
	}
	_ = json.Unmarshal(raw, &body)
	if body.Error.Code != "" {
		return res.StatusCode, body.Error.Code, body.Error.OrderID
	}
	return res.StatusCode, "", body.OrderID
}

// record adds a request answered to voucher's history.
func (r *dropRecorder) record(voucher string, req history.Request) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.byVouch[voucher] = append(r.byVouch[voucher], req)
	if req.Op == history.OpGrab && (req.Status == 0 || req.Status == http.StatusServiceUnavailable) {
		r.unsure[req.User] = true
	}
}

// driveDrop has users, spread over the instances, each grab one to three random
// vouchers of sale, cancelling a fifth of what they get and paying a fifth (the rest
// expires), many at once; every request is recorded.
func driveDrop(t *testing.T, sale campaignSale, bases []string, tokens func(domain.UserID) string, users int) *dropRecorder {
	t.Helper()
	const workers = 48
	rec := &dropRecorder{byVouch: map[string][]history.Request{}, unsure: map[int64]bool{},
		client: &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: workers}}}
	next := make(chan int64)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for u := range next {
				rng := rand.New(rand.NewPCG(uint64(u), 5))
				base := bases[int(u)%len(bases)]
				token := tokens(domain.UserID(u))
				for range 1 + rng.IntN(3) {
					v := sale.vouchers[rng.IntN(len(sale.vouchers))]
					call := time.Now()
					status, code, order := rec.send(http.MethodPost, base+"/api/v1/vouchers/"+v+"/grab", token)
					rec.record(v, history.Request{Op: history.OpGrab, User: u, Status: status, Code: code, OrderID: order,
						Call: call, Return: time.Now()})
					if status != http.StatusAccepted {
						continue
					}
					var op history.Op
					switch rng.IntN(5) {
					case 0:
						op = history.OpCancel
					case 1:
						op = history.OpPay
					default:
						continue
					}
					call = time.Now()
					st, c, _ := rec.send(http.MethodPost, base+"/api/v1/orders/"+order+"/"+string(op), token)
					rec.record(v, history.Request{Op: op, User: u, OrderID: order, Status: st, Code: c, Call: call, Return: time.Now()})
				}
			}
		})
	}
	for u := int64(1); u <= int64(users); u++ {
		next <- 100_000 + u
	}
	close(next)
	wg.Wait()
	return rec
}

// campaignUsers is how many users the drop tests send: SECKILL_CAMPAIGN_USERS, or n.
func campaignUsers(t *testing.T, n int) int {
	if s := os.Getenv("SECKILL_CAMPAIGN_USERS"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v < 1 {
			t.Fatalf("SECKILL_CAMPAIGN_USERS=%q: want a positive integer", s)
		}
		return v
	}
	return n
}

// checkDrop waits until the drop has settled — every reservation persisted, nothing
// awaiting payment (each order paid, cancelled, expired or failed) — then asks each
// user left unsure by a 503 which orders they hold, reads the orders and the stats,
// and runs the campaign's history checker.
func checkDrop(t *testing.T, fi *fulfillInstance, sale campaignSale, rec *dropRecorder) {
	t.Helper()
	admin := fi.token(1, true)
	testenv.Eventually(t, 3*testenv.Patience, "the drop settled", func() (bool, string) {
		status, st := fi.call(http.MethodGet, "/api/v1/campaigns/"+sale.id+"/stats", admin, nil)
		ok := status == http.StatusOK && st["pending"] == 0.0 && st["queued"] == 0.0 && st["awaiting_payment"] == 0.0
		return ok, fmt.Sprintf("%d %v", status, st)
	})
	for u := range rec.unsure {
		listed := fi.userOrders(domain.UserID(u))
		rec.record(sale.vouchers[0], history.Request{Op: history.OpList, User: u, Status: http.StatusOK, Listed: listed})
	}
	orders := fi.campaignOrders(sale)
	c := history.Campaign{Vouchers: map[string]history.History{}, Cap: sale.cap, Limit: sale.limit}
	granted := 0
	for _, v := range sale.vouchers {
		st := fi.stats(v)
		h := history.History{Stock: sale.stock, Limit: 1, Requests: rec.byVouch[v], BeginsAt: sale.begins, EndsAt: sale.ends,
			Stats: history.Stats{Stock: int(st["stock"]), Remaining: int(st["remaining"]), Queued: int(st["queued"]),
				AwaitingPayment: int(st["awaiting_payment"]), Paid: int(st["paid"]), Cancelled: int(st["cancelled"]),
				Expired: int(st["expired"]), Failed: int(st["failed"]), Pending: int64(st["pending"])}}
		for _, o := range orders[v] {
			h.Orders = append(h.Orders, history.Order{ID: o.ID, User: o.User, Quantity: o.Quantity, Status: o.Status, CreatedAt: o.CreatedAt})
		}
		for _, r := range h.Requests {
			if r.Op == history.OpGrab && r.Status == http.StatusAccepted {
				granted++
			}
		}
		c.Vouchers[v] = h
	}
	_, cs := fi.call(http.MethodGet, "/api/v1/campaigns/"+sale.id+"/stats", admin, nil)
	c.Stats = history.Stats{Stock: int(num(cs["cap"])), Remaining: int(num(cs["remaining"])), Queued: int(num(cs["queued"])),
		AwaitingPayment: int(num(cs["awaiting_payment"])), Paid: int(num(cs["paid"]))}
	counts := map[string]int{}
	for _, rs := range rec.byVouch {
		for _, r := range rs {
			if r.Op == history.OpGrab {
				counts[fmt.Sprintf("%d %s", r.Status, r.Code)]++
			}
		}
	}
	t.Logf("drop of %d vouchers, cap %d, limit %d: %d grabs answered 202; answers %v; campaign stats %v",
		len(sale.vouchers), sale.cap, sale.limit, granted, counts, cs)
	if granted <= sale.cap {
		t.Errorf("only %d grabs answered 202 for a cap of %d with returns: the drop did not sell through its cap", granted, sale.cap)
	}
	if vs := history.CheckCampaign(c); len(vs) > 0 {
		lines := make([]string, 0, len(vs))
		for i, v := range vs {
			if i == 20 {
				lines = append(lines, fmt.Sprintf("… and %d more", len(vs)-20))
				break
			}
			lines = append(lines, v.String())
		}
		t.Fatalf("the drop broke its promises:\n%s", strings.Join(lines, "\n"))
	}
}

// num reads a JSON number, 0 for anything else (a null cap).
func num(v any) float64 {
	f, _ := v.(float64)
	return f
}

// userOrders returns the ids of every order of user's, as GET /api/v1/orders lists
// them (each page).
func (in *instance) userOrders(user domain.UserID) []string {
	in.t.Helper()
	var ids []string
	path := "/api/v1/orders?limit=200"
	for {
		status, body := in.call(http.MethodGet, path, in.token(user, false), nil)
		if status != http.StatusOK {
			in.t.Fatalf("orders of user %d: %d %v", user, status, body)
		}
		list, _ := body["orders"].([]any)
		for _, o := range list {
			ids = append(ids, o.(map[string]any)["order_id"].(string))
		}
		next, _ := body["next_cursor"].(string)
		if next == "" {
			return ids
		}
		path = "/api/v1/orders?limit=200&cursor=" + next
	}
}

// campaignOrders reads every order of sale's vouchers from the database, by voucher.
func (fi *fulfillInstance) campaignOrders(sale campaignSale) map[string][]dbOrder {
	fi.t.Helper()
	out := map[string][]dbOrder{}
	for _, v := range sale.vouchers {
		os, err := fi.dbOrders(v)
		if err != nil {
			fi.t.Fatalf("orders of voucher %s: %v", v, err)
		}
		out[v] = os
	}
	return out
}

// TestCampaignDropKeepsItsPromises sells a drop of 20 vouchers under a cap below the
// sum of their stocks and a per-user limit of 2 across them, to 50,000 users (fewer
// with SECKILL_CAMPAIGN_USERS) on three instances, each grabbing one to three random
// vouchers, cancelling some orders and letting most expire (a 2 s payment window), so
// units come back to the vouchers and the cap all through the sale. The campaign's
// history checker then finds no voucher over its stock, the cap never exceeded, no
// user over the limit, every 202 persisted and told, and the stats adding up.
func TestCampaignDropKeepsItsPromises(t *testing.T) {
	a := startFulfillInstance(t, "SECKILL_PAYMENT_TIMEOUT=2s", "SECKILL_GRAB_RATE=0")
	b, c := a.another(), a.another()
	sale := a.createDrop(20, 150, 2000, 2)
	rec := driveDrop(t, sale, []string{a.base, b.base, c.base}, func(u domain.UserID) string { return a.token(u, false) },
		campaignUsers(t, 50_000))
	checkDrop(t, a, sale, rec)
}

// TestZeroSetupCampaignDropKeepsItsPromises is the drop on the zero-setup mode: one
// process, its in-process Redis and SQLite.
func TestZeroSetupCampaignDropKeepsItsPromises(t *testing.T) {
	fi := startZeroSetup(t, "SECKILL_PAYMENT_TIMEOUT=2s", "SECKILL_GRAB_RATE=0")
	sale := fi.createDrop(20, 100, 1200, 2)
	rec := driveDrop(t, sale, []string{fi.base}, func(u domain.UserID) string { return fi.token(u, false) },
		campaignUsers(t, 20_000))
	checkDrop(t, fi, sale, rec)
}
