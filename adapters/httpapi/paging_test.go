package httpapi_test

import (
	"net/http"
	"net/url"
	"slices"
	"testing"
	"time"

	"github.com/seckill/seckill/domain"
)

// page lists path (a list with its query) and returns the ids of the items under key,
// and next_cursor ("" when absent, which is asserted to mean absent, not empty).
func (a *api) page(path, token, key, idField string) ([]string, string) {
	a.t.Helper()
	r := a.do(http.MethodGet, path, token, "")
	if r.Status != http.StatusOK {
		a.t.Fatalf("GET %s: %d %s", path, r.Status, r.Raw)
	}
	items, ok := r.Body[key].([]any)
	if !ok {
		a.t.Fatalf("GET %s: no %q array: %s", path, key, r.Raw)
	}
	var ids []string
	for _, it := range items {
		ids = append(ids, it.(map[string]any)[idField].(string))
	}
	next, given := r.Body["next_cursor"]
	if !given {
		return ids, ""
	}
	cursor, _ := next.(string)
	if cursor == "" {
		a.t.Fatalf("GET %s: next_cursor given empty: %s", path, r.Raw)
	}
	return ids, cursor
}

// walk follows next_cursor from path (which has a query already) and returns each page.
func (a *api) walk(path, token, key, idField string) [][]string {
	a.t.Helper()
	var pages [][]string
	cursor := ""
	for len(pages) <= 10 {
		p := path
		if cursor != "" {
			p += "&cursor=" + url.QueryEscape(cursor)
		}
		ids, next := a.page(p, token, key, idField)
		pages = append(pages, ids)
		if next == "" {
			return pages
		}
		cursor = next
	}
	a.t.Fatalf("GET %s: more than 10 pages: %v", path, pages)
	return nil
}

func TestListVouchersPages(t *testing.T) {
	t.Parallel()
	a := newAPI(t)
	now := time.Now().UTC()
	store := func(begins, ends time.Duration) string {
		return a.storeVoucher(domain.Voucher{Title: "v", Stock: 5, PerUserLimit: 1, BeginsAt: now.Add(begins), EndsAt: now.Add(ends)})
	}
	ids := []string{
		a.createVoucher(5, 1),           // live
		store(time.Hour, 2*time.Hour),   // upcoming
		store(-2*time.Hour, -time.Hour), // ended
		a.createVoucher(5, 1),           // live
		store(2*time.Hour, 3*time.Hour), // upcoming
	}
	for _, tc := range []struct {
		query string
		want  [][]string
	}{
		{"?limit=2", [][]string{{ids[4], ids[3]}, {ids[2], ids[1]}, {ids[0]}}},
		{"?limit=5", [][]string{{ids[4], ids[3], ids[2], ids[1], ids[0]}}},
		{"?limit=200", [][]string{{ids[4], ids[3], ids[2], ids[1], ids[0]}}},
		{"?status=live&limit=1", [][]string{{ids[3]}, {ids[0]}}},
		{"?status=upcoming", [][]string{{ids[4], ids[1]}}},
		{"?limit=1&status=ended", [][]string{{ids[2]}}},
	} {
		if got := a.walk("/api/v1/vouchers"+tc.query, "", "vouchers", "id"); !slices.EqualFunc(got, tc.want, slices.Equal) {
			t.Errorf("GET /api/v1/vouchers%s: pages %v, want %v", tc.query, got, tc.want)
		}
	}
	// No parameters: the first 50, no next page here.
	if got, next := a.page("/api/v1/vouchers", "", "vouchers", "id"); len(got) != 5 || next != "" {
		t.Errorf("GET /api/v1/vouchers: %v, next %q", got, next)
	}

	_, live := a.page("/api/v1/vouchers?status=live&limit=1", "", "vouchers", "id")
	alice := a.token(10, false)
	a.do(http.MethodPost, "/api/v1/vouchers/"+ids[0]+"/grab", alice, "")
	a.do(http.MethodPost, "/api/v1/vouchers/"+ids[3]+"/grab", alice, "")
	_, orders := a.page("/api/v1/orders?limit=1", alice, "orders", "order_id")
	if live == "" || orders == "" {
		t.Fatalf("cursors: live %q, orders %q", live, orders)
	}
	for _, query := range []string{
		"limit=0", "limit=201", "limit=-1", "limit=abc", "limit=", "limit=%2B5", "limit=05", "limit=1.5", "limit=1e1",
		"limit=99999999999999999999",
		"cursor=", "cursor=%25%25", "cursor=bm90IGEgY3Vyc29y", "cursor=" + live + "%3D",
		"cursor=" + orders,                              // another list's
		"status=ended&cursor=" + live, "cursor=" + live, // another filter's
		"status=", "status=soon", "status=LIVE", "status=live,ended",
	} {
		r := a.do(http.MethodGet, "/api/v1/vouchers?"+query, "", "")
		if r.Status != http.StatusBadRequest || r.code() != "invalid_request" {
			t.Errorf("GET /api/v1/vouchers?%s: %d %s, want 400 invalid_request", query, r.Status, r.Raw)
		}
	}
}

func TestListOrdersPages(t *testing.T) {
	t.Parallel()
	a := newAPI(t)
	alice, bob := a.token(10, false), a.token(11, false)
	var vouchers, orders []string
	grab := func(token string) string {
		v := a.createVoucher(5, 1)
		r := a.do(http.MethodPost, "/api/v1/vouchers/"+v+"/grab", token, "")
		if r.Status != http.StatusAccepted {
			t.Fatalf("grab: %d %s", r.Status, r.Raw)
		}
		vouchers = append(vouchers, v)
		return r.Body["order_id"].(string)
	}
	for range 4 {
		orders = append(orders, grab(alice))
		time.Sleep(2 * time.Millisecond) // each its own created_at (milliseconds), for a plain order to expect
	}
	grab(bob)
	a.fulfillAll()
	orders = append(orders, grab(alice)) // still queued: listed, first

	want := [][]string{{orders[4], orders[3]}, {orders[2], orders[1]}, {orders[0]}}
	if got := a.walk("/api/v1/orders?limit=2", alice, "orders", "order_id"); !slices.EqualFunc(got, want, slices.Equal) {
		t.Fatalf("pages of 2 = %v, want %v", got, want)
	}
	r := a.do(http.MethodGet, "/api/v1/orders?limit=1", alice, "")
	if os := r.Body["orders"].([]any); len(os) != 1 || os[0].(map[string]any)["status"] != "queued" {
		t.Fatalf("first page: %s", r.Raw)
	}
	if got := a.walk("/api/v1/orders?voucher_id="+vouchers[1]+"&limit=1", alice, "orders", "order_id"); !slices.EqualFunc(got, [][]string{{orders[1]}}, slices.Equal) {
		t.Fatalf("orders of voucher %s: %v", vouchers[1], got)
	}
	if got, next := a.page("/api/v1/orders", alice, "orders", "order_id"); len(got) != 5 || next != "" {
		t.Fatalf("GET /api/v1/orders: %v, next %q", got, next)
	}

	_, cursor := a.page("/api/v1/orders?limit=2", alice, "orders", "order_id")
	_, vcursor := a.page("/api/v1/vouchers?limit=1", "", "vouchers", "id")
	for _, query := range []string{
		"limit=0", "limit=201", "limit=x", "limit=",
		"cursor=", "cursor=abc!", "cursor=" + vcursor,
		"voucher_id=" + vouchers[0] + "&cursor=" + cursor, // another filter's
	} {
		r := a.do(http.MethodGet, "/api/v1/orders?"+query, alice, "")
		if r.Status != http.StatusBadRequest || r.code() != "invalid_request" {
			t.Errorf("GET /api/v1/orders?%s: %d %s, want 400 invalid_request", query, r.Status, r.Raw)
		}
	}
}
