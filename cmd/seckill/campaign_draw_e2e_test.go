package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/seckill/seckill/adapters/testenv"
	"github.com/seckill/seckill/domain"
)

// TestCampaignDrawKeepsItsPromises runs one draw for a drop of 20 vouchers on three
// instances (driveCampaignDraw).
func TestCampaignDrawKeepsItsPromises(t *testing.T) {
	a := startFulfillInstance(t, "SECKILL_PAYMENT_TIMEOUT=2s", "SECKILL_GRAB_RATE=0")
	driveCampaignDraw(t, []*fulfillInstance{a, a.another(), a.another()}, campaignUsers(t, 3_000))
}

// TestCampaignDrawOnTheWatchStrategyKeepsItsPromises is the drop's draw with the
// WATCH stock strategy: the draw is carried out by the same scripts, and the grabs
// after it are judged in the strategy's optimistic transactions.
func TestCampaignDrawOnTheWatchStrategyKeepsItsPromises(t *testing.T) {
	a := startFulfillInstance(t, "SECKILL_PAYMENT_TIMEOUT=2s", "SECKILL_GRAB_RATE=0", "SECKILL_STOCK_STRATEGY=watch")
	driveCampaignDraw(t, []*fulfillInstance{a, a.another()}, campaignUsers(t, 1_000))
}

// TestZeroSetupCampaignDrawKeepsItsPromises is the drop's draw in the zero-setup mode
// (in-process Redis, SQLite).
func TestZeroSetupCampaignDrawKeepsItsPromises(t *testing.T) {
	fi := startZeroSetup(t, "SECKILL_PAYMENT_TIMEOUT=2s", "SECKILL_GRAB_RATE=0")
	driveCampaignDraw(t, []*fulfillInstance{fi}, campaignUsers(t, 2_000))
}

// driveCampaignDraw sells a drop of 20 vouchers of 50 units under a cap of 600 and a
// per-user limit of 2 by one draw for the whole drop: users enter before the start
// (spread over the instances) naming a random voucher, a quarter of them entering
// again with another (the latest choice stands). The published draw is checked as
// anyone would: the seed against the commitment, the entrants' lines
// (user_id,voucher_id) against the digest, each entrant's choice against what it last
// chose, and the winners against a walk of the shuffle recomputed here (each entrant
// its choice while that voucher and the cap have units). Every winner holds an order
// of its choice; no entrant holds another voucher's. The draw's orders expire (a 2 s
// payment window) and their units go to the backfill of those who chose that
// voucher; once it is spent, other users grab first come; the campaign's history
// checker finds no
// voucher over its stock, the cap never exceeded, no user over the limit, every 202
// persisted.
func driveCampaignDraw(t *testing.T, ins []*fulfillInstance, users int) {
	t.Helper()
	a := ins[0]
	// Time for the entries before the start: 10 s and a millisecond a user. A busy
	// machine may need longer; entries refused as closed are counted, and the
	// entrants are those the draw publishes.
	begins := time.Now().UTC().Add(10*time.Second + time.Duration(users)*time.Millisecond)
	sale, c := a.createDropWith(20, 50, 600, 2, begins, map[string]any{
		"admission": "draw", "entries_open_at": time.Now().UTC().Add(-time.Minute),
	})
	if c["admission"] != "draw" || c["entries_open_at"] == nil || c["commitment"] == nil {
		t.Fatalf("the drop's draw: %v", c)
	}
	commitment := c["commitment"].(string)
	entries := "/api/v1/campaigns/" + sale.id + "/entries"
	user := a.token(7, false)
	for _, tc := range []struct {
		path   string
		body   any
		status int
		code   string
	}{
		{entries, map[string]any{}, http.StatusBadRequest, "invalid_request"},
		{entries, map[string]any{"voucher_id": "1"}, http.StatusBadRequest, "invalid_request"},
		{"/api/v1/vouchers/" + sale.vouchers[0] + "/entries", nil, http.StatusConflict, "not_a_draw"},
		{"/api/v1/vouchers/" + sale.vouchers[0] + "/grab", map[string]any{"quantity": 1}, http.StatusConflict, "not_started"},
	} {
		if status, out := a.call(http.MethodPost, tc.path, user, tc.body); status != tc.status || errorCode(out) != tc.code {
			t.Fatalf("POST %s %v: %d %v; want %d %s", tc.path, tc.body, status, out, tc.status, tc.code)
		}
	}

	chose, closed := enterDrop(t, ins, sale, userRange(400_000, users))
	if closed > 0 {
		t.Logf("%d entries came after the draw closed them (a busy machine)", closed)
	}
	p := a.waitForDropDraw(sale.id, commitment)
	if len(p.entrants) != len(chose) {
		t.Fatalf("%d entrants published, %d entered", len(p.entrants), len(chose))
	}
	for i, u := range p.entrants {
		if chose[u] != p.choices[i] {
			t.Fatalf("entrant %d published choosing %s, its latest choice was %s", u, p.choices[i], chose[u])
		}
	}
	// Anyone's check: the walk of the shuffle by the published seed gives the winners.
	units := map[string]int{}
	for _, v := range sale.vouchers {
		units[v] = sale.stock
	}
	capLeft := sale.cap
	var want []domain.UserID
	for _, u := range domain.Shuffle(p.seed, p.entrants) {
		if capLeft > 0 && units[chose[u]] > 0 {
			units[chose[u]]--
			capLeft--
			want = append(want, u)
		}
	}
	if !slices.Equal(p.winners, want) {
		t.Fatalf("%d winners published, the walk recomputed gives %d (or another order)", len(p.winners), len(want))
	}
	t.Logf("%d entrants, %d winners", len(p.entrants), len(p.winners))
	won := map[int64]bool{}
	for _, u := range p.winners {
		won[int64(u)] = true
	}
	testenv.Eventually(t, 2*testenv.Patience, "every winner's order persisted", func() (bool, string) {
		held := map[int64]bool{}
		for _, os := range a.campaignOrders(sale) {
			for _, o := range os {
				if won[o.User] {
					held[o.User] = true
				}
			}
		}
		return len(held) == len(won), fmt.Sprintf("%d of %d winners hold an order", len(held), len(won))
	})

	// The draw's orders expire unpaid; each unit goes to the next who chose its
	// voucher, until the backfill is spent and the units are on first-come sale: one
	// payment window (and an expiry round) per generation of the backfill.
	admin := a.token(1, true)
	generations := time.Duration(len(p.entrants)/max(len(p.winners), 1) + 1)
	testenv.Eventually(t, 3*testenv.Patience+generations*5*time.Second, "the backfill spent", func() (bool, string) {
		status, st := a.call(http.MethodGet, "/api/v1/campaigns/"+sale.id+"/stats", admin, nil)
		ok := status == http.StatusOK && st["waitlist"] == 0.0 && st["queued"] == 0.0 && st["awaiting_payment"] == 0.0
		return ok, fmt.Sprintf("%d %v", status, st)
	})
	bases := make([]string, len(ins))
	for i, in := range ins {
		bases[i] = in.base
	}
	rec := driveDrop(t, sale, bases, func(u domain.UserID) string { return a.token(u, false) }, users/2, 0)
	for _, u := range p.entrants {
		rec.joined[int64(u)] = true // their orders came from the draw: they learn them by reading
	}
	checkDrop(t, a, sale, rec)
	for v, os := range a.campaignOrders(sale) {
		for _, o := range os {
			if e, ok := chose[domain.UserID(o.User)]; ok && e != v {
				t.Fatalf("entrant %d holds order %s of voucher %s; it chose %s", o.User, o.ID, v, e)
			}
		}
	}
}

// enterDrop enters each of users in sale's draw, 48 at a time, spread over the
// instances, choosing a random voucher (a quarter of them then another), and returns
// each entrant's latest choice accepted, and how many entries were refused as
// entries_closed.
func enterDrop(t *testing.T, ins []*fulfillInstance, sale campaignSale, users []domain.UserID) (map[domain.UserID]string, int) {
	t.Helper()
	const workers = 48
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: workers}}
	var mu sync.Mutex
	chose := map[domain.UserID]string{}
	closed := 0
	next := make(chan domain.UserID)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for u := range next {
				in := ins[int(u)%len(ins)]
				rng := rand.New(rand.NewPCG(uint64(u), 13))
				for range 1 + rng.IntN(4)/3 {
					v := sale.vouchers[rng.IntN(len(sale.vouchers))]
					status, raw, err := enterOnce(client, in, sale.id, u, v)
					if err != nil {
						t.Errorf("entry of %d: %v", u, err)
						return
					}
					mu.Lock()
					switch {
					case status == http.StatusAccepted:
						chose[u] = v
					case status == http.StatusConflict && strings.Contains(string(raw), "entries_closed"):
						closed++
					default:
						t.Errorf("entry of %d: %d %s", u, status, raw)
					}
					mu.Unlock()
				}
			}
		})
	}
	for _, u := range users {
		next <- u
	}
	close(next)
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	return chose, closed
}

// enterOnce enters u in campaign's draw through in, choosing voucher, as a client
// does: again after a 503 (the service shedding load), a moment later, up to 50 times.
func enterOnce(client *http.Client, in *fulfillInstance, campaign string, u domain.UserID, voucher string) (int, []byte, error) {
	body, _ := json.Marshal(map[string]any{"voucher_id": voucher})
	for try := 0; ; try++ {
		req, _ := http.NewRequest(http.MethodPost, in.base+"/api/v1/campaigns/"+campaign+"/entries", bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+in.token(u, false))
		req.Header.Set("Content-Type", "application/json")
		res, err := client.Do(req)
		if err != nil {
			return 0, nil, err
		}
		raw, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusServiceUnavailable || try == 50 {
			return res.StatusCode, raw, nil
		}
		time.Sleep(time.Duration(20+rand.IntN(80)) * time.Millisecond)
	}
}

// publishedDrop is what a campaign's GET …/draw and …/draw/entrants publish, checked:
// the seed matches the commitment, the entrants' lines the digest.
type publishedDrop struct {
	seed     domain.Seed
	entrants []domain.UserID
	choices  []string
	winners  []domain.UserID
}

// choiceOf returns the voucher u chose, as the draw published it.
func (p publishedDrop) choiceOf(u domain.UserID) string {
	i, _ := slices.BinarySearch(p.entrants, u)
	return p.choices[i]
}

// waitForDropDraw waits until campaign id's draw has run, then reads and checks what
// it publishes.
func (in *instance) waitForDropDraw(id, commitment string) publishedDrop {
	in.t.Helper()
	seed, d, body := in.readDraw("/api/v1/campaigns/"+id, commitment)
	p := publishedDrop{seed: seed}
	for line := range strings.Lines(string(body)) {
		user, choice, ok := strings.Cut(strings.TrimSuffix(line, "\n"), ",")
		u, err := domain.ParseUserID(user)
		if !ok || err != nil {
			in.t.Fatalf("entrant line %q", line)
		}
		p.entrants = append(p.entrants, u)
		p.choices = append(p.choices, choice)
	}
	if !slices.IsSorted(p.entrants) || int(d["entrants"].(float64)) != len(p.entrants) {
		in.t.Fatalf("entrants %v, %d listed (sorted: %v)", d["entrants"], len(p.entrants), slices.IsSorted(p.entrants))
	}
	p.winners = winnersOf(d)
	return p
}

// createDrawDrop creates a drop of n vouchers of stock units under cap, sold by one
// draw whose entries are open now and whose sale begins at begins, and enters users
// directly in Redis (user → the voucher chosen: users[i] chooses voucher i % n). It
// returns the drop and the campaign's commitment.
func (fi *fulfillInstance) createDrawDrop(n, stock, capUnits int, begins time.Time, users []domain.UserID) (campaignSale, string) {
	fi.t.Helper()
	sale, c := fi.createDropWith(n, stock, capUnits, 2, begins, map[string]any{
		"admission": "draw", "entries_open_at": time.Now().UTC().Add(-time.Minute),
	})
	id, err := domain.ParseCampaignID(sale.id)
	if err != nil {
		fi.t.Fatal(err)
	}
	fields := make([]any, 0, 2*len(users))
	for i, u := range users {
		fields = append(fields, u.String(), sale.vouchers[i%n])
	}
	if err := fi.redis.HSet(context.Background(), fi.keys.Entries(id.Room()), fields...).Err(); err != nil {
		fi.t.Fatal(err)
	}
	return sale, c["commitment"].(string)
}

// wantDropServedOnce checks what a drop's draw left in the database: no entrant was
// served twice (one order at most, whatever its status), each order is of the
// voucher its user chose, and live orders are exactly live (the cap's units not
// given back).
func (fi *fulfillInstance) wantDropServedOnce(sale campaignSale, p publishedDrop, live int) {
	fi.t.Helper()
	chose := map[int64]string{}
	for i, u := range p.entrants {
		chose[int64(u)] = p.choices[i]
	}
	served := map[int64]int{}
	alive := 0
	for v, os := range fi.campaignOrders(sale) {
		for _, o := range os {
			served[o.User]++
			if chose[o.User] != v {
				fi.t.Errorf("user %d holds order %s of voucher %s; it chose %q", o.User, o.ID, v, chose[o.User])
			}
			if o.Status == "awaiting_payment" {
				alive++
			}
		}
	}
	for u, n := range served {
		if n > 1 {
			fi.t.Errorf("user %d was served %d times by one draw", u, n)
		}
	}
	if alive != live {
		fi.t.Errorf("%d orders awaiting payment, want %d", alive, live)
	}
}

// TestDropDrawResumesAfterRedisForgets: a drop's draw of 2 vouchers × 3 units under a
// cap of 4 among 20 entrants is carried out; a winner cancels (its unit goes to the
// next who chose its voucher), then Redis restarts empty. The heal restores the
// vouchers' orders and the campaign's holders from the database; another winner
// cancels before the draw is carried out again (the test holds the draws' lease
// meanwhile). Carried out again, the draw passes over everyone it served and gives
// the units that came back to the backfill: 4 live orders, nobody served twice, the
// cap never passed.
func TestDropDrawResumesAfterRedisForgets(t *testing.T) {
	stopRedis, startRedis := redisOutage(t)
	fi := startFulfillInstance(t, "SECKILL_DRAW_LEASE=2s", "SECKILL_WARM_INTERVAL=1s")
	ctx := context.Background()
	sale, commitment := fi.createDrawDrop(2, 3, 4, time.Now().Add(3*time.Second), userRange(1000, 20))
	p := fi.waitForDropDraw(sale.id, commitment)
	if len(p.winners) != 4 {
		t.Fatalf("%d winners, want the cap's 4", len(p.winners))
	}
	won := make([]string, len(p.winners))
	for i, w := range p.winners {
		won[i] = fi.orderOf(w, p.choiceOf(w), "awaiting_payment")
	}
	fi.cancelOrder(p.winners[0], won[0])
	testenv.Eventually(t, 60*time.Second, "the unit handed to the backfill", func() (bool, string) {
		orders := 0
		for _, os := range fi.campaignOrders(sale) {
			orders += len(os)
		}
		return orders == 5, fmt.Sprintf("%d orders", orders)
	})

	release := fi.holdDrawsLease()
	for _, script := range []string{stopRedis, startRedis} {
		if out, err := exec.Command(script).CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", script, err, out)
		}
	}
	testenv.Eventually(t, 60*time.Second, "the drop's sale state healed from the database", func() (bool, string) {
		buyers := 0
		for _, v := range sale.vouchers {
			id := fi.voucherID(v)
			vals, err := fi.redis.HMGet(ctx, fi.keys.Meta(id), "stock", "restoring").Result()
			if err != nil || vals[0] == nil || vals[1] == "1" {
				return false, fmt.Sprintf("voucher %s: %v %v", v, vals, err)
			}
			n, _ := fi.redis.HLen(ctx, fi.keys.Buyers(id)).Result()
			buyers += int(n)
		}
		return buyers == 4, fmt.Sprintf("%d buyers", buyers)
	})
	for _, v := range sale.vouchers {
		if drawn, _ := fi.redis.HGet(ctx, fi.keys.Meta(fi.voucherID(v)), "drawn").Result(); drawn == "1" {
			t.Fatal("the healed sale state says the draw was carried out; the test needs it carried out again")
		}
	}
	fi.cancelOrder(p.winners[1], won[1])
	release()
	testenv.Eventually(t, 60*time.Second, "the draw carried out again", func() (bool, string) {
		for _, v := range sale.vouchers {
			if drawn, err := fi.redis.HGet(ctx, fi.keys.Meta(fi.voucherID(v)), "drawn").Result(); drawn != "1" {
				return false, fmt.Sprintf("voucher %s: drawn %q %v", v, drawn, err)
			}
		}
		return true, ""
	})
	testenv.Eventually(t, 60*time.Second, "every unit served persisted", func() (bool, string) {
		orders := 0
		for _, os := range fi.campaignOrders(sale) {
			orders += len(os)
		}
		return orders == 6, fmt.Sprintf("%d orders, want 6: 4 winners and 2 units handed on", orders)
	})
	fi.wantDropServedOnce(sale, p, 4)
}

// TestDropDrawSurvivesAKillNineOfTheDrawingInstance kills the instance carrying out a
// drop's draw (3 vouchers of 700 units under a cap of 1,500, 3,000 entrants; one step
// per Redis call, so it takes seconds) mid-draw; another instance takes the lease
// over and finishes the same draw: every winner has exactly one order, of its choice,
// and nobody else has one.
func TestDropDrawSurvivesAKillNineOfTheDrawingInstance(t *testing.T) {
	env := []string{"SECKILL_DRAW_BATCH=1", "SECKILL_DRAW_LEASE=2s", "SECKILL_CLAIM_IDLE=1s"}
	a := startFulfillInstance(t, env...)
	ctx := context.Background()
	sale, commitment := a.createDrawDrop(3, 700, 1500, time.Now().Add(3*time.Second), userRange(1000, 3000))
	first := a.voucherID(sale.vouchers[0])
	testenv.Eventually(t, 60*time.Second, "the draw under way", func() (bool, string) {
		next, err := a.redis.HGet(ctx, a.keys.Meta(first), "draw_next").Int()
		return err == nil && next > 500, fmt.Sprintf("draw_next %d %v", next, err)
	})
	a.kill()
	if drawn, _ := a.redis.HGet(ctx, a.keys.Meta(a.voucherID(sale.vouchers[2])), "drawn").Result(); drawn == "1" {
		t.Fatal("the drop's draw was over before the kill")
	}
	b := a.another(env...)
	p := b.waitForDropDraw(sale.id, commitment)
	if len(p.winners) != 1500 {
		t.Fatalf("%d winners, want the cap's 1500", len(p.winners))
	}
	testenv.Eventually(t, 2*testenv.Patience, "every winner's order persisted", func() (bool, string) {
		orders := 0
		for _, os := range b.campaignOrders(sale) {
			orders += len(os)
		}
		return orders >= 1500, fmt.Sprintf("%d orders", orders)
	})
	b.wantDropServedOnce(sale, p, 1500)
	winners := map[int64]bool{}
	for _, w := range p.winners {
		winners[int64(w)] = true
	}
	for _, os := range b.campaignOrders(sale) {
		for _, o := range os {
			if !winners[o.User] {
				t.Fatalf("user %d holds order %s but did not win", o.User, o.ID)
			}
		}
	}
}
