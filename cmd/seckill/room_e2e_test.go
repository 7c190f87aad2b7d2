package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
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

// roomDriver sends the many requests of a waiting-room test over a few kept-alive
// connections per instance: light enough for a small machine.
type roomDriver struct {
	t      *testing.T
	client *http.Client
	ins    []*fulfillInstance
}

// roomWorkers is how many requests a roomDriver has in flight at once.
const roomWorkers = 8

func newRoomDriver(t *testing.T, ins ...*fulfillInstance) *roomDriver {
	return &roomDriver{t: t, ins: ins, client: &http.Client{
		Timeout:   30 * time.Second,
		Transport: &http.Transport{MaxIdleConnsPerHost: roomWorkers, MaxConnsPerHost: roomWorkers},
	}}
}

// do sends one request as user to the instance i picks (round robin) and decodes
// the JSON answer. A 503 is sent again, as a client would (every request of these
// tests may be: a join or a read changes nothing the second time, a grab answers
// already_purchased), a while later: the machine is shared.
func (d *roomDriver) do(i int, method, path string, user domain.UserID, header map[string]string) (int, map[string]any, error) {
	for range 50 {
		status, body, err := d.once(i, method, path, user, header)
		if err != nil || status != http.StatusServiceUnavailable {
			return status, body, err
		}
		time.Sleep(200 * time.Millisecond)
	}
	return d.once(i, method, path, user, header)
}

// once sends one request as do does, once.
func (d *roomDriver) once(i int, method, path string, user domain.UserID, header map[string]string) (int, map[string]any, error) {
	in := d.ins[i%len(d.ins)]
	req, err := http.NewRequest(method, in.base+path, nil)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+in.token(user, false))
	for k, v := range header {
		req.Header.Set(k, v)
	}
	res, err := d.client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		return 0, nil, err
	}
	var body map[string]any
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &body); err != nil {
			return res.StatusCode, nil, fmt.Errorf("%s %s: not JSON: %q", method, path, raw)
		}
	}
	return res.StatusCode, body, nil
}

// each runs fn(i, users[i]) for every user, roomWorkers at a time, and fails the test
// with the first error.
func (d *roomDriver) each(users []domain.UserID, fn func(i int, u domain.UserID) error) {
	d.t.Helper()
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, roomWorkers)
	for range roomWorkers {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= len(users) {
					return
				}
				if err := fn(i, users[i]); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		d.t.Fatal(err)
	}
}

// roomPath returns the path of room: a voucher's id, or "campaigns/<id>" for a
// campaign's room.
func roomPath(room string) string {
	if strings.Contains(room, "/") {
		return "/api/v1/" + room
	}
	return "/api/v1/vouchers/" + room
}

// place reads u's place in voucher's room (roomPath) through instance i.
func (d *roomDriver) place(i int, voucher string, u domain.UserID) (map[string]any, error) {
	status, body, err := d.do(i, http.MethodGet, roomPath(voucher)+"/queue", u, nil)
	if err != nil {
		return nil, err
	}
	if status != http.StatusOK {
		return nil, fmt.Errorf("GET queue of user %d: %d %v", u, status, body)
	}
	return body, nil
}

// join puts users in voucher's room (roomPath), spread over the instances, each
// answered 202.
func (d *roomDriver) join(voucher string, users []domain.UserID) {
	d.t.Helper()
	d.each(users, func(i int, u domain.UserID) error {
		status, body, err := d.do(i, http.MethodPost, roomPath(voucher)+"/queue", u, nil)
		if err == nil && status != http.StatusAccepted {
			err = fmt.Errorf("join of user %d: %d %v", u, status, body)
		}
		return err
	})
}

// createRoom creates a waiting-room voucher on in, its queue open already, its sale
// beginning in an hour (moved to now by startRoom), and returns its id and commitment.
func (in *instance) createRoom(stock, window int) (string, string) {
	in.t.Helper()
	now := time.Now().UTC()
	status, v := in.call(http.MethodPost, "/api/v1/vouchers", in.token(1, true), map[string]any{
		"title": "Room", "stock": stock, "per_user_limit": 1,
		"begins_at": now.Add(time.Hour), "ends_at": now.Add(2 * time.Hour),
		"admission": "waiting_room", "queue_opens_at": now.Add(-time.Minute), "queue_window": window,
	})
	if status != http.StatusCreated || v["admission"] != "waiting_room" {
		in.t.Fatalf("create a waiting-room voucher: %d %v", status, v)
	}
	commitment, _ := v["commitment"].(string)
	if len(commitment) != 64 {
		in.t.Fatalf("commitment %q, want 64 hex digits", commitment)
	}
	return v["id"].(string), commitment
}

// startRoom moves voucher's start to a second from now, so its early joiners are
// shuffled then.
func (in *instance) startRoom(voucher string) {
	in.t.Helper()
	status, body := in.call(http.MethodPatch, "/api/v1/vouchers/"+voucher, in.token(1, true),
		map[string]any{"begins_at": time.Now().UTC().Add(time.Second)})
	if status != http.StatusOK {
		in.t.Fatalf("move the start: %d %v", status, body)
	}
}

// published waits for voucher's shuffle to be published (read as user) and checks it
// against the commitment and the early joiners: it returns the order the seed makes of
// them, as anyone would recompute it.
func (d *roomDriver) published(voucher, commitment string, user domain.UserID, early []domain.UserID) []domain.UserID {
	d.t.Helper()
	var body map[string]any
	testenv.Eventually(d.t, time.Minute, "the shuffle published", func() (bool, string) {
		var err error
		body, err = d.place(0, voucher, user)
		if err != nil {
			return false, err.Error()
		}
		return body["seed"] != nil && body["position"] != nil, fmt.Sprintf("%v; logs:\n%s", body, d.ins[0].logs)
	})
	seed, err := hex.DecodeString(body["seed"].(string))
	if err != nil || len(seed) != 32 {
		d.t.Fatalf("seed %v: %v", body["seed"], err)
	}
	if sum := sha256.Sum256(seed); hex.EncodeToString(sum[:]) != commitment || body["commitment"] != commitment {
		d.t.Fatalf("the seed's SHA-256 is %x, the commitment %s (answered %v)", sum, commitment, body["commitment"])
	}
	sorted := domain.SortEntrants(early)
	if body["entrants"] != float64(len(early)) || body["entrants_digest"] != domain.EntrantsDigest(sorted) {
		d.t.Fatalf("published %v entrants, digest %v; want %d, %s", body["entrants"], body["entrants_digest"], len(early),
			domain.EntrantsDigest(sorted))
	}
	// The entrants anyone may download hash to the published digest and are the early
	// joiners: the order is recomputed from what is published only.
	entrants := d.entrants(voucher)
	if sum := sha256.Sum256([]byte(entrants)); hex.EncodeToString(sum[:]) != body["entrants_digest"] {
		d.t.Fatalf("the entrants downloaded hash to %x, the digest published is %v", sum, body["entrants_digest"])
	}
	var published []domain.UserID
	for line := range strings.Lines(entrants) {
		id, err := domain.ParseUserID(strings.TrimSuffix(line, "\n"))
		if err != nil {
			d.t.Fatalf("entrants line %q: %v", line, err)
		}
		published = append(published, id)
	}
	if !slices.Equal(published, sorted) {
		d.t.Fatalf("%d entrants downloaded, want the %d early joiners sorted", len(published), len(sorted))
	}
	return domain.Shuffle(domain.Seed(seed), published)
}

// wantQueueStats reads the figures of voucher's room, sold out, as an admin through
// in, and checks them against the room: every joiner, the admitted as the room counts
// them, the passes outstanding as Redis holds them around the read (no one is let in
// once sold out, so they can only expire meanwhile), and the published seed.
func (d *roomDriver) wantQueueStats(in *fulfillInstance, voucher string, early, late []domain.UserID, admitted, window int) {
	d.t.Helper()
	ctx := context.Background()
	passes := func() int64 {
		now, err := in.redis.Time(ctx).Result()
		if err != nil {
			d.t.Fatal(err)
		}
		n, err := in.redis.ZCount(ctx, in.keys.Passes(in.voucherID(voucher)), fmt.Sprintf("(%d", now.UnixMilli()), "+inf").Result()
		if err != nil {
			d.t.Fatal(err)
		}
		return n
	}
	place, err := d.place(0, voucher, early[0])
	if err != nil {
		d.t.Fatal(err)
	}
	before := passes()
	status, stats := in.call(http.MethodGet, "/api/v1/vouchers/"+voucher+"/queue/stats", in.token(1, true), nil)
	after := passes()
	joined := len(early) + len(late)
	outstanding, _ := stats["passes_outstanding"].(float64)
	if status != http.StatusOK || stats["joined"] != float64(joined) || stats["joined_early"] != float64(len(early)) ||
		stats["joined_late"] != float64(len(late)) || stats["admitted"] != float64(admitted) ||
		stats["waiting"] != float64(joined-admitted) || stats["window"] != float64(window) ||
		int64(outstanding) > before || int64(outstanding) < after || stats["seed"] != place["seed"] || stats["seed"] == nil {
		d.t.Fatalf("the room's figures: %d %v; want %d joined (%d early), %d admitted, %d to %d passes outstanding, seed %v",
			status, stats, joined, len(early), admitted, after, before, place["seed"])
	}
}

// entrants downloads GET …/queue/entrants of voucher's room (roomPath), anonymously,
// from the first instance.
func (d *roomDriver) entrants(voucher string) string {
	d.t.Helper()
	res, err := d.client.Get(d.ins[0].base + roomPath(voucher) + "/queue/entrants")
	if err != nil {
		d.t.Fatal(err)
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil || res.StatusCode != http.StatusOK || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/plain") {
		d.t.Fatalf("GET …/queue/entrants: %d %q %v", res.StatusCode, raw, err)
	}
	return string(raw)
}

// wantPositions checks that each of users reads its position, position from+i.
func (d *roomDriver) wantPositions(voucher string, users []domain.UserID, from int) {
	d.t.Helper()
	d.each(users, func(i int, u domain.UserID) error {
		body, err := d.place(i, voucher, u)
		if err == nil && body["position"] != float64(from+i) {
			err = fmt.Errorf("user %d reads position %v, want %d", u, body["position"], from+i)
		}
		return err
	})
}

// userRange returns n user ids from first on.
func userRange(first domain.UserID, n int) []domain.UserID {
	out := make([]domain.UserID, n)
	for i := range out {
		out[i] = first + domain.UserID(i)
	}
	return out
}

// TestWaitingRoomAdmitsInThePublishedOrder runs a waiting-room sale on two instances:
// 10,000 users join before the start and 2,000 after. The shuffle published (seed,
// entrants, digest) recomputes from the seed exactly into the positions every early
// joiner reads; the late ones follow in arrival order; the passes outstanding never
// exceed the window; users are let in from the front of that order only; the grabs
// sent with the passes sell the stock exactly; everyone still waiting then reads
// sold_out.
func TestWaitingRoomAdmitsInThePublishedOrder(t *testing.T) {
	a := startFulfillInstance(t)
	b := a.another()
	d := newRoomDriver(t, a, b)
	const stock, window = 400, 500
	voucher, commitment := a.createRoom(stock, window)
	vid := a.voucherID(voucher)

	// The contract's refusals.
	plain := a.createVoucher(5, 1)
	if status, body, err := d.do(0, http.MethodPost, "/api/v1/vouchers/"+plain+"/queue", 5, nil); err != nil ||
		status != http.StatusConflict || body["error"].(map[string]any)["code"] != "no_waiting_room" {
		t.Fatalf("join the queue of a first-come voucher: %d %v %v", status, body, err)
	}
	if status, body, err := d.do(1, http.MethodGet, "/api/v1/vouchers/"+voucher+"/queue", 5, nil); err != nil ||
		status != http.StatusNotFound || body["error"].(map[string]any)["code"] != "not_found" {
		t.Fatalf("read the place of a user who never joined: %d %v %v", status, body, err)
	}

	early := userRange(100000, 10000)
	start := time.Now()
	d.join(voucher, early)
	t.Logf("%d early joins through 2 instances in %v", len(early), time.Since(start))
	d.join(voucher, early[:100]) // again: the same place, no second one
	if body, err := d.place(1, voucher, early[0]); err != nil || body["position"] != nil || body["seed"] != nil {
		t.Fatalf("an early joiner before the shuffle: %v %v", body, err)
	}

	// The passes outstanding, sampled throughout.
	ctx, stop := context.WithCancel(context.Background())
	var outstanding []int
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for ctx.Err() == nil {
			if n, err := a.redis.ZCard(ctx, a.keys.Passes(vid)).Result(); err == nil {
				outstanding = append(outstanding, int(n))
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()
	defer func() { stop(); <-sampled }()

	a.startRoom(voucher)
	order := d.published(voucher, commitment, early[0], early)
	// The first in line follows its place on the event stream (a browser's ticket).
	events := b.openStream("/api/v1/vouchers/"+voucher+"/queue/events", b.ticket(b.token(order[0], false)), "queue")
	events.until(time.Minute, "the first in line let in, with a pass", func(ev map[string]any) bool {
		return ev["position"] == float64(1) && ev["admitted"] == true && ev["pass"] != nil && ev["seed"] != nil
	})
	late := userRange(200000, 2000)
	start = time.Now()
	d.join(voucher, late)
	t.Logf("%d late joins in %v", len(late), time.Since(start))
	d.wantPositions(voucher, order, 1)
	// Late joiners hold the positions after the early ones, each its own.
	positions := make([]int, len(late))
	d.each(late, func(i int, u domain.UserID) error {
		body, err := d.place(i, voucher, u)
		if err == nil {
			p, _ := body["position"].(float64)
			positions[i] = int(p)
		}
		return err
	})
	slices.Sort(positions)
	for i, p := range positions {
		if p != len(order)+1+i {
			t.Fatalf("late positions %v…, want %d to %d", positions[:min(len(positions), 5)], len(order)+1, len(order)+len(late))
		}
	}

	// Admission: the front of the published order, within the window; every admitted
	// user grabs with its pass until the stock is gone.
	reserved, soldOut, done := 0, 0, 0
	testenv.Eventually(t, 2*time.Minute, "the stock sold through the passes", func() (bool, string) {
		admitted, err := a.redis.HGet(ctx, a.keys.Room(vid), "admitted").Int()
		if err != nil {
			return false, err.Error()
		}
		members, err := a.redis.ZRange(ctx, a.keys.Passes(vid), 0, -1).Result()
		if err != nil {
			return false, err.Error()
		}
		front := map[string]bool{}
		for _, u := range order[:min(admitted, len(order))] {
			front[u.String()] = true
		}
		for _, m := range members {
			if !front[m] {
				t.Fatalf("user %s holds a pass, but only the first %d of the published order were let in", m, admitted)
			}
		}
		var mu sync.Mutex
		d.each(order[done:min(admitted, len(order))], func(i int, u domain.UserID) error {
			body, err := d.place(i, voucher, u)
			if err != nil {
				return err
			}
			if body["admitted"] != true {
				return fmt.Errorf("user %d at position %v, within the %d admitted, reads %v", u, body["position"], admitted, body)
			}
			pass, _ := body["pass"].(string)
			status, res, err := d.do(i, http.MethodPost, "/api/v1/vouchers/"+voucher+"/grab", u, map[string]string{"X-Seckill-Pass": pass})
			if err != nil {
				return err
			}
			mu.Lock()
			defer mu.Unlock()
			switch {
			case status == http.StatusAccepted, status == http.StatusConflict && res["error"].(map[string]any)["code"] == "already_purchased":
				reserved++ // already_purchased: a retry after a 503 whose grab had reserved
			case status == http.StatusConflict && res["error"].(map[string]any)["code"] == "sold_out":
				soldOut++
			default:
				return fmt.Errorf("grab of user %d with its pass: %d %v", u, status, res)
			}
			return nil
		})
		done = min(admitted, len(order))
		return reserved == stock, fmt.Sprintf("%d admitted, %d reserved, %d sold out", admitted, reserved, soldOut)
	})
	a.waitSettled(voucher, stock, time.Minute)
	if sold := a.dbSold(voucher); sold != stock {
		t.Fatalf("sold %d, want %d", sold, stock)
	}
	// Sold out: no one else is let in, and everyone still waiting reads it.
	time.Sleep(3 * admitEvery)
	admitted, err := a.redis.HGet(ctx, a.keys.Room(vid), "admitted").Int()
	if err != nil || admitted < stock || admitted > len(order) {
		t.Fatalf("admitted %d (%v), want between %d and %d", admitted, err, stock, len(order))
	}
	waiting := append(slices.Clone(order[admitted:min(admitted+200, len(order))]), late[:200]...)
	d.each(waiting, func(i int, u domain.UserID) error {
		body, err := d.place(i, voucher, u)
		if err == nil && (body["admitted"] != false || body["sold_out"] != true || body["pass"] != nil) {
			err = fmt.Errorf("user %d still waiting once sold out reads %v", u, body)
		}
		return err
	})
	if again, _ := a.redis.HGet(ctx, a.keys.Room(vid), "admitted").Int(); again != admitted {
		t.Fatalf("%d admitted once sold out, then %d", admitted, again)
	}
	d.wantQueueStats(b, voucher, early, late, admitted, window)
	stop()
	<-sampled
	// The history checker's verdict on the room: positions as published, admission
	// from the front only, the window kept.
	read := append(slices.Clone(order[:admitted]), waiting...)
	places := make([]history.Place, len(read))
	d.each(read, func(i int, u domain.UserID) error {
		body, err := d.place(i, voucher, u)
		if err == nil {
			p, _ := body["position"].(float64)
			places[i] = history.Place{User: int64(u), Position: int(p), Admitted: body["admitted"] == true, SoldOut: body["sold_out"] == true}
		}
		return err
	})
	published := make([]int64, len(order))
	for i, u := range order {
		published[i] = int64(u)
	}
	if err := history.CheckRoom(history.Room{Published: published, Places: places, Window: window, Outstanding: outstanding}); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d admitted, at most %d passes outstanding (%d samples); %d reserved, %d grabs answered sold_out",
		admitted, slices.Max(outstanding), len(outstanding), reserved, soldOut)
}

// TestWaitingRoomShuffleSurvivesAKillNineAndARedisLoss: the instance that shuffles is
// killed with SIGKILL after it saved the shuffle and before it installed it; another
// instance takes the shuffle over once the lease lapses and installs the saved order
// (the early joiners are not read again). The room's keys lost (a Redis restart
// without persistence), the order is installed again from the database: every early
// joiner reads the same position.
func TestWaitingRoomShuffleSurvivesAKillNineAndARedisLoss(t *testing.T) {
	a := startFulfillInstance(t, "SECKILL_TEST_SHUFFLE_PAUSE=5m", "SECKILL_LOG_LEVEL=info")
	api := a.another("SECKILL_ROLES=api", "SECKILL_LOG_LEVEL=warn")
	d := newRoomDriver(t, api)
	voucher, commitment := a.createRoom(10, 20)
	vid := a.voucherID(voucher)
	early := userRange(1000, 300)
	d.join(voucher, early)
	a.startRoom(voucher)
	testenv.Eventually(t, time.Minute, "the shuffle saved", func() (bool, string) {
		return strings.Contains(a.logs.String(), "waiting room shuffle saved"), a.logs.String()
	})
	a.kill()
	if body, err := d.place(0, voucher, early[0]); err != nil || body["seed"] == nil || body["position"] != nil {
		t.Fatalf("after the kill: %v %v; want the shuffle published, not installed", body, err)
	}
	// Joiners after the start are late ones, in arrival order, whether or not the
	// order is installed.
	late := userRange(5000, 5)
	for _, u := range late {
		d.join(voucher, []domain.UserID{u})
	}
	api.another("SECKILL_ROLES=api,worker", "SECKILL_TEST_SHUFFLE_PAUSE=0s")
	order := d.published(voucher, commitment, early[0], early)
	d.wantPositions(voucher, order, 1)
	d.wantPositions(voucher, late, len(order)+1)

	ctx := context.Background()
	keys := []string{a.keys.Room(vid), a.keys.RoomEarly(vid), a.keys.RoomPlaces(vid), a.keys.RoomLate(vid),
		a.keys.RoomLine(vid), a.keys.RoomLateLine(vid), a.keys.Passes(vid)}
	for _, k := range keys {
		if err := a.redis.Del(ctx, k).Err(); err != nil {
			t.Fatal(err)
		}
	}
	d.published(voucher, commitment, early[len(early)-1], early)
	d.wantPositions(voucher, order, 1)
}

// TestWaitingRoomPassesOverItsBuyersAfterRedisForgets: the first window's users are let
// in and buy; then Redis forgets every key of the service (a restart without
// persistence). The heal installs the room's order again from its start and restores
// the orders from the database; the window then goes to the next users in line, never
// to a buyer (whose grab would answer already_purchased while its unused pass held a
// place of the window for its 120 s, round after round).
func TestWaitingRoomPassesOverItsBuyersAfterRedisForgets(t *testing.T) {
	a := startFulfillInstance(t, "SECKILL_WARM_INTERVAL=1s")
	d := newRoomDriver(t, a)
	const window = 5
	voucher, commitment := a.createRoom(50, window)
	vid := a.voucherID(voucher)
	early := userRange(1000, 30)
	d.join(voucher, early)
	a.startRoom(voucher)
	order := d.published(voucher, commitment, early[0], early)
	for _, u := range order[:window] {
		d.grabWithPass(voucher, voucher, u)
	}
	a.waitSettled(voucher, window, time.Minute)

	d.forgetAndWantTheNextWindow(a, voucher, vid, order, window)
}

// grabWithPass waits until u is let in to room (roomPath) and grabs voucher with its
// pass, which must be answered 202.
func (d *roomDriver) grabWithPass(room, voucher string, u domain.UserID) {
	t := d.t
	t.Helper()
	var pass string
	testenv.Eventually(t, time.Minute, "a pass for user "+u.String(), func() (bool, string) {
		body, err := d.place(0, room, u)
		if err != nil {
			return false, err.Error()
		}
		pass, _ = body["pass"].(string)
		return pass != "", fmt.Sprint(body)
	})
	status, body, err := d.do(0, http.MethodPost, "/api/v1/vouchers/"+voucher+"/grab", u, map[string]string{"X-Seckill-Pass": pass})
	if err != nil || status != http.StatusAccepted {
		t.Fatalf("grab of user %d with its pass: %d %v %v", u, status, body, err)
	}
}

// forgetAndWantTheNextWindow deletes every key of a's Redis (a restart without
// persistence) once the first window users of room's published order bought, and
// waits for the heal to let the next window in: their passes (under the room id roomID)
// and none of the buyers', who read their positions, admitted, with no pass.
func (d *roomDriver) forgetAndWantTheNextWindow(a *fulfillInstance, room string, roomID domain.VoucherID, order []domain.UserID, window int) {
	t := d.t
	t.Helper()
	ctx := context.Background()
	if err := testenv.DeleteKeys(ctx, a.redis, a.keys.Prefix+":*"); err != nil {
		t.Fatal(err)
	}
	var holders []string
	testenv.Eventually(t, time.Minute, "a window let in after the heal", func() (bool, string) {
		var err error
		holders, err = a.redis.ZRange(ctx, a.keys.Passes(roomID), 0, -1).Result()
		return err == nil && len(holders) == window, fmt.Sprintf("passes held by %v (%v)", holders, err)
	})
	want := make([]string, window)
	for i, u := range order[window : 2*window] {
		want[i] = u.String()
	}
	slices.Sort(holders)
	slices.Sort(want)
	if !slices.Equal(holders, want) {
		t.Fatalf("after the heal passes went to %v, want the next in line %v (the buyers are %v)", holders, want, order[:window])
	}
	for i, u := range order[:window] {
		body, err := d.place(0, room, u)
		if err != nil || body["position"] != float64(i+1) || body["admitted"] != true || body["pass"] != nil {
			t.Fatalf("buyer %d after the heal reads %v (%v); want position %d, admitted, no pass", u, body, err, i+1)
		}
	}
}

// TestWaitingRoomOnThePostgresStrategyAdmitsAndSellsOut: on the postgres stock
// strategy, whose sale state is the database's rows and not Redis's, a voucher's
// waiting room admits by the database's figures: the first in line are let in and
// buy with their passes until the stock is gone, and those still waiting then read
// sold_out.
func TestWaitingRoomOnThePostgresStrategyAdmitsAndSellsOut(t *testing.T) {
	a := startFulfillInstance(t, "SECKILL_STOCK_STRATEGY=postgres")
	d := newRoomDriver(t, a)
	const stock, window = 6, 3
	voucher, commitment := a.createRoom(stock, window)
	early := userRange(2000, 20)
	d.join(voucher, early)
	a.startRoom(voucher)
	order := d.published(voucher, commitment, early[0], early)
	for _, u := range order[:stock] {
		d.grabWithPass(voucher, voucher, u)
	}
	last := order[len(order)-1]
	testenv.Eventually(t, time.Minute, "the last in line told sold out", func() (bool, string) {
		body, err := d.place(0, voucher, last)
		return err == nil && body["sold_out"] == true && body["admitted"] == false, fmt.Sprint(body, err)
	})
	if sold := a.dbSold(voucher); sold != stock {
		t.Fatalf("sold %d, want %d", sold, stock)
	}
}
