package main

// End-to-end tests of a draw: entries over HTTP, the draw at begins_at checked against
// the permutation recomputed from the published seed and entrants, the winners'
// orders, the backfill of a cancelled one, and a kill -9 of the instance drawing.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/seckill/seckill/adapters/testenv"
	"github.com/seckill/seckill/domain"
)

// createDraw creates a draw voucher of stock units whose entries are open now and
// whose sale begins at begins, and returns its id.
func (in *instance) createDraw(stock int, begins time.Time) string {
	in.t.Helper()
	status, v := in.call(http.MethodPost, "/api/v1/vouchers", in.token(1, true), map[string]any{
		"title": "Draw", "stock": stock, "per_user_limit": 1, "admission": "draw",
		"begins_at": begins.UTC(), "ends_at": begins.Add(time.Hour).UTC(),
	})
	if status != http.StatusCreated || v["commitment"] == "" {
		in.t.Fatalf("create draw: %d %v", status, v)
	}
	return v["id"].(string)
}

// publishedDraw is what GET …/draw and …/draw/entrants publish, checked: the seed
// matches the commitment, the entrants the digest.
type publishedDraw struct {
	seed     domain.Seed
	entrants []domain.UserID
	winners  []domain.UserID
}

// waitForDraw waits until voucher id's draw has run, then reads and checks what it
// publishes.
func (in *instance) waitForDraw(id string) publishedDraw {
	in.t.Helper()
	seed, d, body := in.readDraw("/api/v1/vouchers/"+id, "")
	p := publishedDraw{seed: seed}
	for _, line := range strings.Split(strings.TrimSuffix(string(body), "\n"), "\n") {
		if line == "" {
			continue
		}
		u, err := domain.ParseUserID(line)
		if err != nil {
			in.t.Fatalf("entrant %q: %v", line, err)
		}
		p.entrants = append(p.entrants, u)
	}
	if int(d["entrants"].(float64)) != len(p.entrants) {
		in.t.Fatalf("entrants %v, listed %d", d["entrants"], len(p.entrants))
	}
	p.winners = winnersOf(d)
	// Anyone's check: the winners are the first of the shuffle by the published seed.
	if order := domain.Shuffle(p.seed, p.entrants); !slices.Equal(p.winners, order[:len(p.winners)]) {
		in.t.Fatalf("winners %v are not the first of the recomputed permutation %v", p.winners, order)
	}
	return p
}

// readDraw waits until the draw at base (a voucher's or a campaign's path) has run,
// then reads its record and its entrants' file, and checks them as anyone would: the
// seed hashes to the commitment (to commitment too, when not ""), the file to
// entrants_digest. It returns the seed, the record and the file.
func (in *instance) readDraw(base, commitment string) (domain.Seed, map[string]any, []byte) {
	in.t.Helper()
	var d map[string]any
	testenv.Eventually(in.t, 2*testenv.Patience, "the draw has run", func() (bool, string) {
		var status int
		status, d = in.call(http.MethodGet, base+"/draw", "", nil)
		return status == http.StatusOK && d["seed"] != nil, fmt.Sprintf("%d %v", status, d)
	})
	raw, err := hex.DecodeString(d["seed"].(string))
	if err != nil || len(raw) != domain.SeedSize {
		in.t.Fatalf("seed %v: %v", d["seed"], err)
	}
	var seed domain.Seed
	copy(seed[:], raw)
	if sum := sha256.Sum256(raw); hex.EncodeToString(sum[:]) != d["commitment"] || commitment != "" && d["commitment"] != commitment {
		in.t.Fatalf("the seed's SHA-256 is not the commitment %q: %v", commitment, d)
	}
	res, err := http.Get(in.base + base + "/draw/entrants")
	if err != nil {
		in.t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	_ = res.Body.Close()
	if sum := sha256.Sum256(body); res.StatusCode != http.StatusOK || hex.EncodeToString(sum[:]) != d["entrants_digest"] {
		in.t.Fatalf("entrants: %d, digest %x, published %v", res.StatusCode, sum, d["entrants_digest"])
	}
	return seed, d, body
}

// winnersOf reads the winners of a draw's record d.
func winnersOf(d map[string]any) []domain.UserID {
	var winners []domain.UserID
	for _, w := range d["winners"].([]any) {
		u, _ := domain.ParseUserID(w.(string))
		winners = append(winners, u)
	}
	return winners
}

// orderOf waits until user holds an order of voucher id with status and returns its id.
func (in *instance) orderOf(user domain.UserID, id string, status string) string {
	in.t.Helper()
	var found string
	testenv.Eventually(in.t, 60*time.Second, fmt.Sprintf("user %d's order of %s %s", user, id, status), func() (bool, string) {
		code, out := in.call(http.MethodGet, "/api/v1/orders", in.token(user, false), nil)
		orders, _ := out["orders"].([]any)
		for _, o := range orders {
			m := o.(map[string]any)
			if m["voucher_id"] == id && m["status"] == status {
				found = m["order_id"].(string)
				return true, ""
			}
		}
		return false, fmt.Sprintf("%d %v", code, out)
	})
	return found
}

// drawEndToEnd runs a draw of 5 units among 12 entrants on in: entries (again: one
// entry), refusals, the draw checked against the recomputed permutation, the winners'
// orders awaiting payment, and a winner's cancel passing its unit to the next entrant
// of the permutation.
func drawEndToEnd(t *testing.T, in *instance) {
	t.Helper()
	begins := time.Now().Add(4 * time.Second)
	id := in.createDraw(5, begins)
	plain := in.createVoucher(1, 1)
	for u := domain.UserID(100); u < 112; u++ {
		for range 2 {
			if status, out := in.call(http.MethodPost, "/api/v1/vouchers/"+id+"/entries", in.token(u, false), nil); status != http.StatusAccepted {
				t.Fatalf("entry of %d: %d %v", u, status, out)
			}
		}
	}
	if status, out := in.call(http.MethodPost, "/api/v1/vouchers/"+plain+"/entries", in.token(100, false), nil); status != http.StatusConflict || errorCode(out) != "not_a_draw" {
		t.Fatalf("entry of a first-come voucher: %d %v", status, out)
	}
	if status, out := in.call(http.MethodGet, "/api/v1/vouchers/"+id+"/draw", "", nil); status != http.StatusOK || out["seed"] != nil || out["entrants"] != 12.0 {
		t.Fatalf("the draw before it ran: %d %v", status, out)
	}
	if status, out := in.call(http.MethodPost, "/api/v1/vouchers/"+id+"/grab", in.token(200, false), map[string]any{"quantity": 1}); status != http.StatusConflict || errorCode(out) != "not_started" {
		t.Fatalf("a grab before the draw: %d %v", status, out)
	}
	p := in.waitForDraw(id)
	if len(p.entrants) != 12 || len(p.winners) != 5 {
		t.Fatalf("draw of %d entrants, %d winners; want 12 and 5", len(p.entrants), len(p.winners))
	}
	if status, out := in.call(http.MethodPost, "/api/v1/vouchers/"+id+"/entries", in.token(300, false), nil); status != http.StatusConflict || errorCode(out) != "entries_closed" {
		t.Fatalf("an entry after the draw: %d %v", status, out)
	}
	orders := make([]string, len(p.winners))
	for i, w := range p.winners {
		orders[i] = in.orderOf(w, id, "awaiting_payment")
	}
	order := domain.Shuffle(p.seed, p.entrants)
	if status, out := in.call(http.MethodPost, "/api/v1/vouchers/"+id+"/grab", in.token(200, false), map[string]any{"quantity": 1}); status != http.StatusConflict || errorCode(out) != "sold_out" {
		t.Fatalf("a grab after the draw gave every unit: %d %v", status, out)
	}
	if status, out := in.call(http.MethodPost, "/api/v1/orders/"+orders[0]+"/cancel", in.token(p.winners[0], false), nil); status != http.StatusOK {
		t.Fatalf("cancel a winner's order: %d %v", status, out)
	}
	in.orderOf(order[5], id, "awaiting_payment")
}

func TestDrawEndToEnd(t *testing.T) {
	drawEndToEnd(t, startInstance(t))
}

// TestDrawWithNothingInstalled: a draw in the zero-setup mode (in-process Redis, SQLite).
func TestDrawWithNothingInstalled(t *testing.T) {
	drawEndToEnd(t, startZeroSetup(t).instance)
}

// TestDrawSurvivesAKillNineOfTheDrawingInstance kills the instance carrying out a
// draw of 2,000 units among 3,000 entrants mid-draw (one step per Redis call, so it
// takes seconds); another instance takes the lease over and finishes the same draw:
// every winner has exactly one order, nobody else has one.
func TestDrawSurvivesAKillNineOfTheDrawingInstance(t *testing.T) {
	env := []string{"SECKILL_DRAW_BATCH=1", "SECKILL_DRAW_LEASE=2s", "SECKILL_CLAIM_IDLE=1s"}
	a := startFulfillInstance(t, env...)
	ctx := context.Background()
	begins := time.Now().Add(3 * time.Second)
	id := a.createDraw(2000, begins)
	vid := a.voucherID(id)
	members := make([]any, 3000)
	for i := range members {
		members[i] = strconv.Itoa(1000 + i)
	}
	if err := a.redis.SAdd(ctx, a.keys.Entries(vid), members...).Err(); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 60*time.Second, "the draw under way", func() (bool, string) {
		vals, err := a.redis.HMGet(ctx, a.keys.Meta(vid), "draw_next", "drawn").Result()
		if err != nil {
			return false, err.Error()
		}
		next, _ := vals[0].(string)
		n, _ := strconv.Atoi(next)
		return n > 1200 && vals[1] == nil, fmt.Sprintf("draw_next %v drawn %v", vals[0], vals[1])
	})
	a.kill()
	if drawn, _ := a.redis.HGet(ctx, a.keys.Meta(vid), "drawn").Result(); drawn == "1" {
		t.Fatal("the draw was over before the kill")
	}
	b := a.another(env...)
	p := b.waitForDraw(id)
	if len(p.winners) != 2000 {
		t.Fatalf("%d winners, want 2000", len(p.winners))
	}
	testenv.Eventually(t, 120*time.Second, "every winner's order persisted", func() (bool, string) {
		drawn, _ := b.redis.HGet(ctx, b.keys.Meta(vid), "drawn").Result()
		orders, err := b.dbOrders(id)
		return err == nil && drawn == "1" && len(orders) >= 2000, fmt.Sprintf("drawn %q, %d orders, %v", drawn, len(orders), err)
	})
	orders, err := b.dbOrders(id)
	if err != nil {
		t.Fatal(err)
	}
	var users []domain.UserID
	for _, o := range orders {
		if o.Status != "awaiting_payment" || o.Quantity != 1 {
			t.Fatalf("order %+v, want awaiting_payment of one unit", o)
		}
		users = append(users, domain.UserID(o.User))
	}
	slices.Sort(users)
	want := slices.Clone(p.winners)
	slices.Sort(want)
	if !slices.Equal(users, want) {
		t.Fatalf("%d orders of users that are not exactly the %d winners (or some twice)", len(users), len(want))
	}
	if n, _ := b.redis.ZCard(ctx, b.keys.Waitlist(vid)).Result(); n != 1000 {
		t.Fatalf("backfill of %d, want 1000", n)
	}
}

// errorCode returns the code of an error answer's error object ("" for none).
func errorCode(out map[string]any) string {
	e, _ := out["error"].(map[string]any)
	code, _ := e["code"].(string)
	return code
}

// TestDrawResumesAfterRedisForgets: a draw of 5 among 20 is carried out, two winners
// cancel (their units go to the first two of the backfill), then Redis restarts
// empty. The heal restores the orders from the database; a third winner cancels
// before the draw is carried out again (the test holds the draws' lease meanwhile).
// Carried out again, the draw must pass over everyone it served — the winners who
// cancelled get no second order — and hand the unit that came back to the next of
// the backfill.
func TestDrawResumesAfterRedisForgets(t *testing.T) {
	stopRedis, startRedis := redisOutage(t)
	fi := startFulfillInstance(t, "SECKILL_DRAW_LEASE=2s")
	ctx := context.Background()
	id := fi.createDraw(5, time.Now().Add(3*time.Second))
	vid := fi.voucherID(id)
	members := make([]any, 20)
	for i := range members {
		members[i] = strconv.Itoa(1000 + i)
	}
	if err := fi.redis.SAdd(ctx, fi.keys.Entries(vid), members...).Err(); err != nil {
		t.Fatal(err)
	}
	p := fi.waitForDraw(id)
	order := domain.Shuffle(p.seed, p.entrants)
	won := make([]string, 5)
	for i := range won {
		won[i] = fi.orderOf(order[i], id, "awaiting_payment")
	}
	fi.cancelOrder(order[0], won[0])
	fi.cancelOrder(order[1], won[1])
	fi.orderOf(order[5], id, "awaiting_payment")
	fi.orderOf(order[6], id, "awaiting_payment")

	// Hold the draws' lease, so the draw is carried out again only when the test says.
	release := fi.holdDrawsLease()
	for _, script := range []string{stopRedis, startRedis} {
		if out, err := exec.Command(script).CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", script, err, out)
		}
	}
	testenv.Eventually(t, 60*time.Second, "the sale state healed from the database", func() (bool, string) {
		vals, err := fi.redis.HMGet(ctx, fi.keys.Meta(vid), "stock", "restoring", "drawn").Result()
		if err != nil {
			return false, err.Error()
		}
		buyers, _ := fi.redis.HLen(ctx, fi.keys.Buyers(vid)).Result()
		return vals[0] != nil && vals[1] != "1" && buyers == 5, fmt.Sprintf("meta %v, %d buyers", vals, buyers)
	})
	if drawn, _ := fi.redis.HGet(ctx, fi.keys.Meta(vid), "drawn").Result(); drawn == "1" {
		t.Fatal("the healed sale state says the draw was carried out; the test needs it carried out again")
	}
	fi.cancelOrder(order[4], won[4])
	release()
	testenv.Eventually(t, 60*time.Second, "the draw carried out again", func() (bool, string) {
		drawn, err := fi.redis.HGet(ctx, fi.keys.Meta(vid), "drawn").Result()
		return drawn == "1", fmt.Sprintf("drawn %q %v", drawn, err)
	})
	fi.orderOf(order[7], id, "awaiting_payment")

	orders, err := fi.dbOrders(id)
	if err != nil {
		t.Fatal(err)
	}
	live := map[domain.UserID]int{}
	all := map[domain.UserID]int{}
	for _, o := range orders {
		all[domain.UserID(o.User)]++
		if o.Status == "awaiting_payment" {
			live[domain.UserID(o.User)]++
		}
	}
	for i, u := range order {
		wantLive, wantAll := 0, 0
		switch {
		case i == 0 || i == 1 || i == 4:
			wantAll = 1 // served once, cancelled
		case i < 8:
			wantLive, wantAll = 1, 1
		}
		if live[u] != wantLive || all[u] != wantAll {
			t.Errorf("place %d of the draw (user %d): %d live orders of %d; want %d of %d", i, u, live[u], all[u], wantLive, wantAll)
		}
	}
	if n, _ := fi.redis.ZCard(ctx, fi.keys.Waitlist(vid)).Result(); n != 12 {
		t.Errorf("backfill of %d after the draw was carried out again, want the 12 not served", n)
	}
}

// holdDrawsLease takes the draws' lease in the test's name for an hour, once the
// instances holding it let it go, so no draw is carried out until the test calls the
// function it returns, which gives the lease up.
func (fi *fulfillInstance) holdDrawsLease() func() {
	fi.t.Helper()
	ctx := context.Background()
	db, err := fi.openStore(ctx)
	if err != nil {
		fi.t.Fatal(err)
	}
	testenv.Eventually(fi.t, 60*time.Second, "the test holds the draws' lease", func() (bool, string) {
		res, err := db.NewRaw(`INSERT INTO leases (name, holder, expires_at) VALUES ('draws', 'test', ?)
ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at
WHERE leases.expires_at <= ? OR leases.holder = excluded.holder`, time.Now().Add(time.Hour), time.Now()).Exec(ctx)
		if err != nil {
			return false, err.Error()
		}
		n, _ := res.RowsAffected()
		return n == 1, "held by the instance"
	})
	return func() {
		fi.t.Helper()
		defer db.Close()
		if _, err := db.NewRaw("UPDATE leases SET expires_at = ? WHERE name = 'draws' AND holder = 'test'", time.Now().Add(-time.Second)).Exec(ctx); err != nil {
			fi.t.Fatal(err)
		}
	}
}

// cancelOrder cancels user's order as its user.
func (in *instance) cancelOrder(user domain.UserID, order string) {
	in.t.Helper()
	if status, out := in.call(http.MethodPost, "/api/v1/orders/"+order+"/cancel", in.token(user, false), nil); status != http.StatusOK {
		in.t.Fatalf("cancel user %d's order %s: %d %v", user, order, status, out)
	}
}
