package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
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
	begins := time.Now().UTC().Add(15 * time.Second)
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
	// voucher, until the backfill is spent and the units are on first-come sale.
	admin := a.token(1, true)
	testenv.Eventually(t, 3*testenv.Patience, "the backfill spent", func() (bool, string) {
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

// waitForDropDraw waits until campaign id's draw has run, then reads and checks what
// it publishes.
func (in *instance) waitForDropDraw(id, commitment string) publishedDrop {
	in.t.Helper()
	var d map[string]any
	testenv.Eventually(in.t, 2*testenv.Patience, "the drop's draw has run", func() (bool, string) {
		var status int
		status, d = in.call(http.MethodGet, "/api/v1/campaigns/"+id+"/draw", "", nil)
		return status == http.StatusOK && d["seed"] != nil, fmt.Sprintf("%d %v", status, d)
	})
	raw, err := hex.DecodeString(d["seed"].(string))
	if err != nil || len(raw) != domain.SeedSize {
		in.t.Fatalf("seed %v: %v", d["seed"], err)
	}
	var p publishedDrop
	copy(p.seed[:], raw)
	if sum := sha256.Sum256(raw); hex.EncodeToString(sum[:]) != commitment || d["commitment"] != commitment {
		in.t.Fatalf("the seed's SHA-256 is not the campaign's commitment %s: %v", commitment, d)
	}
	res, err := http.Get(in.base + "/api/v1/campaigns/" + id + "/draw/entrants")
	if err != nil {
		in.t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	_ = res.Body.Close()
	if sum := sha256.Sum256(body); res.StatusCode != http.StatusOK || hex.EncodeToString(sum[:]) != d["entrants_digest"] {
		in.t.Fatalf("entrants: %d, digest %x, published %v", res.StatusCode, sum, d["entrants_digest"])
	}
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
	for _, w := range d["winners"].([]any) {
		u, _ := domain.ParseUserID(w.(string))
		p.winners = append(p.winners, u)
	}
	return p
}
