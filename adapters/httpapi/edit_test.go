package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/seckill/seckill/adapters/testenv"
	"github.com/seckill/seckill/domain"
)

// audit returns the audit log's entries as GET /api/v1/audit answers them (the
// query, if any, after the "?"), newest first.
func (a *api) audit(query string) []map[string]any {
	a.t.Helper()
	path := "/api/v1/audit"
	if query != "" {
		path += "?" + query
	}
	r := a.do(http.MethodGet, path, a.admin, "")
	if r.Status != http.StatusOK {
		a.t.Fatalf("GET %s: %d %s", path, r.Status, r.Raw)
	}
	raw, _ := r.Body["entries"].([]any)
	out := make([]map[string]any, len(raw))
	for i, e := range raw {
		out[i], _ = e.(map[string]any)
	}
	return out
}

// voucher returns the voucher as GET /api/v1/vouchers/{id} answers it.
func (a *api) voucher(id string) map[string]any {
	a.t.Helper()
	r := a.do(http.MethodGet, "/api/v1/vouchers/"+id, "", "")
	if r.Status != http.StatusOK {
		a.t.Fatalf("get voucher: %d %s", r.Status, r.Raw)
	}
	return r.Body
}

// compact re-encodes a JSON value with its keys sorted, for comparing.
func compact(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// TestEditVoucherAddsAndRemovesUnits: units added are on sale at once (a sold-out
// voucher sells again: the restock signal clears the sold-out flag), units removed
// leave the sale, and each change is one audit entry naming the admin, the request id
// the admin saw and the values before and after.
func TestEditVoucherAddsAndRemovesUnits(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	a := newAPI(t)
	go func() { _ = a.stock.SubscribeRestocks(ctx, a.grab.Restocked) }()
	id := a.createVoucher(2, 1)
	for u := domain.UserID(1); u <= 2; u++ {
		if r := a.do(http.MethodPost, "/api/v1/vouchers/"+id+"/grab", a.token(u, false), ""); r.Status != http.StatusAccepted {
			t.Fatalf("grab: %d %s", r.Status, r.Raw)
		}
	}
	if r := a.do(http.MethodPost, "/api/v1/vouchers/"+id+"/grab", a.token(3, false), ""); r.code() != "sold_out" {
		t.Fatalf("grab of a sold-out voucher: %d %s", r.Status, r.Raw)
	}

	added := a.serveFrom(http.MethodPatch, "/api/v1/vouchers/"+id, a.admin, `{"add_units":5}`, "192.0.2.1:1", "X-Request-Id", "edit-1")
	if added.Status != http.StatusOK || added.Body["stock"] != 7.0 || added.Body["remaining"] != 5.0 {
		t.Fatalf("add 5 units: %d %s, want 200 with stock 7, remaining 5", added.Status, added.Raw)
	}
	testenv.Eventually(t, testenv.Patience, "a grab reserved after units were added", func() (bool, string) {
		r := a.do(http.MethodPost, "/api/v1/vouchers/"+id+"/grab", a.token(3, false), "")
		if r.Status != http.StatusAccepted && r.code() != "sold_out" {
			t.Fatalf("grab after the edit: %d %s", r.Status, r.Raw)
		}
		return r.Status == http.StatusAccepted, r.Raw
	})

	removed := a.do(http.MethodPatch, "/api/v1/vouchers/"+id, a.admin, `{"remove_units":3}`)
	if removed.Status != http.StatusOK || removed.Body["stock"] != 4.0 || removed.Body["remaining"] != 1.0 {
		t.Fatalf("remove 3 units: %d %s, want 200 with stock 4, remaining 1", removed.Status, removed.Raw)
	}
	if v := a.voucher(id); v["stock"] != 4.0 || v["remaining"] != 1.0 {
		t.Fatalf("voucher after the removal: %v", v)
	}
	if r := a.do(http.MethodPatch, "/api/v1/vouchers/"+id, a.admin, `{"remove_units":2}`); r.Status != http.StatusConflict || r.code() != "not_enough_units" {
		t.Fatalf("remove 2 of 1 remaining: %d %s, want 409 not_enough_units", r.Status, r.Raw)
	}

	entries := a.audit("voucher_id=" + id)
	if len(entries) != 3 {
		t.Fatalf("audit entries of the voucher: %v, want 3", entries)
	}
	update, create := entries[1], entries[2]
	if create["action"] != "voucher.create" || create["actor"] != "1" || create["before"] != nil ||
		compact(create["after"].(map[string]any)["stock"]) != "2" {
		t.Fatalf("create entry: %v", create)
	}
	if update["action"] != "voucher.update" || update["actor"] != "1" || update["request_id"] != "edit-1" ||
		update["voucher_id"] != id || compact(update["before"]) != `{"stock":2}` || compact(update["after"]) != `{"stock":7}` {
		t.Fatalf("add entry: %v", update)
	}
	if e := entries[0]; compact(e["before"]) != `{"stock":7}` || compact(e["after"]) != `{"stock":4}` ||
		e["request_id"] != removed.Header.Get("X-Request-Id") {
		t.Fatalf("remove entry: %v (request %s)", e, removed.Header.Get("X-Request-Id"))
	}
}

// TestEditVoucherMovesTheWindow: a sale ended early answers ended at once, and sells
// again once its end moves later; begins_at moves only while the sale is upcoming.
func TestEditVoucherMovesTheWindow(t *testing.T) {
	t.Parallel()
	a := newAPI(t)
	id := a.createVoucher(10, 1)
	grab := func(u domain.UserID) response {
		return a.do(http.MethodPost, "/api/v1/vouchers/"+id+"/grab", a.token(u, false), "")
	}
	now := time.Now().UTC().Truncate(time.Millisecond)
	if r := a.do(http.MethodPatch, "/api/v1/vouchers/"+id, a.admin, fmt.Sprintf(`{"ends_at":%q}`, now.Format(time.RFC3339Nano))); r.Status != http.StatusOK {
		t.Fatalf("end now: %d %s", r.Status, r.Raw)
	}
	if r := grab(1); r.code() != "ended" {
		t.Fatalf("grab of a sale ended early: %d %s, want 409 ended", r.Status, r.Raw)
	}
	if r := a.do(http.MethodPatch, "/api/v1/vouchers/"+id, a.admin, `{"begins_at":"2099-01-01T00:00:00Z"}`); r.code() != "already_started" {
		t.Fatalf("move the start of a started sale: %d %s, want 409 already_started", r.Status, r.Raw)
	}
	later := now.Add(time.Hour)
	r := a.do(http.MethodPatch, "/api/v1/vouchers/"+id, a.admin, fmt.Sprintf(`{"ends_at":%q,"per_user_limit":2,"title":"Tea"}`, later.Format(time.RFC3339)))
	if r.Status != http.StatusOK || r.Body["title"] != "Tea" || r.Body["per_user_limit"] != 2.0 {
		t.Fatalf("end later: %d %s", r.Status, r.Raw)
	}
	if r := a.do(http.MethodPost, "/api/v1/vouchers/"+id+"/grab", a.token(2, false), `{"quantity":2}`); r.Status != http.StatusAccepted {
		t.Fatalf("grab of 2 after the sale reopened with a limit of 2: %d %s", r.Status, r.Raw)
	}

	upcoming := a.storeVoucher(domain.Voucher{Title: "Soon", Stock: 5, PerUserLimit: 1,
		BeginsAt: now.Add(time.Hour), EndsAt: now.Add(2 * time.Hour)})
	r = a.do(http.MethodPatch, "/api/v1/vouchers/"+upcoming, a.admin, fmt.Sprintf(`{"begins_at":%q}`, now.Add(-time.Minute).Format(time.RFC3339Nano)))
	if r.Status != http.StatusOK {
		t.Fatalf("move the start of an upcoming sale: %d %s", r.Status, r.Raw)
	}
	if r := a.do(http.MethodPost, "/api/v1/vouchers/"+upcoming+"/grab", a.token(3, false), ""); r.Status != http.StatusAccepted {
		t.Fatalf("grab once the start moved to the past: %d %s", r.Status, r.Raw)
	}
}

// TestEditVoucherEndsNow: "ends_at": "now" ends the sale at the service's time, an
// edit as any other (its audit entry), without the caller reading the time first;
// a word other than now is refused naming what ends_at takes.
func TestEditVoucherEndsNow(t *testing.T) {
	t.Parallel()
	a := newAPI(t)
	id := a.createVoucher(10, 1)
	asked := time.Now()
	r := a.do(http.MethodPatch, "/api/v1/vouchers/"+id, a.admin, `{"ends_at":"now"}`)
	if r.Status != http.StatusOK || r.Body["state"] != "ended" {
		t.Fatalf("end now: %d %s, want 200 with the voucher ended", r.Status, r.Raw)
	}
	ends, err := time.Parse(time.RFC3339, r.Body["ends_at"].(string))
	if err != nil || ends.Before(asked.Truncate(time.Millisecond)) || ends.After(time.Now()) {
		t.Fatalf("ends_at %v (%v), want the time of the request", r.Body["ends_at"], err)
	}
	if g := a.do(http.MethodPost, "/api/v1/vouchers/"+id+"/grab", a.token(1, false), ""); g.code() != "ended" {
		t.Fatalf("grab of a sale ended now: %d %s, want 409 ended", g.Status, g.Raw)
	}
	audit := a.do(http.MethodGet, "/api/v1/audit?voucher_id="+id+"&limit=1", a.admin, "")
	entries, _ := audit.Body["entries"].([]any)
	if len(entries) != 1 {
		t.Fatalf("audit: %s", audit.Raw)
	}
	e := entries[0].(map[string]any)
	if after, _ := e["after"].(map[string]any); e["action"] != "voucher.update" || after["ends_at"] != r.Body["ends_at"] {
		t.Fatalf("the end's audit entry = %s, want voucher.update to ends_at %v", audit.Raw, r.Body["ends_at"])
	}
	for _, body := range []string{`{"ends_at":"tomorrow"}`, `{"ends_at":"NOW"}`, `{"ends_at":1}`} {
		if r := a.do(http.MethodPatch, "/api/v1/vouchers/"+id, a.admin, body); r.Status != http.StatusBadRequest || r.code() != "invalid_request" ||
			!strings.Contains(r.Raw, `\"now\"`) {
			t.Errorf("%s: %d %s, want 400 invalid_request naming \"now\"", body, r.Status, r.Raw)
		}
	}
}

// TestEditVoucherRefusesBadEdits: every malformed or impossible edit is the contract's
// 4xx and changes nothing, in the database, in Redis or in the audit log.
func TestEditVoucherRefusesBadEdits(t *testing.T) {
	t.Parallel()
	a := newAPI(t)
	id := a.createVoucher(10, 2)
	if r := a.do(http.MethodPost, "/api/v1/vouchers/"+id+"/grab", a.token(9, false), ""); r.Status != http.StatusAccepted {
		t.Fatalf("grab: %d %s", r.Status, r.Raw)
	}
	before, entries := a.voucher(id), len(a.audit(""))
	user := a.token(5, false)
	for _, tc := range []struct {
		name, path, token, body string
		status                  int
		code                    string
	}{
		{"empty object", id, a.admin, `{}`, 400, "invalid_request"},
		{"no body", id, a.admin, ``, 400, "invalid_request"},
		{"nulls only", id, a.admin, `{"title":null}`, 400, "invalid_request"},
		{"zero units", id, a.admin, `{"add_units":0}`, 400, "invalid_request"},
		{"negative units", id, a.admin, `{"add_units":-5}`, 400, "invalid_request"},
		{"negative removal", id, a.admin, `{"remove_units":-1}`, 400, "invalid_request"},
		{"too many units", id, a.admin, `{"add_units":1000000001}`, 400, "invalid_request"},
		{"stock over the maximum", id, a.admin, `{"add_units":9999999}`, 400, "invalid_request"},
		{"a fraction", id, a.admin, `{"add_units":1.5}`, 400, "invalid_request"},
		{"a string", id, a.admin, `{"add_units":"5"}`, 400, "invalid_request"},
		{"add and remove", id, a.admin, `{"add_units":1,"remove_units":1}`, 400, "invalid_request"},
		{"an unknown key", id, a.admin, `{"stock":20}`, 400, "invalid_request"},
		{"a key in another case", id, a.admin, `{"Add_units":1}`, 400, "invalid_request"},
		{"a repeated key", id, a.admin, `{"add_units":1,"add_units":2}`, 400, "invalid_request"},
		{"trailing data", id, a.admin, `{"add_units":1}{}`, 400, "invalid_request"},
		{"ends before begins", id, a.admin, `{"ends_at":"2000-01-01T00:00:00Z"}`, 400, "invalid_request"},
		{"ends at begins", id, a.admin, `{"ends_at":"` + before["begins_at"].(string) + `"}`, 400, "invalid_request"},
		{"a bad time", id, a.admin, `{"ends_at":"tomorrow"}`, 400, "invalid_request"},
		{"zero limit", id, a.admin, `{"per_user_limit":0}`, 400, "invalid_request"},
		{"limit over the stock", id, a.admin, `{"per_user_limit":11}`, 400, "invalid_request"},
		{"empty title", id, a.admin, `{"title":"  "}`, 400, "invalid_request"},
		{"removal of more than remain", id, a.admin, `{"remove_units":10}`, 409, "not_enough_units"},
		{"removal of every unit", id, a.admin, `{"remove_units":100}`, 409, "not_enough_units"},
		{"begins_at of a started sale", id, a.admin, `{"begins_at":"2099-01-01T00:00:00Z"}`, 409, "already_started"},
		{"a user", id, user, `{"add_units":1}`, 403, "forbidden"},
		{"no token", id, "", `{"add_units":1}`, 401, "unauthorized"},
		{"an unknown voucher", "999999", a.admin, `{"add_units":1}`, 404, "not_found"},
		{"a bad id", "x1", a.admin, `{"add_units":1}`, 400, "invalid_request"},
	} {
		r := a.do(http.MethodPatch, "/api/v1/vouchers/"+tc.path, tc.token, tc.body)
		if r.Status != tc.status || r.code() != tc.code {
			t.Errorf("%s: %d %s, want %d %s", tc.name, r.Status, r.Raw, tc.status, tc.code)
		}
	}
	if after := a.voucher(id); compact(after) != compact(before) {
		t.Fatalf("refused edits changed the voucher:\n%v\nwas\n%v", after, before)
	}
	if got := len(a.audit("")); got != entries {
		t.Fatalf("refused edits left %d audit entries, want %d", got, entries)
	}
}

// TestEditVoucherIsIdempotent: an edit repeated with its Idempotency-Key answers the
// first 200 again and adds the units once, with one audit entry; an edit that changes
// nothing answers the voucher and records nothing.
func TestEditVoucherIsIdempotent(t *testing.T) {
	t.Parallel()
	a := newAPI(t)
	id := a.createVoucher(10, 1)
	edit := func(body, key string) response {
		return a.serveFrom(http.MethodPatch, "/api/v1/vouchers/"+id, a.admin, body, "192.0.2.1:1", "Idempotency-Key", key)
	}
	first := edit(`{"add_units":5}`, "edit-1")
	if first.Status != http.StatusOK || first.Body["stock"] != 15.0 {
		t.Fatalf("edit: %d %s", first.Status, first.Raw)
	}
	again := edit(`{"add_units":5}`, "edit-1")
	if again.Status != http.StatusOK || again.Raw != first.Raw || again.Header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("repeat: %d %q, want the first answer %q replayed", again.Status, again.Raw, first.Raw)
	}
	if r := edit(`{"add_units":6}`, "edit-1"); r.code() != "idempotency_key_mismatch" {
		t.Fatalf("same key, another body: %d %s", r.Status, r.Raw)
	}
	if v := a.voucher(id); v["stock"] != 15.0 || v["remaining"] != 15.0 {
		t.Fatalf("voucher after a repeated edit: %v, want stock and remaining 15", v)
	}
	same := a.do(http.MethodPatch, "/api/v1/vouchers/"+id, a.admin, `{"title":"Coffee"}`)
	if same.Status != http.StatusOK || same.Body["title"] != "Coffee" {
		t.Fatalf("an edit of nothing: %d %s", same.Status, same.Raw)
	}
	var actions []string
	for _, e := range a.audit("voucher_id=" + id) {
		actions = append(actions, e["action"].(string))
	}
	if got := strings.Join(actions, " "); got != "voucher.update voucher.create" {
		t.Fatalf("audit actions: %s, want one update and the create", got)
	}
}

// TestAuditLogPagesAndGuards: the log pages newest first like the other lists,
// ?voucher_id= filters, pause and resume are recorded, and only admins read it.
func TestAuditLogPagesAndGuards(t *testing.T) {
	t.Parallel()
	a := newAPI(t)
	v1, v2 := a.createVoucher(5, 1), a.createVoucher(5, 1)
	for _, p := range []string{"pause", "resume"} {
		if r := a.do(http.MethodPost, "/api/v1/vouchers/"+v1+"/"+p, a.admin, ""); r.Status != http.StatusOK {
			t.Fatalf("%s: %d %s", p, r.Status, r.Raw)
		}
	}
	var seen []string
	cursor := ""
	for pages := 0; ; pages++ {
		q := "limit=2"
		if cursor != "" {
			q += "&cursor=" + cursor
		}
		r := a.do(http.MethodGet, "/api/v1/audit?"+q, a.admin, "")
		if r.Status != http.StatusOK || pages > 5 {
			t.Fatalf("page %d: %d %s", pages, r.Status, r.Raw)
		}
		for _, e := range r.Body["entries"].([]any) {
			m := e.(map[string]any)
			seen = append(seen, m["action"].(string)+" "+m["voucher_id"].(string))
		}
		next, _ := r.Body["next_cursor"].(string)
		if next == "" {
			break
		}
		cursor = next
	}
	want := []string{"voucher.resume " + v1, "voucher.pause " + v1, "voucher.create " + v2, "voucher.create " + v1}
	if fmt.Sprint(seen) != fmt.Sprint(want) {
		t.Fatalf("the log, page by page: %v, want %v", seen, want)
	}
	if got := a.audit("voucher_id=" + v2); len(got) != 1 || got[0]["action"] != "voucher.create" {
		t.Fatalf("voucher %s's entries: %v", v2, got)
	}
	for _, tc := range []struct {
		query, token string
		status       int
	}{
		{"", a.token(5, false), 403},
		{"", "", 401},
		{"voucher_id=x", a.admin, 400},
		{"voucher_id=", a.admin, 400},
		{"limit=0", a.admin, 400},
		{"cursor=bm9wZQ", a.admin, 400},
	} {
		if r := a.do(http.MethodGet, "/api/v1/audit?"+tc.query, tc.token, ""); r.Status != tc.status {
			t.Errorf("GET /api/v1/audit?%s: %d %s, want %d", tc.query, r.Status, r.Raw, tc.status)
		}
	}
}
