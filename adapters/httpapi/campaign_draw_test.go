package httpapi_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/seckill/seckill/adapters/testenv"
	"github.com/seckill/seckill/domain"
)

// TestCampaignDraw sells a drop of two vouchers of 2 units under a cap of 3 by one
// draw: entries name a voucher (the latest choice stands); the refusals of an entry
// without a voucher of the campaign, of the voucher's own draw and of a grab before
// the start; the draw's record before it (entrants counted, no seed) and after it,
// checked as anyone would: the seed against the commitment, the entrants' lines
// against the digest and each user's latest choice, the winners against the walk of
// the shuffle recomputed here. An entry after the draw is refused. Each answer is
// held to the OpenAPI document too (a.do).
func TestCampaignDraw(t *testing.T) {
	t.Parallel()
	a := newCampaignAPI(t)
	other := a.createCampaign(1, "")
	elsewhere := a.createVariant(other, "Cap", 1)
	// The entries below close at begins_at: a few requests, well within 8 s.
	now := time.Now().UTC()
	body, _ := json.Marshal(map[string]any{"title": "Sneakers", "per_user_limit": 1, "cap": 3,
		"begins_at": now.Add(8 * time.Second), "ends_at": now.Add(time.Hour),
		"admission": "draw", "entries_open_at": now.Add(-time.Minute)})
	created := a.do(http.MethodPost, "/api/v1/campaigns", a.admin, string(body))
	if created.Status != http.StatusCreated || created.Body["admission"] != "draw" ||
		created.Body["entries_open_at"] == nil || created.Body["commitment"] == nil {
		t.Fatalf("create the drop: %d %s", created.Status, created.Raw)
	}
	c, commitment := created.Body["id"].(string), created.Body["commitment"].(string)
	v1, v2 := a.createVariant(c, "Size 41", 2), a.createVariant(c, "Size 42", 2)
	if r := a.do(http.MethodGet, "/api/v1/vouchers/"+v1, "", ""); r.Body["admission"] != "draw" || r.Body["per_user_limit"] != 1.0 {
		t.Fatalf("the drop's voucher: %s", r.Raw)
	}
	entries := "/api/v1/campaigns/" + c + "/entries"

	// Users 10 to 15 enter; 11 and 15 change their minds, and their latest choice stands.
	chose := map[domain.UserID]string{}
	for i, e := range []struct {
		user     domain.UserID
		voucher  string
		entrants float64
	}{
		{10, v1, 1}, {11, v2, 2}, {12, v1, 3}, {13, v2, 4}, {14, v2, 5}, {15, v1, 6}, {11, v1, 6}, {15, v2, 6},
	} {
		r := a.do(http.MethodPost, entries, a.token(e.user, false), fmt.Sprintf(`{"voucher_id":%q}`, e.voucher))
		if r.Status != http.StatusAccepted || r.Body["entrants"] != e.entrants {
			t.Fatalf("entry %d (user %d, %s): %d %s; want 202 with %v entrants", i, e.user, e.voucher, r.Status, r.Raw, e.entrants)
		}
		chose[e.user] = e.voucher
	}

	user := a.token(20, false)
	for _, tc := range []struct {
		method, path, body string
		status             int
		code               string
	}{
		{http.MethodPost, entries, `{}`, http.StatusBadRequest, "invalid_request"},
		{http.MethodPost, entries, `{"voucher_id":"size-41"}`, http.StatusBadRequest, "invalid_request"},
		{http.MethodPost, entries, `{"voucher_id":"1"}`, http.StatusBadRequest, "invalid_request"},
		{http.MethodPost, entries, fmt.Sprintf(`{"voucher_id":%q}`, elsewhere), http.StatusBadRequest, "invalid_request"},
		{http.MethodPost, "/api/v1/campaigns/" + other + "/entries", fmt.Sprintf(`{"voucher_id":%q}`, elsewhere),
			http.StatusConflict, "not_a_draw"},
		{http.MethodPost, "/api/v1/campaigns/999999/entries", fmt.Sprintf(`{"voucher_id":"%s"}`, domain.CampaignID(999999).Variant(1)),
			http.StatusNotFound, "not_found"},
		{http.MethodPost, "/api/v1/vouchers/" + v1 + "/entries", "", http.StatusConflict, "not_a_draw"},
		{http.MethodGet, "/api/v1/vouchers/" + v1 + "/draw", "", http.StatusConflict, "not_a_draw"},
		{http.MethodPost, "/api/v1/vouchers/" + v1 + "/grab", "", http.StatusConflict, "not_started"},
		{http.MethodGet, "/api/v1/campaigns/" + c + "/draw/entrants", "", http.StatusNotFound, "not_found"},
	} {
		if r := a.do(tc.method, tc.path, user, tc.body); r.Status != tc.status || r.code() != tc.code {
			t.Fatalf("%s %s %s: %d %s; want %d %s", tc.method, tc.path, tc.body, r.Status, r.Raw, tc.status, tc.code)
		}
	}
	if r := a.do(http.MethodGet, "/api/v1/campaigns/"+c+"/draw", "", ""); r.Status != http.StatusOK ||
		r.Body["commitment"] != commitment || r.Body["seed"] != nil || r.Body["entrants_digest"] != nil ||
		r.Body["drawn_at"] != nil || r.Body["entrants"] != 6.0 || len(r.Body["winners"].([]any)) != 0 {
		t.Fatalf("the draw before it runs: %d %s", r.Status, r.Raw)
	}

	a.stepDraws()
	d := a.waitForDrawOf(c)
	seed, err := hex.DecodeString(d["seed"].(string))
	if sum := sha256.Sum256(seed); err != nil || len(seed) != domain.SeedSize || hex.EncodeToString(sum[:]) != commitment {
		t.Fatalf("the seed %v does not hash to the commitment %s (%v)", d["seed"], commitment, err)
	}
	if d["commitment"] != commitment || d["entrants"] != 6.0 || d["drawn_at"] == nil {
		t.Fatalf("the draw: %v", d)
	}
	lines := a.entrantsOf(c)
	if sum := sha256.Sum256([]byte(lines)); hex.EncodeToString(sum[:]) != d["entrants_digest"] {
		t.Fatalf("the entrants' SHA-256 is %x, the draw publishes %v", sum, d["entrants_digest"])
	}
	var want strings.Builder
	users := slices.Sorted(maps.Keys(chose))
	for _, u := range users {
		fmt.Fprintf(&want, "%d,%s\n", u, chose[u])
	}
	if lines != want.String() {
		t.Fatalf("the entrants published:\n%s\nthe entries' latest choices:\n%s", lines, want.String())
	}

	// Anyone's check: walking the shuffle by the published seed, each entrant wins its
	// choice while that voucher and the cap have units.
	var s domain.Seed
	copy(s[:], seed)
	units, capLeft := map[string]int{v1: 2, v2: 2}, 3
	var winners []any
	for _, u := range domain.Shuffle(s, users) {
		if capLeft > 0 && units[chose[u]] > 0 {
			units[chose[u]]--
			capLeft--
			winners = append(winners, u.String())
		}
	}
	if got := d["winners"].([]any); !slices.Equal(got, winners) {
		t.Fatalf("winners %v; the walk of the shuffle gives %v", got, winners)
	}

	if r := a.do(http.MethodPost, entries, user, fmt.Sprintf(`{"voucher_id":%q}`, v1)); r.Status != http.StatusConflict ||
		r.code() != "entries_closed" {
		t.Fatalf("an entry after the draw: %d %s", r.Status, r.Raw)
	}
}

// stepDraws runs the draws' step every 100 ms, as a worker does, until the test ends.
func (a *api) stepDraws() {
	a.every(func() { _, _ = a.draws.Handle(context.Background()) })
}

// waitForDrawOf waits, generously, until campaign id's draw has run (the draws
// stepped meanwhile, stepDraws) and returns its record.
func (a *api) waitForDrawOf(id string) map[string]any {
	a.t.Helper()
	var d map[string]any
	testenv.Eventually(a.t, 3*testenv.Patience, "the drop's draw has run", func() (bool, string) {
		r := a.do(http.MethodGet, "/api/v1/campaigns/"+id+"/draw", "", "")
		d = r.Body
		return r.Status == http.StatusOK && d["seed"] != nil, r.Raw
	})
	return d
}

// entrantsOf reads campaign id's drawn entrants (text, held to the OpenAPI document).
func (a *api) entrantsOf(id string) string {
	a.t.Helper()
	path := "/api/v1/campaigns/" + id + "/draw/entrants"
	res, err := http.Get(a.url + path)
	if err != nil {
		a.t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	checkResponse(a.t, http.MethodGet, path, res.StatusCode, res.Header, raw)
	if res.StatusCode != http.StatusOK || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/plain") {
		a.t.Fatalf("GET %s: %d %s %q", path, res.StatusCode, res.Header.Get("Content-Type"), raw)
	}
	return string(raw)
}
