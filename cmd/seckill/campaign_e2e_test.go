package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
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
func (in *instance) createDrop(n, stock, capUnits, limit int) campaignSale {
	in.t.Helper()
	sale, _ := in.createDropWith(n, stock, capUnits, limit, time.Now().UTC().Add(-time.Minute), nil)
	return sale
}

// createDropWith is createDrop with the sale beginning at begins and the campaign's
// members of extra (its admission); it returns the campaign's JSON too.
func (in *instance) createDropWith(n, stock, capUnits, limit int, begins time.Time, extra map[string]any) (campaignSale, map[string]any) {
	in.t.Helper()
	begins = begins.UTC().Truncate(time.Millisecond)
	ends := time.Now().UTC().Add(time.Hour).Truncate(time.Millisecond)
	admin := in.token(1, true)
	body := map[string]any{"title": "Sneaker drop", "begins_at": begins, "ends_at": ends, "per_user_limit": limit, "cap": capUnits}
	maps.Copy(body, extra)
	status, c := in.call(http.MethodPost, "/api/v1/campaigns", admin, body)
	if status != http.StatusCreated {
		in.t.Fatalf("create campaign: %d %v", status, c)
	}
	sale := campaignSale{id: c["id"].(string), stock: stock, cap: capUnits, limit: limit, begins: begins, ends: ends}
	for k := range n {
		status, v := in.call(http.MethodPost, "/api/v1/vouchers", admin, map[string]any{
			"title": fmt.Sprintf("Size %d", 36+k), "stock": stock, "campaign_id": sale.id,
		})
		if status != http.StatusCreated || v["campaign_id"] != sale.id {
			in.t.Fatalf("create voucher %d of campaign %s: %d %v", k+1, sale.id, status, v)
		}
		sale.vouchers = append(sale.vouchers, v["id"].(string))
	}
	return sale, c
}

// dropRecorder records a drop's requests, by voucher, as the history checker reads
// them.
type dropRecorder struct {
	mu      sync.Mutex
	byVouch map[string][]history.Request
	unsure  map[int64]bool
	// joined are the users who joined a waitlist: a unit handed to them is an order
	// they learn of by reading their orders, as unsure users do.
	joined map[int64]bool
	client *http.Client
}

// send sends one request and returns its status, its error code and the order id
// its answer names (a 202's, an already_purchased's, a pay's or cancel's).
func (r *dropRecorder) send(method, url, token string) (int, string, string) {
	return r.sendWith(method, url, token, "")
}

// sendWith is send with a waiting room's pass ("" for none).
func (r *dropRecorder) sendWith(method, url, token, pass string) (int, string, string) {
	req, _ := http.NewRequest(method, url, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	if pass != "" {
		req.Header.Set("X-Seckill-Pass", pass)
	}
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
// expires), many at once; every request is recorded. With joinEvery > 0, one grab in
// joinEvery answered sold_out joins that voucher's waitlist.
func driveDrop(t *testing.T, sale campaignSale, bases []string, tokens func(domain.UserID) string, users, joinEvery int) *dropRecorder {
	t.Helper()
	const workers = 48
	rec := &dropRecorder{byVouch: map[string][]history.Request{}, unsure: map[int64]bool{}, joined: map[int64]bool{},
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
					if status == http.StatusConflict && code == "sold_out" && joinEvery > 0 && rng.IntN(joinEvery) == 0 {
						if st, _, _ := rec.send(http.MethodPost, base+"/api/v1/vouchers/"+v+"/waitlist", token); st == http.StatusAccepted {
							rec.mu.Lock()
							rec.joined[u] = true
							rec.mu.Unlock()
						}
					}
					if status == http.StatusAccepted {
						rec.followUp(rng, base, token, v, u, order)
					}
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

// followUp is what a user does with the order a grab of voucher got: cancel it one
// time in five, pay it one time in five, else let it expire; recorded.
func (r *dropRecorder) followUp(rng *rand.Rand, base, token, voucher string, u int64, order string) {
	var op history.Op
	switch rng.IntN(5) {
	case 0:
		op = history.OpCancel
	case 1:
		op = history.OpPay
	default:
		return
	}
	call := time.Now()
	st, c, _ := r.send(http.MethodPost, base+"/api/v1/orders/"+order+"/"+string(op), token)
	r.record(voucher, history.Request{Op: op, User: u, OrderID: order, Status: st, Code: c, Call: call, Return: time.Now()})
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
// user left unsure by a 503, or waiting on a waitlist, which orders they hold, reads the orders and the stats,
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
	for u := range rec.joined {
		if !rec.unsure[u] {
			listed := fi.userOrders(domain.UserID(u))
			rec.record(sale.vouchers[0], history.Request{Op: history.OpList, User: u, Status: http.StatusOK, Listed: listed})
		}
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
	totals := maps.Clone(cs)
	delete(totals, "vouchers")
	c.Stats = history.Stats{Stock: int(num(cs["cap"])), Remaining: int(num(cs["remaining"])), Queued: int(num(cs["queued"])),
		AwaitingPayment: int(num(cs["awaiting_payment"])), Paid: int(num(cs["paid"]))}
	counts := map[string]int{}
	internal := 0
	for _, rs := range rec.byVouch {
		for _, r := range rs {
			if r.Op == history.OpGrab {
				counts[fmt.Sprintf("%d %s", r.Status, r.Code)]++
			}
			if r.Status >= 500 && r.Status != http.StatusServiceUnavailable {
				internal++
			}
		}
	}
	t.Logf("drop of %d vouchers, cap %d, limit %d: %d grabs answered 202; answers %v; campaign stats %v",
		len(sale.vouchers), sale.cap, sale.limit, granted, counts, totals)
	if internal > 0 {
		t.Errorf("%d requests answered a 5xx other than 503: the service failed them", internal)
	}
	// Units handed to users who did not grab them (a draw's, a waitlist's) count as
	// sold too.
	handed := 0
	for _, h := range c.Vouchers {
		asked := map[string]bool{}
		for _, r := range h.Requests {
			if r.Op == history.OpGrab && r.Status == http.StatusAccepted {
				asked[r.OrderID] = true
			}
		}
		for _, o := range h.Orders {
			if !asked[o.ID] {
				handed++
			}
		}
	}
	if granted+handed <= sale.cap {
		t.Errorf("only %d grabs answered 202 and %d units handed on for a cap of %d with returns: the drop did not sell through its cap",
			granted, handed, sale.cap)
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
		campaignUsers(t, 50_000), 0)
	checkDrop(t, a, sale, rec)
}

// TestCampaignDropOnTheWatchStrategyKeepsItsPromises is the drop on the WATCH
// strategy, whose optimistic transaction watches every voucher of the campaign
// (driveStrategyDrop). Every grab of the drop contends with every other there, so
// many answer 503 after their attempts, as a hot voucher's do: the checker counts
// them as unknown outcomes and asks those users for their orders.
func TestCampaignDropOnTheWatchStrategyKeepsItsPromises(t *testing.T) {
	driveStrategyDrop(t, "watch")
}

// TestCampaignDropOnThePostgresStrategyKeepsItsPromises is the drop on the database
// strategy, whose grab takes the user's units row and the campaign's row lock
// (driveStrategyDrop).
func TestCampaignDropOnThePostgresStrategyKeepsItsPromises(t *testing.T) {
	driveStrategyDrop(t, "postgres")
}

// driveStrategyDrop sells a drop on the stock strategy named (SECKILL_STOCK_STRATEGY):
// 6 vouchers of 80, a cap of 300, 2 units a user, 2,000 users on three instances, with
// cancels and expiries; the checker holds it to the promises of the default one.
func driveStrategyDrop(t *testing.T, strategy string) {
	a := startFulfillInstance(t, "SECKILL_PAYMENT_TIMEOUT=2s", "SECKILL_GRAB_RATE=0", "SECKILL_STOCK_STRATEGY="+strategy)
	b, c := a.another(), a.another()
	sale := a.createDrop(6, 80, 300, 2)
	rec := driveDrop(t, sale, []string{a.base, b.base, c.base}, func(u domain.UserID) string { return a.token(u, false) },
		2_000, 0)
	checkDrop(t, a, sale, rec)
}

// TestCampaignWaitlistKeepsItsPromises: a drop of four vouchers of 30 units under a
// cap of 110 and 2 units a user, 3,000 users on three instances, a tenth of those told
// sold_out joining the voucher's waitlist, while orders are cancelled and expire (a
// 2 s payment window): units handed on from the waitlists keep every promise the
// checker holds a drop to (the cap, each voucher's stock, the limit per user across
// the drop), and some were handed on.
func TestCampaignWaitlistKeepsItsPromises(t *testing.T) {
	a := startFulfillInstance(t, "SECKILL_PAYMENT_TIMEOUT=2s", "SECKILL_GRAB_RATE=0")
	b, c := a.another(), a.another()
	sale := a.createDrop(4, 30, 110, 2)
	rec := driveDrop(t, sale, []string{a.base, b.base, c.base}, func(u domain.UserID) string { return a.token(u, false) },
		3_000, 10)
	checkDrop(t, a, sale, rec)
	granted := map[string]bool{}
	for _, rs := range rec.byVouch {
		for _, r := range rs {
			if r.Op == history.OpGrab && r.Status == http.StatusAccepted {
				granted[r.OrderID] = true
			}
		}
	}
	handed := 0
	for _, os := range a.campaignOrders(sale) {
		for _, o := range os {
			if !granted[o.ID] {
				handed++
			}
		}
	}
	t.Logf("%d units handed on from the waitlists", handed)
	if handed == 0 {
		t.Fatal("no unit was handed on from a waitlist: the test did not test them")
	}
}

// TestZeroSetupCampaignDropKeepsItsPromises is the drop on the zero-setup mode: one
// process, its in-process Redis and SQLite.
func TestZeroSetupCampaignDropKeepsItsPromises(t *testing.T) {
	fi := startZeroSetup(t, "SECKILL_PAYMENT_TIMEOUT=2s", "SECKILL_GRAB_RATE=0")
	sale := fi.createDrop(20, 100, 1200, 2)
	rec := driveDrop(t, sale, []string{fi.base}, func(u domain.UserID) string { return fi.token(u, false) },
		campaignUsers(t, 20_000), 0)
	checkDrop(t, fi, sale, rec)
}

// grabDrop is one user's grab of a drop's voucher: the answer's status, error code,
// order id and the orders an already_purchased names.
func (fi *fulfillInstance) grabDrop(voucher string, user int64) (status int, code, order string, held []string) {
	fi.t.Helper()
	status, body := fi.call(http.MethodPost, "/api/v1/vouchers/"+voucher+"/grab", fi.token(domain.UserID(user), false), nil)
	if e, ok := body["error"].(map[string]any); ok {
		code, _ = e["code"].(string)
		order, _ = e["order_id"].(string)
		ids, _ := e["order_ids"].([]any)
		for _, id := range ids {
			held = append(held, id.(string))
		}
		return status, code, order, held
	}
	order, _ = body["order_id"].(string)
	return status, "", order, nil
}

// mustGrabDrop is grabDrop that wants a 202 and returns its order.
func (fi *fulfillInstance) mustGrabDrop(voucher string, user int64) string {
	fi.t.Helper()
	status, code, order, _ := fi.grabDrop(voucher, user)
	if status != http.StatusAccepted {
		fi.t.Fatalf("user %d grabs %s: %d %s", user, voucher, status, code)
	}
	return order
}

// TestCampaignHealsToTheDatabaseAfterAStaleSnapshotAndAKillNine: during a drop, Redis
// comes back from a snapshot taken before users cancelled and grabbed other vouchers,
// and the only instance is killed with SIGKILL meanwhile. The snapshot says the cap
// is further from reached than it is, and names users as holders of orders they
// cancelled. The heal makes Redis the database's truth: each user's units across the
// campaign (a user at the limit through orders made after the snapshot is refused,
// naming them), the cap (exactly the units it has left sell, then campaign_sold_out
// with units left in the voucher), and the campaign's stats add up.
func TestCampaignHealsToTheDatabaseAfterAStaleSnapshotAndAKillNine(t *testing.T) {
	stopRedis, startRedis := redisOutage(t)
	fi := startFulfillInstance(t, "SECKILL_WARM_INTERVAL=1h", "SECKILL_RECONCILE_INTERVAL=0")
	dump := filepath.Join(filepath.Dir(stopRedis), "dump.rdb")
	t.Cleanup(func() { _ = os.Remove(dump) })
	sale := fi.createDrop(3, 10, 12, 2)
	v1, v2, v3 := sale.vouchers[0], sale.vouchers[1], sale.vouchers[2]

	// Users 1–5 take one unit of v1 and one of v2: 10 of the cap's 12, each user at
	// the limit. Then the snapshot.
	first := map[int64]string{}
	for u := int64(1); u <= 5; u++ {
		first[u] = fi.mustGrabDrop(v1, u)
		fi.mustGrabDrop(v2, u)
	}
	fi.waitSettled(v1, 5, testenv.Patience)
	fi.waitSettled(v2, 5, testenv.Patience)
	if err := fi.redis.Save(context.Background()).Err(); err != nil {
		t.Fatalf("SAVE: %v", err)
	}
	// After it: users 1–3 cancel their v1 order (7 taken), users 6 to 8 take v3 (10),
	// user 1 takes v3 (11): user 1 holds v2 and v3, at the limit again. The snapshot
	// says 10 taken.
	for u := int64(1); u <= 3; u++ {
		if status, body := fi.act("cancel", first[u], u); status != http.StatusOK {
			t.Fatalf("user %d cancels %s: %d %v", u, first[u], status, body)
		}
	}
	late := map[int64]string{6: fi.mustGrabDrop(v3, 6), 7: fi.mustGrabDrop(v3, 7), 8: fi.mustGrabDrop(v3, 8), 1: fi.mustGrabDrop(v3, 1)}
	fi.waitSettled(v3, 4, testenv.Patience)

	fi.kill()
	for _, script := range []string{stopRedis, startRedis} {
		if out, err := exec.Command(script).CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", script, err, out)
		}
	}
	// serve refuses to start on a Redis still loading its snapshot (LOADING): start it
	// once the server answers.
	testenv.Eventually(t, testenv.Patience, "Redis loaded its snapshot", func() (bool, string) {
		err := fi.redis.Ping(context.Background()).Err()
		return err == nil, fmt.Sprint(err)
	})
	fi.start()

	// User 1 holds v2's order and v3's: refused at the limit, naming both — not its
	// cancelled v1 order the snapshot remembers.
	var status int
	var code string
	var held []string
	testenv.Eventually(t, testenv.Patience, "user 1's grab after the heal", func() (bool, string) {
		status, code, _, held = fi.grabDrop(v1, 1)
		return status != http.StatusServiceUnavailable, fmt.Sprintf("%d %s", status, code)
	})
	if status != http.StatusConflict || code != "already_purchased" || len(held) != 2 || !slices.Contains(held, late[1]) || slices.Contains(held, first[1]) {
		t.Fatalf("user 1 at the limit through v2 and v3 grabs v1 after the heal: %d %s %v; want already_purchased naming its v2 order and %s\n%s",
			status, code, held, late[1], fi.logs)
	}
	// The cap has 1 unit left (11 taken, not the snapshot's 10): user 2, who holds v2
	// only, takes it; user 9 then finds the cap reached though v3 has units.
	fi.mustGrabDrop(v1, 2)
	if status, code, _, _ := fi.grabDrop(v3, 9); status != http.StatusConflict || code != "campaign_sold_out" {
		t.Fatalf("grab past the cap after the heal: %d %s, want 409 campaign_sold_out", status, code)
	}
	fi.waitSettled(v1, 6, testenv.Patience)
	_, st := fi.call(http.MethodGet, "/api/v1/campaigns/"+sale.id+"/stats", fi.token(1, true), nil)
	if num(st["remaining"]) != 0 || num(st["remaining"])+num(st["queued"])+num(st["awaiting_payment"])+num(st["paid"]) != 12 {
		t.Fatalf("campaign stats after the heal: %v, want the cap of 12 all taken", st)
	}
}
