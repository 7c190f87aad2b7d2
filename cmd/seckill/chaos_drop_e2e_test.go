package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/seckill/seckill/adapters/testenv"
	"github.com/seckill/seckill/cmd/internal/history"
	"github.com/seckill/seckill/domain"
)

// TestChaosDropKeepsItsPromises runs a drop — 3 vouchers of 20 units under a cap of
// 40, 2 units a user across them — on two serve processes under the chaos suite's
// fault schedules (the faults of TestChaosSaleKeepsItsPromises, with
// SECKILL_CHAOS_SEED, SECKILL_CHAOS_SEEDS and SECKILL_CHAOS_DURATION as there; a
// snapshot's restart pauses every voucher of the drop), 120 buyers each grabbing a
// size picked at random until an answer says what happened, paying, cancelling and
// grabbing again. Once settled, the campaign's history checker finds every promise
// kept: no voucher over its stock, the cap never passed, no user over the limit,
// every 202 one persisted order, every user told of their orders, the stats adding up
// to the cap; and reconcile finds each voucher's Redis and database agreeing.
func TestChaosDropKeepsItsPromises(t *testing.T) {
	for _, seed := range chaosSeeds(t) {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) { chaosDrop(t, seed) })
	}
}

// chaosDrop runs one drop under the schedule seed makes, and checks its history.
func chaosDrop(t *testing.T, seed uint64) {
	duration := chaosDuration(t)
	replay := fmt.Sprintf("replay with SECKILL_CHAOS_SEED=%d go test -run TestChaosDropKeepsItsPromises ./cmd/seckill", seed)
	t.Log(replay)
	rig := newChaosRig(t)
	a := rig.a
	const variants, stock, capUnits, limit, users = 3, 20, 40, 2, 120
	sale := a.createDrop(variants, stock, capUnits, limit)
	// The grabs are recorded by voucher; pays, cancels and lists together, each given
	// to its order's voucher at the end.
	grabs := map[string]*recorder{}
	for _, v := range sale.vouchers {
		grabs[v] = &recorder{}
	}
	rest := &recorder{}
	client := &http.Client{Timeout: 3 * time.Second}
	ctx, cancel := context.WithTimeout(context.Background(), duration)
	defer cancel()
	faults := rig.faults(ctx, seed, sale.vouchers)
	var wg sync.WaitGroup
	for u := int64(1); u <= users; u++ {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(seed, uint64(u)+1))
			token, _ := a.tokens.Mint(domain.UserID(u), false, time.Hour)
			chaosBuyer(ctx, rng, duration, func(op history.Op, voucher, method, path string) chaosRequest {
				rec := rest
				if op == history.OpGrab {
					rec = grabs[voucher]
				}
				return rec.do(client, op, u, token, method, baseOf(&rig.bases, rng)+path)
			}, func() string { return sale.vouchers[rng.IntN(variants)] }, func(code string) bool { return code == "campaign_sold_out" })
		})
	}
	wg.Wait()
	if err := <-faults; err != nil {
		t.Fatalf("inject a fault: %v\n%s", err, replay)
	}

	// Everything is back. A buyer whose last grab went unanswered asks once more, of
	// the same voucher; then every buyer a grab left unanswered lists its orders — a
	// grab of one size answered 503 may have taken its unit, and under a limit of 2
	// a later grab of another size is answered 202 without naming it: both answers
	// must tell the truth.
	type last struct {
		voucher string
		r       history.Request
	}
	lasts := map[int64]last{}
	unanswered := map[int64]bool{}
	for v, rec := range grabs {
		for u, r := range rec.lastGrabs() {
			if l, ok := lasts[u]; !ok || r.Call.After(l.r.Call) {
				lasts[u] = last{voucher: v, r: r}
			}
		}
		for _, r := range rec.requests() {
			if r.Status == 0 || r.Status == http.StatusServiceUnavailable {
				unanswered[r.User] = true
			}
		}
	}
	for u, l := range lasts {
		if l.r.Status != 0 && l.r.Status != http.StatusServiceUnavailable {
			continue
		}
		token, _ := a.tokens.Mint(domain.UserID(u), false, time.Hour)
		testenv.Eventually(t, 30*time.Second, fmt.Sprintf("user %d's retry answered", u), func() (bool, string) {
			r := grabs[l.voucher].do(client, history.OpGrab, u, token, http.MethodPost, a.base+"/api/v1/vouchers/"+l.voucher+"/grab")
			return r.answered(), fmt.Sprintf("%d %s", r.Status, r.Code)
		})
	}
	for u := range unanswered {
		token, _ := a.tokens.Mint(domain.UserID(u), false, time.Hour)
		testenv.Eventually(t, 30*time.Second, fmt.Sprintf("user %d's orders listed", u), func() (bool, string) {
			r := rest.list(client, u, token, a.base+"/api/v1/orders?limit=200")
			return r.Status == http.StatusOK, fmt.Sprintf("%d %s", r.Status, r.Code)
		})
	}
	// Settled: nothing waits to be persisted. A drop that never settles is checked
	// all the same: the checker says what is wrong.
	admin := a.token(1, true)
	var cs map[string]any
	var settled time.Time
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		status, s := a.call(http.MethodGet, "/api/v1/campaigns/"+sale.id+"/stats", admin, nil)
		if status == http.StatusOK {
			cs, settled = s, time.Now()
			if s["pending"] == 0.0 && s["queued"] == 0.0 {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Logf("the drop did not settle within 60s: %d %v", status, s)
			break
		}
	}
	if cs == nil {
		t.Fatalf("the campaign's stats never answered\n%s", replay)
	}

	orders := a.campaignOrders(sale)
	voucherOf := map[string]string{}
	for v, os := range orders {
		for _, o := range os {
			voucherOf[o.ID] = v
		}
	}
	for v, rec := range grabs {
		for _, r := range rec.requests() {
			if r.Status == http.StatusAccepted {
				voucherOf[r.OrderID] = v
			}
		}
	}
	byVoucher := map[string][]history.Request{}
	for v, rec := range grabs {
		byVoucher[v] = rec.requests()
	}
	for _, r := range rest.requests() {
		v := voucherOf[r.OrderID]
		if v == "" {
			v = sale.vouchers[0] // a list, or an order no voucher knows
		}
		byVoucher[v] = append(byVoucher[v], r)
	}
	c := history.Campaign{Vouchers: map[string]history.History{}, Cap: capUnits, Limit: limit}
	for _, v := range sale.vouchers {
		rs := byVoucher[v]
		sort.SliceStable(rs, func(i, j int) bool { return rs[i].Return.Before(rs[j].Return) })
		st := a.stats(v)
		h := history.History{Stock: stock, Limit: 1, Requests: rs, BeginsAt: sale.begins, EndsAt: sale.ends,
			Settled: settled, Unsure: rig.unsure,
			Stats: history.Stats{Stock: int(st["stock"]), Remaining: int(st["remaining"]), Queued: int(st["queued"]),
				AwaitingPayment: int(st["awaiting_payment"]), Paid: int(st["paid"]), Cancelled: int(st["cancelled"]),
				Expired: int(st["expired"]), Failed: int(st["failed"]), Pending: int64(st["pending"])}}
		for _, o := range orders[v] {
			h.Orders = append(h.Orders, history.Order{ID: o.ID, User: o.User, Quantity: o.Quantity, Status: o.Status, CreatedAt: o.CreatedAt})
		}
		c.Vouchers[v] = h
		if code, report := a.reconcileCLI(v, false); code != 0 {
			t.Errorf("reconcile of voucher %s: exit %d, drifts %v\n%s", v, code, driftKinds(report), replay)
		}
	}
	c.Stats = history.Stats{Stock: int(num(cs["cap"])), Remaining: int(num(cs["remaining"])), Queued: int(num(cs["queued"])),
		AwaitingPayment: int(num(cs["awaiting_payment"])), Paid: int(num(cs["paid"]))}
	t.Logf("%d orders; campaign stats cap %v remaining %v queued %v awaiting_payment %v paid %v", len(voucherOf),
		cs["cap"], cs["remaining"], cs["queued"], cs["awaiting_payment"], cs["paid"])
	if vs := history.CheckCampaign(c); len(vs) > 0 {
		lines := make([]string, 0, len(vs))
		for _, v := range vs {
			lines = append(lines, v.String())
		}
		t.Fatalf("the drop broke its promises:\n%s\n%s\ninstance 0 logged:\n%s\ninstance 1 logged:\n%s",
			strings.Join(lines, "\n"), replay, a.logs, rig.b.logs)
	}
	// The checker did judge this history: one live order more, past the cap, is named.
	first := sale.vouchers[0]
	h := c.Vouchers[first]
	h.Orders = append(slices.Clone(h.Orders), history.Order{ID: "01KBIMPOSSIBLE0000000000000", User: 1 << 40, Quantity: capUnits + 1,
		Status: string(domain.StatusPaid), CreatedAt: settled})
	c.Vouchers[first] = h
	if vs := history.CheckCampaign(c); !slices.ContainsFunc(vs, func(v history.Violation) bool { return v.Kind == history.CapPassed }) {
		t.Fatalf("an order past the cap added to the history is not named: %v", vs)
	}
}
