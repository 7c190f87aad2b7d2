package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seckill/seckill/adapters/testenv"
	"github.com/seckill/seckill/cmd/internal/history"
	"github.com/seckill/seckill/domain"
)

// TestCampaignWaitingRoomKeepsItsPromises sells a drop of 20 vouchers through one
// waiting room on three instances (driveCampaignRoom).
func TestCampaignWaitingRoomKeepsItsPromises(t *testing.T) {
	a := startFulfillInstance(t, "SECKILL_PAYMENT_TIMEOUT=2s", "SECKILL_GRAB_RATE=0")
	driveCampaignRoom(t, []*fulfillInstance{a, a.another(), a.another()}, campaignUsers(t, 3_000))
}

// TestZeroSetupCampaignWaitingRoomKeepsItsPromises is the drop's waiting room in the
// zero-setup mode (in-process Redis, SQLite).
func TestZeroSetupCampaignWaitingRoomKeepsItsPromises(t *testing.T) {
	fi := startZeroSetup(t, "SECKILL_PAYMENT_TIMEOUT=2s", "SECKILL_GRAB_RATE=0")
	driveCampaignRoom(t, []*fulfillInstance{fi}, campaignUsers(t, 2_000))
}

// driveCampaignRoom sells a drop of 20 vouchers under a cap below the sum of their
// stocks and a per-user limit of 2 through one waiting room for the whole drop: users
// join before the start (spread over the instances); the shuffle published (seed,
// entrants, digest) recomputes into the positions every early joiner reads; then each
// user, in the published order, waits to be let in and grabs a random voucher with
// its pass (another if that one is sold out), cancelling or paying some orders and
// letting the rest expire (a 2 s payment window), so units come back to the drop all
// through the sale; a user gives up once its place reads sold_out and nothing sold for
// a while. The campaign's history checker then finds no voucher over its stock, the
// cap never exceeded, no user over the limit, every 202 persisted and told, the stats
// adding up; and no grab without a pass was taken.
func driveCampaignRoom(t *testing.T, ins []*fulfillInstance, users int) {
	t.Helper()
	a := ins[0]
	// The joins come before the start: a busy machine may need longer than this, and
	// then the early joiners are those the published entrants name (checked below).
	begins := time.Now().UTC().Add(10 * time.Second)
	sale, c := a.createDropWith(20, 50, 600, 2, begins, map[string]any{
		"admission": "waiting_room", "queue_window": 100, "queue_opens_at": time.Now().UTC().Add(-time.Minute),
	})
	room := "campaigns/" + sale.id
	commitment, _ := c["commitment"].(string)
	d := newRoomDriver(t, ins...)
	joiners := userRange(300_000, users)
	d.join(room, joiners)
	joinedBy := time.Now()
	// A grab without a pass is refused, whoever grabs.
	if status, body, err := d.do(0, http.MethodPost, "/api/v1/vouchers/"+sale.vouchers[0]+"/grab", joiners[0], nil); err != nil ||
		status != http.StatusForbidden || body["error"].(map[string]any)["code"] != "queue_required" {
		t.Fatalf("a grab with no pass: %d %v %v", status, body, err)
	}
	early := joiners
	if !joinedBy.Before(begins) {
		// The joins ran past the start on a busy machine: the later ones joined late.
		// The early joiners are then those the shuffle names, all of them joiners.
		t.Logf("the %d joins ended %v after the start", users, joinedBy.Sub(begins))
		testenv.Eventually(t, time.Minute, "the shuffle published", func() (bool, string) {
			body, err := d.place(0, room, joiners[0])
			return err == nil && body["seed"] != nil, fmt.Sprint(body, err)
		})
		early = nil
		for line := range strings.Lines(d.entrants(room)) {
			u, err := domain.ParseUserID(strings.TrimSuffix(line, "\n"))
			if err != nil || u < joiners[0] || u > joiners[len(joiners)-1] {
				t.Fatalf("entrant %q is no joiner (%v)", line, err)
			}
			early = append(early, u)
		}
	}
	order := d.published(room, commitment, early[0], early)
	d.wantPositions(room, order, 1)
	inOrder := slices.Clone(order)
	for _, u := range joiners {
		if !slices.Contains(early, u) {
			inOrder = append(inOrder, u)
		}
	}

	bases := make([]string, len(ins))
	for i, in := range ins {
		bases[i] = in.base
	}
	rec := driveRoomUsers(t, sale, room, bases, func(u domain.UserID) string { return a.token(u, false) }, inOrder)
	checkDrop(t, a, sale, rec)
}

// driveRoomUsers has each user of order, in that order, 48 at a time, wait in room to
// be let in and grab a random voucher of sale with its pass (up to three vouchers
// while each answers sold_out), then follow its order up (dropRecorder.followUp).
// A user stops waiting once its place reads sold_out and no grab was taken for 8 s,
// or fails the test after testenv.Patience*4 with neither.
func driveRoomUsers(t *testing.T, sale campaignSale, room string, bases []string, tokens func(domain.UserID) string,
	order []domain.UserID) *dropRecorder {
	t.Helper()
	const workers = 48
	rec := &dropRecorder{byVouch: map[string][]history.Request{}, unsure: map[int64]bool{}, joined: map[int64]bool{},
		client: &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: workers}}}
	var lastSold atomic.Int64
	lastSold.Store(time.Now().UnixNano())
	var admitted, gaveUp atomic.Int64
	next := make(chan domain.UserID)
	var wg sync.WaitGroup
	var stuck sync.Once
	for range workers {
		wg.Go(func() {
			for u := range next {
				base := bases[int(u)%len(bases)]
				token := tokens(u)
				pass, ok := waitForPass(rec.client, base+roomPath(room)+"/queue", token, &lastSold)
				if !ok {
					if pass == "stuck" {
						stuck.Do(func() { t.Errorf("user %d was neither let in nor told sold out", u) })
					}
					gaveUp.Add(1)
					continue
				}
				admitted.Add(1)
				rng := rand.New(rand.NewPCG(uint64(u), 11))
				for range 3 {
					v := sale.vouchers[rng.IntN(len(sale.vouchers))]
					call := time.Now()
					status, code, order := rec.sendWith(http.MethodPost, base+"/api/v1/vouchers/"+v+"/grab", token, pass)
					rec.record(v, history.Request{Op: history.OpGrab, User: int64(u), Status: status, Code: code, OrderID: order,
						Call: call, Return: time.Now()})
					if status == http.StatusAccepted {
						lastSold.Store(time.Now().UnixNano())
						rec.followUp(rng, base, token, v, int64(u), order)
					}
					if status != http.StatusConflict || code != "sold_out" {
						break
					}
				}
			}
		})
	}
	for _, u := range order {
		next <- u
	}
	close(next)
	wg.Wait()
	t.Logf("%d users let in, %d gave up once sold out", admitted.Load(), gaveUp.Load())
	return rec
}

// waitForPass reads a user's place at url every 100 ms until it holds a pass, and
// returns it. It returns "", false once the place reads sold_out and lastSold (Unix
// ns) is more than 8 s old, and "stuck", false after four times testenv.Patience.
func waitForPass(client *http.Client, url, token string, lastSold *atomic.Int64) (string, bool) {
	deadline := time.Now().Add(4 * testenv.Patience)
	for time.Now().Before(deadline) {
		req, _ := http.NewRequest(http.MethodGet, url, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		res, err := client.Do(req)
		if err == nil {
			raw, _ := io.ReadAll(res.Body)
			res.Body.Close()
			var place struct {
				Pass    *string `json:"pass"`
				SoldOut bool    `json:"sold_out"`
			}
			if res.StatusCode == http.StatusOK && json.Unmarshal(raw, &place) == nil {
				if place.Pass != nil {
					return *place.Pass, true
				}
				if place.SoldOut && time.Since(time.Unix(0, lastSold.Load())) > 8*time.Second {
					return "", false
				}
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	return "stuck", false
}

// TestCampaignWaitingRoomPassesOverItsBuyersAfterRedisForgets: the first users let in
// to a drop's room buy sizes of it; then Redis loses every key (a restart without
// persistence). The heal restores the drop from the database — its vouchers' orders,
// and its holders — and installs the room's order again from its start; the window
// then goes to the next users in line, never to one who holds units of the drop.
func TestCampaignWaitingRoomPassesOverItsBuyersAfterRedisForgets(t *testing.T) {
	a := startFulfillInstance(t, "SECKILL_WARM_INTERVAL=1s")
	d := newRoomDriver(t, a)
	const window = 5
	sale, c := a.createDropWith(3, 20, 40, 1, time.Now().UTC().Add(5*time.Second), map[string]any{
		"admission": "waiting_room", "queue_window": window, "queue_opens_at": time.Now().UTC().Add(-time.Minute),
	})
	room := "campaigns/" + sale.id
	campaign, err := domain.ParseCampaignID(sale.id)
	if err != nil {
		t.Fatal(err)
	}
	early := userRange(1000, 30)
	d.join(room, early)
	order := d.published(room, c["commitment"].(string), early[0], early)
	for i, u := range order[:window] {
		d.grabWithPass(room, sale.vouchers[i%len(sale.vouchers)], u)
	}
	admin := a.token(1, true)
	testenv.Eventually(t, time.Minute, "the buyers' orders persisted", func() (bool, string) {
		status, st := a.call(http.MethodGet, "/api/v1/campaigns/"+sale.id+"/stats", admin, nil)
		return status == http.StatusOK && st["queued"] == 0.0 && st["awaiting_payment"] == float64(window), fmt.Sprint(status, st)
	})

	d.forgetAndWantTheNextWindow(a, room, campaign.Room(), order, window)
}

// TestCampaignWaitingRoomOnThePostgresStrategyKeepsItsPromises is the drop's waiting
// room on the postgres stock strategy, whose sale state is the database's rows: the
// room (in Redis) admits by the database's figures of the drop (RoomSales.Sale), and
// the grab with the pass is judged in the database's transaction.
func TestCampaignWaitingRoomOnThePostgresStrategyKeepsItsPromises(t *testing.T) {
	a := startFulfillInstance(t, "SECKILL_PAYMENT_TIMEOUT=2s", "SECKILL_GRAB_RATE=0", "SECKILL_STOCK_STRATEGY=postgres")
	driveCampaignRoom(t, []*fulfillInstance{a, a.another()}, campaignUsers(t, 1_000))
}
