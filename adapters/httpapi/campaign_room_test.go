package httpapi_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/seckill/seckill/adapters/httpapi"
	"github.com/seckill/seckill/adapters/testenv"
	"github.com/seckill/seckill/domain"
)

// TestCampaignWaitingRoom: one waiting room for a whole drop, through the API, every
// answer held to the OpenAPI document: the campaign and its vouchers show the room
// (one commitment), a voucher's own queue is refused, the early joiners are shuffled
// at the start and let in within the window, and a pass admits one grab of any of the
// drop's vouchers, once; the shuffle is published for anyone to check.
func TestCampaignWaitingRoom(t *testing.T) {
	t.Parallel()
	a := newCampaignAPI(t)
	now := time.Now().UTC()
	body, _ := json.Marshal(map[string]any{
		"title": "Sneakers", "per_user_limit": 1, "cap": 3, "begins_at": now.Add(5 * time.Second), "ends_at": now.Add(time.Hour),
		"admission": "waiting_room", "queue_window": 2,
	})
	r := a.do(http.MethodPost, "/api/v1/campaigns", a.admin, string(body))
	if r.Status != http.StatusCreated || r.Body["admission"] != "waiting_room" || r.Body["queue_window"] != float64(2) ||
		r.Body["queue_opens_at"] == nil || r.Body["commitment"] == nil {
		t.Fatalf("create: %d %s", r.Status, r.Raw)
	}
	id, commitment := r.Body["id"].(string), r.Body["commitment"].(string)
	sizes := []string{a.createVariant(id, "40", 2), a.createVariant(id, "41", 2)}
	if v := a.do(http.MethodGet, "/api/v1/vouchers/"+sizes[0], "", ""); v.Body["admission"] != "waiting_room" || v.Body["commitment"] != commitment {
		t.Fatalf("a voucher of the drop: %s; want the campaign's room and commitment %s", v.Raw, commitment)
	}
	room := "/api/v1/campaigns/" + id + "/queue"
	if r := a.do(http.MethodPost, "/api/v1/vouchers/"+sizes[0]+"/queue", a.token(1, false), ""); r.Status != http.StatusConflict || r.code() != "no_waiting_room" {
		t.Fatalf("join a voucher's own queue in a campaign's room: %d %s", r.Status, r.Raw)
	}
	joiners := []domain.UserID{1, 2, 3}
	for _, u := range append(joiners, 1) {
		r := a.do(http.MethodPost, room, a.token(u, false), "")
		if r.Status != http.StatusAccepted || r.Body["position"] != nil || r.Body["commitment"] != commitment {
			t.Fatalf("join of %d: %d %s", u, r.Status, r.Raw)
		}
	}
	if status, body := a.entrantsAt(room + "/entrants"); status != http.StatusNotFound {
		t.Fatalf("the entrants before the shuffle: %d %s", status, body)
	}
	testenv.Eventually(t, time.Minute, "the drop's room shuffled", func() (bool, string) {
		if err := a.rooms.Handle(context.Background()); err != nil {
			return false, err.Error()
		}
		r := a.do(http.MethodGet, room, a.token(1, false), "")
		return r.Status == http.StatusOK && r.Body["position"] != nil, fmt.Sprintf("%d %s", r.Status, r.Raw)
	})
	passes := map[domain.UserID]string{}
	for _, u := range joiners {
		r := a.do(http.MethodGet, room, a.token(u, false), "")
		if r.Status != http.StatusOK || r.Body["entrants"] != float64(3) || r.Body["seed"] == nil {
			t.Fatalf("the place of %d: %d %s", u, r.Status, r.Raw)
		}
		if r.Body["admitted"] == true {
			passes[u] = r.Body["pass"].(string)
		}
	}
	if len(passes) != 2 {
		t.Fatalf("%d admitted, want the window: 2", len(passes))
	}
	// The seed and the entrants anyone downloads give the published commitment and
	// digest.
	r = a.do(http.MethodGet, room, a.token(1, false), "")
	seed, _ := hex.DecodeString(r.Body["seed"].(string))
	if sum := sha256.Sum256(seed); hex.EncodeToString(sum[:]) != commitment {
		t.Fatalf("the seed does not hash to the commitment %s", commitment)
	}
	status, entrants := a.entrantsAt(room + "/entrants")
	if sum := sha256.Sum256([]byte(entrants)); status != http.StatusOK || entrants != "1\n2\n3\n" ||
		hex.EncodeToString(sum[:]) != r.Body["entrants_digest"] {
		t.Fatalf("the entrants: %d %q, digest %v", status, entrants, r.Body["entrants_digest"])
	}
	if s := a.do(http.MethodGet, room+"/stats", a.admin, ""); s.Status != http.StatusOK || s.Body["joined"] != float64(3) ||
		s.Body["passes_outstanding"] != float64(2) {
		t.Fatalf("the room's stats: %d %s", s.Status, s.Raw)
	}

	var user, outside domain.UserID
	for u := range passes {
		user = u
	}
	// The place is followed on the room's event stream, as a voucher's is.
	events, res := a.stream(room+"/events", a.token(user, false))
	if events == nil {
		t.Fatalf("the room's stream: %d %s", res.Status, res.Raw)
	}
	if place := events.decode(events.next(), "queue"); place["admitted"] != true || place["pass"] != passes[user] {
		t.Fatalf("the stream's first place: %v; want admitted with its pass", place)
	}
	for _, u := range joiners {
		if passes[u] == "" {
			outside = u
		}
	}
	second, _ := domain.ParseVoucherID(sizes[1])
	first, _ := domain.ParseVoucherID(sizes[0])
	if g := a.grabWith(second, a.token(outside, false)); g.Status != http.StatusForbidden || g.code() != "queue_required" {
		t.Fatalf("a grab with no pass: %d %s", g.Status, g.Raw)
	}
	if g := a.grabWith(second, a.token(user, false), httpapi.PassHeader, passes[user]); g.Status != http.StatusAccepted {
		t.Fatalf("a grab with the drop's pass: %d %s", g.Status, g.Raw)
	}
	if g := a.grabWith(first, a.token(user, false), httpapi.PassHeader, passes[user]); g.Status == http.StatusAccepted {
		t.Fatalf("the pass used again on the other size: %d %s", g.Status, g.Raw)
	}
	if r := a.do(http.MethodGet, room, a.token(user, false), ""); r.Status != http.StatusOK || r.Body["pass"] != nil {
		t.Fatalf("the place once the pass is used: %d %s", r.Status, r.Raw)
	}
	if place := events.decode(events.next(), "queue"); place["admitted"] != true || place["pass"] != nil {
		t.Fatalf("the stream's place once the pass is used: %v", place)
	}
}
