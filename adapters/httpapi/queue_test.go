package httpapi_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/seckill/seckill/adapters/httpapi"
	"github.com/seckill/seckill/adapters/testenv"
	"github.com/seckill/seckill/domain"
)

// TestQueueJoinsReadsAndAdmits: a waiting room through the API, every answer checked
// against the OpenAPI document: the refusals (a first-come voucher, a user who never
// joined, a denied user), joins before the start (the same place again), then, once
// the sale began and a worker's step shuffled and admitted, the places with the
// published shuffle and the first in line's pass.
func TestQueueJoinsReadsAndAdmits(t *testing.T) {
	a := newAPI(t)
	now := time.Now().UTC()
	// The joins below must come before the start: 5 s leaves a busy machine room for
	// them, and the wait for the shuffle after them follows the start, however near.
	body, _ := json.Marshal(map[string]any{
		"title": "Room", "stock": 5, "per_user_limit": 1, "begins_at": now.Add(5 * time.Second), "ends_at": now.Add(time.Hour),
		"admission": "waiting_room", "queue_window": 2,
	})
	r := a.do(http.MethodPost, "/api/v1/vouchers", a.admin, string(body))
	if r.Status != http.StatusCreated {
		t.Fatalf("create: %d %s", r.Status, r.Raw)
	}
	room := r.Body["id"].(string)
	plain := a.createVoucher(5, 1)
	if r := a.do(http.MethodPost, "/api/v1/vouchers/"+plain+"/queue", a.token(5, false), ""); r.Status != http.StatusConflict || r.code() != "no_waiting_room" {
		t.Fatalf("join a first-come voucher: %d %s", r.Status, r.Raw)
	}
	// A user who never joined is told so (the code stays the contract's not_found);
	// an unknown voucher is the plain not found.
	if r := a.do(http.MethodGet, "/api/v1/vouchers/"+room+"/queue", a.token(5, false), ""); r.Status != http.StatusNotFound || r.code() != "not_found" ||
		!strings.Contains(r.Raw, "you have not joined this waiting room") {
		t.Fatalf("the place of a user who never joined: %d %s", r.Status, r.Raw)
	}
	if r := a.do(http.MethodGet, "/api/v1/vouchers/999999/queue", a.token(5, false), ""); r.Status != http.StatusNotFound || strings.Contains(r.Raw, "joined") {
		t.Fatalf("the place in an unknown voucher's room: %d %s, want the plain 404", r.Status, r.Raw)
	}
	if r := a.do(http.MethodPut, "/api/v1/denylist/9", a.admin, ""); r.Status != http.StatusNoContent {
		t.Fatalf("deny: %d %s", r.Status, r.Raw)
	}
	if r := a.do(http.MethodPost, "/api/v1/vouchers/"+room+"/queue", a.token(9, false), ""); r.Status != http.StatusForbidden || r.code() != "denied" {
		t.Fatalf("a denied user joins: %d %s", r.Status, r.Raw)
	}
	for _, u := range []domain.UserID{1, 2, 3, 1} {
		r := a.do(http.MethodPost, "/api/v1/vouchers/"+room+"/queue", a.token(u, false), "")
		if r.Status != http.StatusAccepted || r.Body["position"] != nil || r.Body["seed"] != nil || r.Body["commitment"] == "" {
			t.Fatalf("join of %d: %d %s", u, r.Status, r.Raw)
		}
	}
	for path, want := range map[string]string{room: "not_found", plain: "no_waiting_room"} {
		if status, body := a.entrants(path); status == http.StatusOK || !strings.Contains(body, `"`+want+`"`) {
			t.Fatalf("the entrants of %s before a shuffle: %d %s, want %s", path, status, body, want)
		}
	}
	testenv.Eventually(t, time.Minute, "the room shuffled", func() (bool, string) {
		if err := a.rooms.Handle(context.Background()); err != nil {
			return false, err.Error()
		}
		r := a.do(http.MethodGet, "/api/v1/vouchers/"+room+"/queue", a.token(1, false), "")
		return r.Status == http.StatusOK && r.Body["position"] != nil, fmt.Sprintf("%d %s", r.Status, r.Raw)
	})
	admitted := 0
	for _, u := range []domain.UserID{1, 2, 3} {
		r := a.do(http.MethodGet, "/api/v1/vouchers/"+room+"/queue", a.token(u, false), "")
		if r.Status != http.StatusOK || r.Body["entrants"] != float64(3) || r.Body["seed"] == nil {
			t.Fatalf("the place of %d: %d %s", u, r.Status, r.Raw)
		}
		if r.Body["admitted"] == true {
			admitted++
			if r.Body["pass"] == nil || r.Body["pass_expires_at"] == nil || r.Body["position"].(float64) > 2 {
				t.Fatalf("an admitted user's place: %s", r.Raw)
			}
		}
	}
	if admitted != 2 {
		t.Fatalf("%d admitted, want the window: 2", admitted)
	}
	checkPublishedShuffle(t, a, room, []domain.UserID{1, 2, 3})
}

// entrants reads GET …/queue/entrants of voucher anonymously, its answer checked
// against the OpenAPI document.
func (a *api) entrants(voucher string) (int, string) {
	a.t.Helper()
	return a.entrantsAt("/api/v1/vouchers/" + voucher + "/queue/entrants")
}

// entrantsAt reads the entrants at path (a voucher's or a campaign's room)
// anonymously, its answer checked against the OpenAPI document.
func (a *api) entrantsAt(path string) (int, string) {
	a.t.Helper()
	res, err := http.Get(a.url + path)
	if err != nil {
		a.t.Fatal(err)
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		a.t.Fatal(err)
	}
	checkResponse(a.t, http.MethodGet, path, res.StatusCode, res.Header, raw)
	if res.StatusCode == http.StatusOK && !strings.HasPrefix(res.Header.Get("Content-Type"), "text/plain") {
		a.t.Fatalf("entrants answered as %q, want text/plain", res.Header.Get("Content-Type"))
	}
	return res.StatusCode, string(raw)
}

// checkPublishedShuffle checks voucher's shuffle as anyone can, from what the service
// publishes only: the entrants anyone may download are the joiners, sorted, and hash to
// the published digest; the seed hashes to the commitment; and the seed's shuffle of
// the entrants puts every joiner at the position it reads.
func checkPublishedShuffle(t *testing.T, a *api, voucher string, joiners []domain.UserID) {
	t.Helper()
	status, body := a.entrants(voucher)
	if status != http.StatusOK {
		t.Fatalf("the entrants after the shuffle: %d %s", status, body)
	}
	var entrants []domain.UserID
	for line := range strings.Lines(body) {
		id, err := strconv.ParseInt(strings.TrimSuffix(line, "\n"), 10, 64)
		if err != nil || !strings.HasSuffix(line, "\n") {
			t.Fatalf("entrants line %q: %v", line, err)
		}
		entrants = append(entrants, domain.UserID(id))
	}
	if want := domain.SortEntrants(joiners); !slices.Equal(entrants, want) {
		t.Fatalf("entrants %v, want the joiners sorted: %v", entrants, want)
	}
	place := a.do(http.MethodGet, "/api/v1/vouchers/"+voucher+"/queue", a.token(joiners[0], false), "")
	digest := sha256.Sum256([]byte(body))
	if place.Body["entrants_digest"] != hex.EncodeToString(digest[:]) || place.Body["entrants"] != float64(len(entrants)) {
		t.Fatalf("the entrants hash to %x; published %s", digest, place.Raw)
	}
	seed, err := hex.DecodeString(place.Body["seed"].(string))
	if err != nil || len(seed) != domain.SeedSize {
		t.Fatalf("seed %v: %v", place.Body["seed"], err)
	}
	if sum := sha256.Sum256(seed); place.Body["commitment"] != hex.EncodeToString(sum[:]) {
		t.Fatalf("the seed hashes to %x; committed %v", sum, place.Body["commitment"])
	}
	for i, u := range domain.Shuffle(domain.Seed(seed), entrants) {
		r := a.do(http.MethodGet, "/api/v1/vouchers/"+voucher+"/queue", a.token(u, false), "")
		if r.Body["position"] != float64(i+1) {
			t.Fatalf("user %d reads position %v; the published shuffle puts it at %d", u, r.Body["position"], i+1)
		}
	}
}

// A waiting room that asks for a proof of work takes a join only with a solved
// challenge of the joining user's, spent by the join; the refusal carries a fresh one.
func TestQueueJoinOfAProofOfWorkRoomNeedsAProof(t *testing.T) {
	a := newAPI(t)
	now := time.Now().UTC()
	body, _ := json.Marshal(map[string]any{
		"title": "Room", "stock": 5, "begins_at": now.Add(5 * time.Minute), "ends_at": now.Add(2 * time.Hour),
		"admission": "waiting_room", "challenge": "pow", "pow_difficulty": 8,
	})
	r := a.do(http.MethodPost, "/api/v1/vouchers", a.admin, string(body))
	if r.Status != http.StatusCreated {
		t.Fatalf("create: %d %s", r.Status, r.Raw)
	}
	path := "/api/v1/vouchers/" + r.Body["id"].(string) + "/queue"
	refused := a.do(http.MethodPost, path, a.token(1, false), "")
	e, _ := refused.Body["error"].(map[string]any)
	challenge, _ := e["challenge"].(string)
	if refused.Status != http.StatusForbidden || refused.code() != "challenge_required" || challenge == "" || e["difficulty"] != 8.0 {
		t.Fatalf("join without a proof: %d %s, want 403 challenge_required with a fresh challenge", refused.Status, refused.Raw)
	}
	proof := challenge + ":" + domain.SolvePow(challenge, 8)
	if r := a.serveFrom(http.MethodPost, path, a.token(2, false), "", "", httpapi.PowHeader, proof); r.Status != http.StatusForbidden || r.code() != "challenge_required" {
		t.Fatalf("join with another user's proof: %d %s", r.Status, r.Raw)
	}
	if r := a.serveFrom(http.MethodPost, path, a.token(1, false), "", "", httpapi.PowHeader, proof); r.Status != http.StatusAccepted {
		t.Fatalf("join with the user's proof: %d %s", r.Status, r.Raw)
	}
	if r := a.serveFrom(http.MethodPost, path, a.token(3, false), "", "", httpapi.PowHeader, proof); r.Status != http.StatusForbidden {
		t.Fatalf("the spent proof again: %d %s", r.Status, r.Raw)
	}
	if r := a.do(http.MethodGet, path, a.token(1, false), ""); r.Status != http.StatusOK {
		t.Fatalf("the joiner's place: %d %s", r.Status, r.Raw)
	}
}

// TestQueueStatsTellAnAdminTheRoom: GET …/queue/stats, every answer checked against the
// OpenAPI document: refused to a shopper, to no token, for a voucher sold otherwise
// and for no voucher; then the figures of the room before the start (joined, no
// seed), once shuffled and admitting (the window's passes, the published seed), and
// after a grab used a pass.
func TestQueueStatsTellAnAdminTheRoom(t *testing.T) {
	a := newAPI(t)
	now := time.Now().UTC()
	// The queue open now, the start an hour away until the early joiners are in.
	body, _ := json.Marshal(map[string]any{
		"title": "Room", "stock": 5, "per_user_limit": 1, "begins_at": now.Add(time.Hour), "ends_at": now.Add(2 * time.Hour),
		"admission": "waiting_room", "queue_window": 2, "queue_opens_at": now,
	})
	r := a.do(http.MethodPost, "/api/v1/vouchers", a.admin, string(body))
	if r.Status != http.StatusCreated {
		t.Fatalf("create: %d %s", r.Status, r.Raw)
	}
	room := r.Body["id"].(string)
	path := "/api/v1/vouchers/" + room + "/queue/stats"
	plain := a.createVoucher(5, 1)
	for _, c := range []struct {
		name, path, token string
		status            int
		code              string
	}{
		{"a shopper", path, a.token(5, false), http.StatusForbidden, "forbidden"},
		{"no token", path, "", http.StatusUnauthorized, "unauthorized"},
		{"a first-come voucher", "/api/v1/vouchers/" + plain + "/queue/stats", a.admin, http.StatusConflict, "no_waiting_room"},
		{"no voucher", "/api/v1/vouchers/999999/queue/stats", a.admin, http.StatusNotFound, "not_found"},
		{"a bad id", "/api/v1/vouchers/x/queue/stats", a.admin, http.StatusBadRequest, "invalid_request"},
	} {
		if r := a.do(http.MethodGet, c.path, c.token, ""); r.Status != c.status || r.code() != c.code {
			t.Errorf("%s: %d %s, want %d %s", c.name, r.Status, r.Raw, c.status, c.code)
		}
	}
	stats := func() map[string]any {
		t.Helper()
		r := a.do(http.MethodGet, path, a.admin, "")
		if r.Status != http.StatusOK || r.Body["window"] != float64(2) || r.Body["commitment"] == "" {
			t.Fatalf("the room's stats: %d %s", r.Status, r.Raw)
		}
		return r.Body
	}
	// figures lays out the counts of an answer in one line.
	figures := func(s map[string]any) string {
		return fmt.Sprintf("joined %v (%v early, %v late), admitted %v, waiting %v, passes %v",
			s["joined"], s["joined_early"], s["joined_late"], s["admitted"], s["waiting"], s["passes_outstanding"])
	}
	if s := stats(); figures(s) != "joined 0 (0 early, 0 late), admitted 0, waiting 0, passes 0" || s["seed"] != nil {
		t.Fatalf("the stats of an empty room: %v", s)
	}
	for _, u := range []domain.UserID{1, 2, 3} {
		if r := a.do(http.MethodPost, "/api/v1/vouchers/"+room+"/queue", a.token(u, false), ""); r.Status != http.StatusAccepted {
			t.Fatalf("join of %d: %d %s", u, r.Status, r.Raw)
		}
	}
	if s := stats(); figures(s) != "joined 3 (3 early, 0 late), admitted 0, waiting 3, passes 0" ||
		s["seed"] != nil || s["entrants"] != nil || s["entrants_digest"] != nil {
		t.Fatalf("the stats before the start: %v; want 3 joined early, no seed", s)
	}
	start, _ := json.Marshal(map[string]any{"begins_at": time.Now().Add(time.Second)})
	if r := a.do(http.MethodPatch, "/api/v1/vouchers/"+room, a.admin, string(start)); r.Status != http.StatusOK {
		t.Fatalf("move the start: %d %s", r.Status, r.Raw)
	}
	testenv.Eventually(t, time.Minute, "the room shuffled and admitting", func() (bool, string) {
		if err := a.rooms.Handle(context.Background()); err != nil {
			return false, err.Error()
		}
		s := stats()
		return s["passes_outstanding"] == 2.0, figures(s)
	})
	for _, u := range []domain.UserID{4, 5} {
		if r := a.do(http.MethodPost, "/api/v1/vouchers/"+room+"/queue", a.token(u, false), ""); r.Status != http.StatusAccepted {
			t.Fatalf("late join of %d: %d %s", u, r.Status, r.Raw)
		}
	}
	s := stats()
	if want := "joined 5 (3 early, 2 late), admitted 2, waiting 3, passes 2"; figures(s) != want {
		t.Fatalf("the stats once admitting: %s; want %s", figures(s), want)
	}
	// The seed an admin reads is the one published to the queue, with its entrants.
	var admitted domain.UserID
	var pass string
	for _, u := range []domain.UserID{1, 2, 3} {
		place := a.do(http.MethodGet, "/api/v1/vouchers/"+room+"/queue", a.token(u, false), "")
		if place.Body["seed"] != s["seed"] || place.Body["entrants"] != s["entrants"] || place.Body["entrants_digest"] != s["entrants_digest"] {
			t.Fatalf("the admin's shuffle %v, the queue's %s", s, place.Raw)
		}
		if p, ok := place.Body["pass"].(string); ok {
			admitted, pass = u, p
		}
	}
	if s["seed"] == nil || s["entrants"] != 3.0 || pass == "" {
		t.Fatalf("the published shuffle: %v; a pass %q", s, pass)
	}
	id, _ := domain.ParseVoucherID(room)
	if r := a.grabWith(id, a.token(admitted, false), httpapi.PassHeader, pass); r.Status != http.StatusAccepted {
		t.Fatalf("the grab with its pass: %d %s", r.Status, r.Raw)
	}
	if want := "joined 5 (3 early, 2 late), admitted 2, waiting 3, passes 1"; figures(stats()) != want {
		t.Fatalf("the stats after a grab used a pass: %s; want %s", figures(stats()), want)
	}
}
