package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/adapters/testenv"
	"github.com/seckill/seckill/cmd/internal/history"
	"github.com/seckill/seckill/domain"
)

// patch sends PATCH /api/v1/vouchers/{id} with body as an admin, under an
// Idempotency-Key, and returns the status and error code of the answer (0 and "" when
// none came).
func patch(client *http.Client, base, token, voucher, body, key string) (int, string) {
	req, err := http.NewRequest(http.MethodPatch, base+"/api/v1/vouchers/"+voucher, strings.NewReader(body))
	if err != nil {
		return 0, ""
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Idempotency-Key", key)
	res, err := client.Do(req)
	if err != nil {
		return 0, ""
	}
	defer res.Body.Close()
	var answer struct {
		Error struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	raw, _ := io.ReadAll(res.Body)
	_ = json.Unmarshal(raw, &answer)
	return res.StatusCode, answer.Error.Code
}

// sampleStats reads a voucher's stats once, as an admin; ok is false when no 200 came.
func sampleStats(client *http.Client, base, token, voucher string) (history.Stats, bool) {
	req, err := http.NewRequest(http.MethodGet, base+"/api/v1/vouchers/"+voucher+"/stats", nil)
	if err != nil {
		return history.Stats{}, false
	}
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := client.Do(req)
	if err != nil {
		return history.Stats{}, false
	}
	defer res.Body.Close()
	var s struct {
		Stock, Remaining, Queued, Cancelled, Expired, Failed int
		AwaitingPayment                                      int   `json:"awaiting_payment"`
		Paid                                                 int   `json:"paid"`
		Pending                                              int64 `json:"pending"`
	}
	raw, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusOK || json.NewDecoder(bytes.NewReader(raw)).Decode(&s) != nil {
		return history.Stats{}, false
	}
	return history.Stats{Stock: s.Stock, Remaining: s.Remaining, Queued: s.Queued, AwaitingPayment: s.AwaitingPayment,
		Paid: s.Paid, Cancelled: s.Cancelled, Expired: s.Expired, Failed: s.Failed, Pending: s.Pending}, true
}

// TestEditRacesASaleOnTwoInstances runs a sale on two serve processes — 300 buyers
// grabbing through either, some paying, some cancelling and grabbing again, the rest
// leaving their orders to expire (a 2 s payment timeout) — while an admin adds and
// removes units through either instance, and the stats are read again and again
// through both. Every stats answer read during the sale adds up (stock = remaining +
// queued + awaiting_payment + paid, no figure below zero), and once the sale settles
// the whole history keeps every promise (package history): no oversell against the
// stock the edits left, no user with two live orders, every 202 one order, reconcile
// clean.
func TestEditRacesASaleOnTwoInstances(t *testing.T) {
	a := startFulfillInstance(t, "SECKILL_PAYMENT_TIMEOUT=2s", "SECKILL_USER_RATE=0", "SECKILL_RECONCILE_GRACE=1s")
	b := a.another()
	bases := []string{a.base, b.base}
	const stock, users = 60, 300
	const run = 6 * time.Second
	begins := time.Now().Add(-time.Minute)
	ends := time.Now().Add(time.Hour)
	id := a.createSale(stock, 1, begins, ends)
	admin := a.token(1, true)
	rec := &recorder{}
	client := &http.Client{Timeout: 5 * time.Second}
	ctx, cancel := context.WithTimeout(context.Background(), run)
	defer cancel()
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)

	var wg sync.WaitGroup
	// The admin: units added or removed every 150 ms, through either instance, each
	// edit under its own Idempotency-Key and retried with it until answered.
	wg.Go(func() {
		rng := rand.New(rand.NewPCG(seed, 0))
		for n := 0; ctx.Err() == nil; n++ {
			time.Sleep(150 * time.Millisecond)
			units, body := 1+rng.IntN(8), ""
			if rng.IntN(5) < 2 {
				units = -1 - rng.IntN(6)
				body = fmt.Sprintf(`{"remove_units":%d}`, -units)
			} else {
				body = fmt.Sprintf(`{"add_units":%d}`, units)
			}
			key := fmt.Sprintf("edit-%d", n)
			for {
				status, code := patch(client, bases[rng.IntN(2)], admin, id, body, key)
				if status != 0 && status != http.StatusServiceUnavailable {
					rec.mu.Lock()
					rec.all = append(rec.all, history.Request{Op: history.OpEdit, User: 1, Status: status, Code: code, Units: units})
					rec.mu.Unlock()
					break
				}
				time.Sleep(50 * time.Millisecond)
			}
		}
	})
	// The stats, read through both instances while everything else races.
	var samples []history.Stats
	wg.Go(func() {
		for i := 0; ctx.Err() == nil; i++ {
			if s, ok := sampleStats(client, bases[i%2], admin, id); ok {
				samples = append(samples, s)
			}
			time.Sleep(20 * time.Millisecond)
		}
	})
	for u := int64(2); u < 2+users; u++ {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(seed, uint64(u)))
			token := a.token(domain.UserID(u), false)
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Duration(rng.Int64N(int64(run) * 7 / 10))):
			}
			send := func(op history.Op, method, path string) chaosRequest {
				return rec.do(client, op, u, token, method, bases[rng.IntN(2)]+path)
			}
			for again := true; again && ctx.Err() == nil; {
				again = false
				var order string
				for ctx.Err() == nil {
					r := send(history.OpGrab, http.MethodPost, "/api/v1/vouchers/"+id+"/grab")
					if r.Status == http.StatusAccepted || r.Code == "already_purchased" {
						order = r.OrderID
						break
					}
					time.Sleep(time.Duration(100+rng.IntN(300)) * time.Millisecond)
				}
				if order == "" {
					return
				}
				op, action := history.OpPay, "/pay"
				switch p := rng.IntN(10); {
				case p < 3:
				case p < 6:
					op, action = history.OpCancel, "/cancel"
				default:
					return // left unpaid: it expires
				}
				// Queued orders answer invalid_state until persisted: retry.
				for ctx.Err() == nil {
					r := send(op, http.MethodPost, "/api/v1/orders/"+order+action)
					if r.Status == http.StatusOK {
						again = op == history.OpCancel && rng.IntN(2) == 0
						break
					}
					if r.answered() && r.Code != "invalid_state" {
						break
					}
					time.Sleep(time.Duration(100+rng.IntN(200)) * time.Millisecond)
				}
			}
		})
	}
	wg.Wait()

	// Settled: nothing queued or pending, every unpaid order expired and released.
	var st history.Stats
	testenv.Eventually(t, 60*time.Second, "the sale settled", func() (bool, string) {
		s, ok := sampleStats(client, a.base, admin, id)
		st = s
		return ok && s.Pending == 0 && s.Queued == 0 && s.AwaitingPayment == 0, fmt.Sprintf("%+v", s)
	})
	rows, err := a.dbOrders(id)
	if err != nil {
		t.Fatal(err)
	}
	h := history.History{Stock: stock, BeginsAt: begins, EndsAt: ends, Requests: rec.requests(), Stats: st, Samples: samples}
	for _, o := range rows {
		h.Orders = append(h.Orders, history.Order{ID: o.ID, User: o.User, Quantity: o.Quantity, Status: o.Status, CreatedAt: o.CreatedAt})
	}
	if code, report := a.reconcileCLI(id, false); code != 0 {
		h.Drifts = append(driftKinds(report), fmt.Sprintf("reconcile exit %d", code))
	}
	kinds := map[string]int{}
	for _, r := range h.Requests {
		kinds[fmt.Sprintf("%s %d %s", r.Op, r.Status, r.Code)]++
	}
	t.Logf("%d requests %v, %d orders, %d stats samples, final stats %+v", len(h.Requests), kinds, len(h.Orders), len(samples), st)
	if err := history.Check(h); err != nil {
		t.Fatalf("the history breaks promises:\n%v\ninstance 0 logged:\n%s\ninstance 1 logged:\n%s", err, a.logs, b.logs)
	}
	// The run was what it claims: stats read throughout, edits of both kinds taken,
	// orders paid, cancelled and expired.
	if len(samples) < 50 || kinds["edit 200 "] < 10 || st.Paid == 0 || st.Cancelled == 0 || st.Expired == 0 {
		t.Fatalf("too thin a run to judge: %d samples, requests %v, stats %+v", len(samples), kinds, st)
	}
}

// TestEditReachesEveryInstance: units added through one instance sell at once through
// another whose sold-out flag would otherwise hold for a minute (the restock signal
// clears it), and a sale ended early through one answers ended through the other.
func TestEditReachesEveryInstance(t *testing.T) {
	a := startFulfillInstance(t, "SECKILL_SOLD_OUT_TTL=1m")
	b := a.another()
	id := a.createVoucher(1, 1)
	grab := func(in *fulfillInstance, user domain.UserID) (int, map[string]any) {
		return in.call(http.MethodPost, "/api/v1/vouchers/"+id+"/grab", in.token(user, false), nil)
	}
	if status, body := grab(a, 1); status != http.StatusAccepted {
		t.Fatalf("grab: %d %v", status, body)
	}
	for i, in := range []*fulfillInstance{a, b} {
		if status, body := grab(in, domain.UserID(2+i)); status != http.StatusConflict || body["error"].(map[string]any)["code"] != "sold_out" {
			t.Fatalf("grab of a sold-out voucher through instance %d: %d %v", i, status, body)
		}
	}
	// Both instances hear the voucher's restocks (on a cluster each subscribes to the
	// channel of a voucher warmed elsewhere within a second of seeing it).
	a.waitRestockSubscribers(id, 2)
	admin := a.token(1, true)
	if status, body := a.call(http.MethodPatch, "/api/v1/vouchers/"+id, admin, map[string]any{"add_units": 5}); status != http.StatusOK {
		t.Fatalf("add 5 units: %d %v", status, body)
	}
	for i, in := range []*fulfillInstance{b, a} {
		user := domain.UserID(3 - i)
		testenv.Eventually(t, testenv.Patience, fmt.Sprintf("a grab through instance %d after the units came", 1-i), func() (bool, string) {
			status, body := grab(in, user)
			return status == http.StatusAccepted, fmt.Sprintf("%d %v", status, body)
		})
	}
	ended := time.Now().UTC().Format(time.RFC3339Nano)
	if status, body := b.call(http.MethodPatch, "/api/v1/vouchers/"+id, admin, map[string]any{"ends_at": ended}); status != http.StatusOK {
		t.Fatalf("end the sale now: %d %v", status, body)
	}
	for i, in := range []*fulfillInstance{a, b} {
		if status, body := grab(in, domain.UserID(10+i)); status != http.StatusConflict || body["error"].(map[string]any)["code"] != "ended" {
			t.Fatalf("grab through instance %d of a sale ended early: %d %v", i, status, body)
		}
	}
	// Each instance counts the edits it made, by action.
	for i, want := range []map[string]float64{{"add_units": 1, "ends_at": 0}, {"add_units": 0, "ends_at": 1}} {
		got := scrapeURL(t, []*fulfillInstance{a, b}[i].base+"/metrics")
		for action, n := range want {
			if series := `seckill_voucher_edits_total{action="` + action + `"}`; got[series] != n {
				t.Fatalf("instance %d: %s = %v, want %v", i, series, got[series], n)
			}
		}
	}
}

// waitRestockSubscribers waits until n connections subscribe to the restock channel
// of voucher: its own sharded channel on a Redis Cluster, the one channel on a server.
func (fi *fulfillInstance) waitRestockSubscribers(voucher string, n int64) {
	fi.t.Helper()
	ctx := context.Background()
	vid := fi.voucherID(voucher)
	testenv.Eventually(fi.t, testenv.Patience, "the instances subscribed to the restocks", func() (bool, string) {
		var got map[string]int64
		var err error
		channel := fi.keys.Restock()
		if cc, ok := fi.redis.(*redis.ClusterClient); ok {
			channel = fi.keys.VoucherRestock(vid)
			var node *redis.Client
			if node, err = cc.MasterForKey(ctx, channel); err == nil {
				got, err = node.PubSubShardNumSub(ctx, channel).Result()
			}
		} else {
			got, err = fi.redis.PubSubNumSub(ctx, channel).Result()
		}
		return err == nil && got[channel] >= n, fmt.Sprintf("%v, %v", got, err)
	})
}

// TestEditLostOnItsWayToRedisIsHealed: an edit stored in the database whose write to
// Redis never came (the process died between the two) is carried to Redis by the
// periodic warm-up — the one heal, RecoverVoucher — and so is the state a removal left
// in Redis when its commit failed (Redis ahead of the database). Grabs never wait for
// it, and the stats add up throughout.
func TestEditLostOnItsWayToRedisIsHealed(t *testing.T) {
	a := startFulfillInstance(t, "SECKILL_WARM_INTERVAL=1s")
	id := a.createVoucher(10, 1)
	if status, body := a.call(http.MethodPost, "/api/v1/vouchers/"+id+"/grab", a.token(2, false), nil); status != http.StatusAccepted {
		t.Fatalf("grab: %d %v", status, body)
	}
	remaining := func() float64 {
		_, v := a.call(http.MethodGet, "/api/v1/vouchers/"+id, "", nil)
		return v["remaining"].(float64)
	}
	// Committed, never carried: 5 units more in the database only.
	a.exec("UPDATE vouchers SET stock = stock + 5, version = version + 1 WHERE id = $1", id)
	testenv.Eventually(t, testenv.Patience, "the added units on sale", func() (bool, string) {
		r := remaining()
		return r == 14, fmt.Sprintf("remaining %v", r)
	})
	st := a.assertStatsAddUp(id)
	if st["stock"] != 15 {
		t.Fatalf("stats after the heal: %v, want stock 15", st)
	}
	// Taken in Redis, never committed: Redis holds 3 units fewer and a newer version.
	vid := a.voucherID(id)
	if err := a.redis.HSet(context.Background(), a.keys.Meta(vid), "stock", 12, "remaining", 11, "version", 2).Err(); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, testenv.Patience, "the units back on sale", func() (bool, string) {
		r := remaining()
		return r == 14, fmt.Sprintf("remaining %v", r)
	})
	if status, body := a.call(http.MethodPost, "/api/v1/vouchers/"+id+"/grab", a.token(3, false), nil); status != http.StatusAccepted {
		t.Fatalf("grab after the heals: %d %v", status, body)
	}
	if got := scrapeURL(t, a.base+"/metrics")[`seckill_recoveries_total{outcome="ok",reason="stale"}`]; got < 2 {
		t.Fatalf("stale recoveries counted: %v, want 2 at least", got)
	}
}

// TestVoucherUpdateCommand: `seckill voucher update` makes the change through the API
// as the admin it names (the audit log's actor), prints the voucher, and exits 1 with
// the answer's code when the service refuses; a flag it cannot send exits 2.
func TestVoucherUpdateCommand(t *testing.T) {
	a := startFulfillInstance(t)
	id := a.createVoucher(10, 1)
	bin := seckillBinary(t)
	out, err := runCmdStdout(bin, a.env, "voucher", "update", "--url", a.base, "--id", id, "--add-units", "5", "--title", "Tea", "--as", "7")
	if err != nil {
		t.Fatalf("voucher update: %v\n%s", err, out)
	}
	var v map[string]any
	if err := json.Unmarshal([]byte(out), &v); err != nil || v["stock"] != 15.0 || v["title"] != "Tea" {
		t.Fatalf("voucher update printed %q (%v), want the voucher with stock 15 and title Tea", out, err)
	}
	status, page := a.call(http.MethodGet, "/api/v1/audit?voucher_id="+id, a.token(1, true), nil)
	entries, _ := page["entries"].([]any)
	if status != http.StatusOK || len(entries) != 2 {
		t.Fatalf("audit: %d %v", status, page)
	}
	if e := entries[0].(map[string]any); e["actor"] != "7" || e["action"] != "voucher.update" {
		t.Fatalf("the edit's entry: %v, want voucher.update by 7", e)
	}
	out, err = runCmd(bin, a.env, "voucher", "update", "--url", a.base, "--id", id, "--remove-units", "100")
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 || !strings.Contains(out, "409 not_enough_units") {
		t.Fatalf("a refused removal: %v\n%s\nwant exit 1 naming 409 not_enough_units", err, out)
	}
	out, err = runCmd(bin, a.env, "voucher", "update", "--url", a.base, "--id", id)
	if !errors.As(err, &exit) || exit.ExitCode() != 2 || !strings.Contains(out, "name a change") {
		t.Fatalf("no change named: %v\n%s\nwant exit 2", err, out)
	}
}
