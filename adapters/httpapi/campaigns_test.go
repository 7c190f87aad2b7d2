package httpapi_test

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/seckill/seckill/domain"
)

// newCampaignAPI is the API as serve wires it on the lua stock strategy (newAPI: the
// Redis stock holds a campaign's terms and judges its vouchers' grabs, the database its
// records), its public reads cacheable for a second.
func newCampaignAPI(t testing.TB) *api {
	t.Helper()
	return newAPI(t, func(s *setup) { s.http.PublicMaxAge = 1 })
}

// createCampaign creates a campaign on sale from a minute ago for an hour, with the
// JSON members of extra (`"cap":3`), and returns its id.
func (a *api) createCampaign(limit int, extra string) string {
	a.t.Helper()
	now := time.Now().UTC()
	body := fmt.Sprintf(`{"title":"Sneakers","begins_at":%q,"ends_at":%q,"per_user_limit":%d%s}`,
		now.Add(-time.Minute).Format(time.RFC3339Nano), now.Add(time.Hour).Format(time.RFC3339Nano), limit, extra)
	r := a.do(http.MethodPost, "/api/v1/campaigns", a.admin, body)
	if r.Status != http.StatusCreated {
		a.t.Fatalf("create campaign: %d %s", r.Status, r.Raw)
	}
	return r.Body["id"].(string)
}

// createVariant creates a voucher of stock units in campaign id and returns its id.
func (a *api) createVariant(campaign, title string, stock int) string {
	a.t.Helper()
	r := a.do(http.MethodPost, "/api/v1/vouchers", a.admin, fmt.Sprintf(`{"title":%q,"stock":%d,"campaign_id":%q}`, title, stock, campaign))
	if r.Status != http.StatusCreated || r.Body["campaign_id"] != campaign {
		a.t.Fatalf("create voucher %s in campaign %s: %d %s", title, campaign, r.Status, r.Raw)
	}
	return r.Body["id"].(string)
}

// errorOf returns the error object of r.
func errorOf(r response) map[string]any {
	e, _ := r.Body["error"].(map[string]any)
	return e
}

// TestCampaignDropInSizes is the worked example of docs/api.md ("Campaigns"): a drop
// in three sizes, a cap of 4 across them and 2 units a user. Each answer is held to
// the OpenAPI document too (a.do).
func TestCampaignDropInSizes(t *testing.T) {
	t.Parallel()
	a := newCampaignAPI(t)
	now := time.Now().UTC()
	created := a.do(http.MethodPost, "/api/v1/campaigns", a.admin, fmt.Sprintf(
		`{"title":"Sneakers drop","begins_at":%q,"ends_at":%q,"per_user_limit":2,"cap":4}`,
		now.Add(-time.Minute).Format(time.RFC3339), now.Add(time.Hour).Format(time.RFC3339)))
	id, _ := created.Body["id"].(string)
	if created.Status != http.StatusCreated || created.Header.Get("Location") != "/api/v1/campaigns/"+id {
		t.Fatalf("create: %d %s, Location %q", created.Status, created.Raw, created.Header.Get("Location"))
	}
	for k, want := range map[string]any{"cap": 4.0, "per_user_limit": 2.0, "remaining": 0.0, "admission": "first_come",
		"challenge": "none", "access": "open"} {
		if created.Body[k] != want {
			t.Errorf("created %s = %v, want %v", k, created.Body[k], want)
		}
	}
	if vs, ok := created.Body["vouchers"].([]any); !ok || len(vs) != 0 {
		t.Fatalf("created vouchers = %v, want []", created.Body["vouchers"])
	}

	s, m, l := a.createVariant(id, "Sneakers, size S", 1), a.createVariant(id, "Sneakers, size M", 3), a.createVariant(id, "Sneakers, size L", 3)
	v := a.do(http.MethodGet, "/api/v1/vouchers/"+m, "", "")
	if v.Body["begins_at"] != created.Body["begins_at"] || v.Body["ends_at"] != created.Body["ends_at"] || v.Body["per_user_limit"] != 2.0 {
		t.Fatalf("voucher M = %s: want the campaign's window, and its limit", v.Raw)
	}
	c := a.do(http.MethodGet, "/api/v1/campaigns/"+id, "", "")
	if got := fmt.Sprint(c.Body["vouchers"]); got != fmt.Sprint([]any{s, m, l}) || c.Body["remaining"] != 4.0 || c.Body["state"] != "live" {
		t.Fatalf("campaign = %s: want vouchers %v, 4 remaining (the cap), live", c.Raw, []string{s, m, l})
	}

	grab := func(user int, voucher, body string) response {
		return a.do(http.MethodPost, "/api/v1/vouchers/"+voucher+"/grab", a.token(domain.UserID(user), false), body)
	}
	s1, m1 := grab(11, s, ""), grab(11, m, "")
	if s1.Status != http.StatusAccepted || m1.Status != http.StatusAccepted {
		t.Fatalf("user 11's S and M: %d %s, %d %s", s1.Status, s1.Raw, m1.Status, m1.Raw)
	}
	over := grab(11, l, "")
	e := errorOf(over)
	want := []any{s1.Body["order_id"], m1.Body["order_id"]}
	if over.Status != http.StatusConflict || over.code() != "already_purchased" || e["order_id"] != s1.Body["order_id"] ||
		fmt.Sprint(e["order_ids"]) != fmt.Sprint(want) {
		t.Fatalf("user 11's third unit: %d %s, want 409 already_purchased with order_ids %v", over.Status, over.Raw, want)
	}
	if r := grab(12, s, ""); r.Status != http.StatusConflict || r.code() != "sold_out" {
		t.Fatalf("S, none left: %d %s, want 409 sold_out", r.Status, r.Raw)
	}
	if r := grab(12, m, `{"quantity":2}`); r.Status != http.StatusAccepted {
		t.Fatalf("user 12's two M: %d %s", r.Status, r.Raw)
	}
	if r := grab(13, l, ""); r.Status != http.StatusConflict || r.code() != "campaign_sold_out" {
		t.Fatalf("L with units left, the cap taken: %d %s, want 409 campaign_sold_out", r.Status, r.Raw)
	}

	if c := a.do(http.MethodGet, "/api/v1/campaigns/"+id, "", ""); c.Body["remaining"] != 0.0 || c.Body["state"] != "sold_out" {
		t.Fatalf("campaign at its cap: %s, want 0 remaining, sold_out", c.Raw)
	}
	st := a.do(http.MethodGet, "/api/v1/campaigns/"+id+"/stats", a.admin, "")
	n := func(k string) float64 { f, _ := st.Body[k].(float64); return f }
	if st.Status != http.StatusOK || n("cap") != 4 || n("remaining") != 0 || n("queued") != 4 || n("stock") != 7 ||
		n("cap") != n("remaining")+n("queued")+n("awaiting_payment")+n("paid") {
		t.Fatalf("stats: %d %s, want cap 4 = 0 remaining + 4 queued", st.Status, st.Raw)
	}
	if vs, _ := st.Body["vouchers"].([]any); len(vs) != 3 || vs[0].(map[string]any)["voucher_id"] != s {
		t.Fatalf("stats' vouchers: %v, want S, M and L's", st.Body["vouchers"])
	}
	audit := a.do(http.MethodGet, "/api/v1/audit", a.admin, "")
	entries, _ := audit.Body["entries"].([]any)
	if len(entries) != 4 {
		t.Fatalf("audit: %s, want the campaign's creation and its three vouchers'", audit.Raw)
	}
	first := entries[len(entries)-1].(map[string]any)
	if first["action"] != "campaign.create" || first["campaign_id"] != id || first["voucher_id"] != nil {
		t.Fatalf("the campaign's entry: %v", first)
	}
	if last := entries[0].(map[string]any); last["action"] != "voucher.create" || last["voucher_id"] != l || last["campaign_id"] != id {
		t.Fatalf("voucher L's entry: %v", last)
	}
}

// TestEditCampaign: a change answers the campaign as it left it, with its audit entry;
// a cap below the units taken is refused; a new end reaches the campaign's vouchers;
// under an Idempotency-Key a retry is answered the first answer.
func TestEditCampaign(t *testing.T) {
	t.Parallel()
	a := newCampaignAPI(t)
	id := a.createCampaign(1, `,"cap":2`)
	v := a.createVariant(id, "A", 5)
	for _, user := range []int{21, 22} {
		if r := a.do(http.MethodPost, "/api/v1/vouchers/"+v+"/grab", a.token(domain.UserID(user), false), ""); r.Status != http.StatusAccepted {
			t.Fatalf("grab: %d %s", r.Status, r.Raw)
		}
	}
	path := "/api/v1/campaigns/" + id
	raised := a.serveFrom(http.MethodPatch, path, a.admin, `{"cap":3,"title":"Sneakers, spring"}`, "192.0.2.1:1", "Idempotency-Key", "raise")
	if raised.Status != http.StatusOK || raised.Body["cap"] != 3.0 || raised.Body["remaining"] != 1.0 || raised.Body["title"] != "Sneakers, spring" {
		t.Fatalf("raise the cap: %d %s, want cap 3 and 1 remaining", raised.Status, raised.Raw)
	}
	again := a.serveFrom(http.MethodPatch, path, a.admin, `{"title":"Sneakers, spring","cap":3}`, "192.0.2.1:1", "Idempotency-Key", "raise")
	if again.Status != http.StatusOK || again.Raw != raised.Raw || again.Header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("retried: %d %s (replayed %q), want the first answer %s", again.Status, again.Raw, again.Header.Get("Idempotent-Replayed"), raised.Raw)
	}
	if r := a.do(http.MethodPatch, path, a.admin, `{"cap":1}`); r.Status != http.StatusConflict || r.code() != "not_enough_units" {
		t.Fatalf("a cap below the 2 units taken: %d %s, want 409 not_enough_units", r.Status, r.Raw)
	}
	end := time.Now().UTC().Add(-time.Second).Truncate(time.Millisecond)
	ended := a.do(http.MethodPatch, path, a.admin, fmt.Sprintf(`{"ends_at":%q}`, end.Format(time.RFC3339Nano)))
	if ended.Status != http.StatusOK || ended.Body["state"] != "ended" {
		t.Fatalf("end it: %d %s, want ended", ended.Status, ended.Raw)
	}
	if r := a.do(http.MethodGet, "/api/v1/vouchers/"+v, "", ""); r.Body["ends_at"] != ended.Body["ends_at"] || r.Body["state"] != "ended" {
		t.Fatalf("its voucher after the end moved: %s, want the campaign's end", r.Raw)
	}
	if r := a.do(http.MethodPost, "/api/v1/vouchers/"+v+"/grab", a.token(23, false), ""); r.Status != http.StatusConflict || r.code() != "ended" {
		t.Fatalf("a grab after the new end: %d %s, want 409 ended", r.Status, r.Raw)
	}
	audit := a.do(http.MethodGet, "/api/v1/audit", a.admin, "")
	var updates int
	for _, e := range audit.Body["entries"].([]any) {
		if e := e.(map[string]any); e["action"] == "campaign.update" && e["campaign_id"] == id {
			updates++
		}
	}
	if updates != 2 {
		t.Fatalf("audit: %s, want two campaign.update entries (the retry and the refusal write none)", audit.Raw)
	}
}

// TestCampaignsArePaged: newest first, a page at a time; a cursor of another list is
// refused.
func TestCampaignsArePaged(t *testing.T) {
	t.Parallel()
	a := newCampaignAPI(t)
	var made []string
	for range 3 {
		made = append(made, a.createCampaign(1, ""))
	}
	slices.Reverse(made)
	var listed []string
	for path := "/api/v1/campaigns?limit=2"; ; {
		r := a.do(http.MethodGet, path, "", "")
		for _, c := range r.Body["campaigns"].([]any) {
			listed = append(listed, c.(map[string]any)["id"].(string))
		}
		next, _ := r.Body["next_cursor"].(string)
		if next == "" {
			break
		}
		path = "/api/v1/campaigns?limit=2&cursor=" + next
	}
	if !slices.Equal(listed, made) {
		t.Fatalf("listed %v, want %v", listed, made)
	}
	a.createVariant(made[0], "a", 1)
	a.createVariant(made[0], "b", 1)
	vouchers := a.do(http.MethodGet, "/api/v1/vouchers?limit=1", "", "")
	if r := a.do(http.MethodGet, "/api/v1/campaigns?cursor="+vouchers.Body["next_cursor"].(string), "", ""); r.Status != http.StatusBadRequest {
		t.Fatalf("the vouchers' cursor: %d %s, want 400", r.Status, r.Raw)
	}
}

// TestCampaignReadsAreCacheable: a campaign and the list carry a short public
// freshness and a validator, and answer 304 to it.
func TestCampaignReadsAreCacheable(t *testing.T) {
	t.Parallel()
	a := newCampaignAPI(t)
	id := a.createCampaign(1, "")
	for _, path := range []string{"/api/v1/campaigns", "/api/v1/campaigns/" + id} {
		first := a.raw(http.MethodGet, path, "", "", "")
		tag := first.Header.Get("ETag")
		if first.StatusCode != http.StatusOK || first.Header.Get("Cache-Control") != "public, max-age=1" || !strings.HasPrefix(tag, `W/"`) {
			t.Fatalf("GET %s: %d, Cache-Control %q, ETag %q", path, first.StatusCode, first.Header.Get("Cache-Control"), tag)
		}
		if again := a.conditional(path, tag); again.StatusCode != http.StatusNotModified || len(again.Body) != 0 {
			t.Fatalf("GET %s If-None-Match %s: %d, %d bytes; want 304 and none", path, tag, again.StatusCode, len(again.Body))
		}
		if head := a.raw(http.MethodHead, path, "", "", ""); head.StatusCode != http.StatusOK || len(head.Body) != 0 {
			t.Fatalf("HEAD %s: %d, %d bytes", path, head.StatusCode, len(head.Body))
		}
	}
	tag := a.raw(http.MethodGet, "/api/v1/campaigns/"+id, "", "", "").Header.Get("ETag")
	a.createVariant(id, "a", 1)
	if r := a.conditional("/api/v1/campaigns/"+id, tag); r.StatusCode != http.StatusOK {
		t.Fatalf("after a voucher joined it: %d, want 200 with a new tag", r.StatusCode)
	}
}

// TestIdempotentCreateCampaign: a create repeated with its Idempotency-Key answers the
// first 201 again, Location included, and stores one campaign.
func TestIdempotentCreateCampaign(t *testing.T) {
	t.Parallel()
	a := newCampaignAPI(t)
	body := `{"title":"once","begins_at":"2026-01-01T00:00:00Z","ends_at":"2099-01-01T00:00:00Z","per_user_limit":1}`
	first := a.serveFrom(http.MethodPost, "/api/v1/campaigns", a.admin, body, "192.0.2.1:1", "Idempotency-Key", "c-1")
	again := a.serveFrom(http.MethodPost, "/api/v1/campaigns", a.admin, body, "192.0.2.1:1", "Idempotency-Key", "c-1")
	if first.Status != http.StatusCreated || again.Raw != first.Raw || again.Header.Get("Idempotent-Replayed") != "true" ||
		again.Header.Get("Location") != first.Header.Get("Location") {
		t.Fatalf("first %d %s, repeat %d %s (Location %q, %q)", first.Status, first.Raw, again.Status, again.Raw,
			first.Header.Get("Location"), again.Header.Get("Location"))
	}
	if list := a.do(http.MethodGet, "/api/v1/campaigns", "", ""); len(list.Body["campaigns"].([]any)) != 1 {
		t.Fatalf("campaigns after a repeated create: %s, want one", list.Raw)
	}
}

// TestCampaignRefusals: what the campaigns' routes, and a voucher's creation in one,
// refuse, and with which answer.
func TestCampaignRefusals(t *testing.T) {
	t.Parallel()
	a := newCampaignAPI(t)
	id := a.createCampaign(2, "")
	v := a.createVariant(id, "S", 1)
	user := a.token(31, false)
	window := `"begins_at":"2026-01-01T00:00:00Z","ends_at":"2099-01-01T00:00:00Z"`
	for _, tc := range []struct {
		name, method, path, token, body string
		status                          int
		code                            string
	}{
		{"create without a token", http.MethodPost, "/api/v1/campaigns", "", `{}`, http.StatusUnauthorized, "unauthorized"},
		{"create as a user", http.MethodPost, "/api/v1/campaigns", user, `{}`, http.StatusForbidden, "forbidden"},
		{"create without a limit", http.MethodPost, "/api/v1/campaigns", a.admin, `{"title":"x",` + window + `}`, http.StatusBadRequest, "invalid_request"},
		{"create with access by code", http.MethodPost, "/api/v1/campaigns", a.admin, `{"title":"x",` + window + `,"per_user_limit":1,"access":"code"}`, http.StatusBadRequest, "invalid_request"},
		{"create a draw that has begun", http.MethodPost, "/api/v1/campaigns", a.admin, `{"title":"x",` + window + `,"per_user_limit":1,"admission":"draw"}`, http.StatusBadRequest, "invalid_request"},
		{"create with a queue window and no room", http.MethodPost, "/api/v1/campaigns", a.admin, `{"title":"x",` + window + `,"per_user_limit":1,"queue_window":5}`, http.StatusBadRequest, "invalid_request"},
		{"create with a room opening after the start", http.MethodPost, "/api/v1/campaigns", a.admin, `{"title":"x",` + window + `,"per_user_limit":1,"admission":"waiting_room","queue_opens_at":"2026-02-01T00:00:00Z"}`, http.StatusBadRequest, "invalid_request"},
		{"join a first-come campaign's queue", http.MethodPost, "/api/v1/campaigns/" + id + "/queue", user, "", http.StatusConflict, "no_waiting_room"},
		{"join an unknown campaign's queue", http.MethodPost, "/api/v1/campaigns/424242/queue", user, "", http.StatusNotFound, "not_found"},
		{"a campaign's room id as a voucher's", http.MethodPost, "/api/v1/vouchers/" + campaignRoomID(t, id) + "/queue", user, "", http.StatusNotFound, "not_found"},
		{"a challenge of a campaign that asks none", http.MethodGet, "/api/v1/campaigns/" + id + "/challenge", user, "", http.StatusNotFound, "not_found"},
		{"create with a difficulty and no challenge", http.MethodPost, "/api/v1/campaigns", a.admin, `{"title":"x",` + window + `,"per_user_limit":1,"pow_difficulty":4}`, http.StatusBadRequest, "invalid_request"},
		{"create with a cap of 0", http.MethodPost, "/api/v1/campaigns", a.admin, `{"title":"x",` + window + `,"per_user_limit":1,"cap":0}`, http.StatusBadRequest, "invalid_request"},
		{"read a bad id", http.MethodGet, "/api/v1/campaigns/x", "", "", http.StatusBadRequest, "invalid_request"},
		{"read an unknown one", http.MethodGet, "/api/v1/campaigns/424242", "", "", http.StatusNotFound, "not_found"},
		{"edit an unknown one", http.MethodPatch, "/api/v1/campaigns/424242", a.admin, `{"cap":5}`, http.StatusNotFound, "not_found"},
		{"edit nothing", http.MethodPatch, "/api/v1/campaigns/" + id, a.admin, `{}`, http.StatusBadRequest, "invalid_request"},
		{"edit as a user", http.MethodPatch, "/api/v1/campaigns/" + id, user, `{"cap":5}`, http.StatusForbidden, "forbidden"},
		{"edit its start", http.MethodPatch, "/api/v1/campaigns/" + id, a.admin, `{"begins_at":"2026-01-01T00:00:00Z"}`, http.StatusBadRequest, "invalid_request"},
		{"stats as a user", http.MethodGet, "/api/v1/campaigns/" + id + "/stats", user, "", http.StatusForbidden, "forbidden"},
		{"stats of an unknown one", http.MethodGet, "/api/v1/campaigns/424242/stats", a.admin, "", http.StatusNotFound, "not_found"},
		{"a voucher in a campaign with a window", http.MethodPost, "/api/v1/vouchers", a.admin, `{"title":"x","stock":1,"campaign_id":"` + id + `",` + window + `}`, http.StatusBadRequest, "invalid_request"},
		{"a voucher in a campaign with a challenge", http.MethodPost, "/api/v1/vouchers", a.admin, `{"title":"x","stock":1,"campaign_id":"` + id + `","challenge":"pow"}`, http.StatusBadRequest, "invalid_request"},
		{"a voucher in an unknown campaign", http.MethodPost, "/api/v1/vouchers", a.admin, `{"title":"x","stock":1,"campaign_id":"424242"}`, http.StatusBadRequest, "invalid_request"},
		{"a voucher in a campaign named by a number", http.MethodPost, "/api/v1/vouchers", a.admin, `{"title":"x","stock":1,"campaign_id":` + id + `}`, http.StatusBadRequest, "invalid_request"},
		{"a voucher whose limit is above its campaign's", http.MethodPost, "/api/v1/vouchers", a.admin, `{"title":"x","stock":5,"per_user_limit":3,"campaign_id":"` + id + `"}`, http.StatusBadRequest, "invalid_request"},
		{"a voucher with no window outside a campaign", http.MethodPost, "/api/v1/vouchers", a.admin, `{"title":"x","stock":1}`, http.StatusBadRequest, "invalid_request"},
	} {
		r := a.do(tc.method, tc.path, tc.token, tc.body)
		if r.Status != tc.status || r.code() != tc.code {
			t.Errorf("%s: %d %s, want %d %s", tc.name, r.Status, r.Raw, tc.status, tc.code)
		}
	}
	if c := a.do(http.MethodGet, "/api/v1/campaigns/"+id, "", ""); fmt.Sprint(c.Body["vouchers"]) != fmt.Sprint([]any{v}) {
		t.Fatalf("after the refusals the campaign holds %v, want only %s", c.Body["vouchers"], v)
	}
}

// campaignRoomID returns the room id of campaign id, in decimal.
func campaignRoomID(t *testing.T, id string) string {
	t.Helper()
	c, err := domain.ParseCampaignID(id)
	if err != nil {
		t.Fatal(err)
	}
	return c.Room().String()
}

// TestCampaignWaitlist: a sold-out voucher of a campaign has a waitlist; a user at the
// campaign's limit is refused a place, naming its orders; a cancelled unit goes to the
// first user on it who is below the limit, passing over one who reached it since.
func TestCampaignWaitlist(t *testing.T) {
	t.Parallel()
	a := newCampaignAPI(t)
	id := a.createCampaign(1, "")
	s, m, l := a.createVariant(id, "S", 1), a.createVariant(id, "M", 1), a.createVariant(id, "L", 1)
	user := func(u int64) string { return a.token(domain.UserID(u), false) }
	held := a.grabOne(s, user(1))
	path := "/api/v1/vouchers/" + s + "/waitlist"
	for i, u := range []int64{2, 3} {
		if r := a.do(http.MethodPost, path, user(u), ""); r.Status != http.StatusAccepted || r.Body["position"] != float64(i+1) {
			t.Fatalf("join of user %d: %d %s", u, r.Status, r.Raw)
		}
	}
	m2 := a.grabOne(m, user(2))
	if r := a.do(http.MethodPost, "/api/v1/vouchers/"+l+"/waitlist", user(2), ""); r.Status != http.StatusConflict ||
		r.code() != "already_purchased" || fmt.Sprint(errorOf(r)["order_ids"]) != fmt.Sprint([]any{m2}) {
		t.Fatalf("join of a user at the campaign's limit: %d %s, want 409 already_purchased naming %s", r.Status, r.Raw, m2)
	}

	a.fulfillAll()
	if r := a.do(http.MethodPost, "/api/v1/orders/"+held+"/cancel", user(1), ""); r.Status != http.StatusOK {
		t.Fatalf("cancel: %d %s", r.Status, r.Raw)
	}
	a.fulfillAll()
	for u, want := range map[int64]int{2: 1, 3: 1} {
		r := a.do(http.MethodGet, "/api/v1/orders", user(u), "")
		if orders, _ := r.Body["orders"].([]any); len(orders) != want {
			t.Fatalf("orders of user %d: %s, want %d", u, r.Raw, want)
		}
	}
	if r := a.do(http.MethodGet, path, user(2), ""); r.Status != http.StatusNotFound {
		t.Fatalf("user 2, at the limit, is still waiting: %d %s", r.Status, r.Raw)
	}
	if got := a.remaining(s); got != 0 {
		t.Fatalf("remaining of S after the hand-off to user 3 = %v, want 0", got)
	}
	if r := a.do(http.MethodPost, "/api/v1/vouchers/"+l+"/grab", user(3), ""); r.Status != http.StatusConflict || r.code() != "already_purchased" {
		t.Fatalf("user 3, handed S, grabs L: %d %s, want 409 already_purchased", r.Status, r.Raw)
	}
}
