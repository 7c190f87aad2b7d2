package httpapi_test

import (
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/seckill/seckill/application"
	"github.com/seckill/seckill/domain"
)

// saleWithOrders sells voucher id to users 10..10+n-1 and persists their orders; the
// first is paid and the second cancelled. It returns the order ids, oldest first.
func (a *api) saleWithOrders(id string, n int) []string {
	a.t.Helper()
	var ids []string
	for u := range n {
		tok := a.token(domain.UserID(10+u), false)
		r := a.do(http.MethodPost, "/api/v1/vouchers/"+id+"/grab", tok, "")
		if r.Status != http.StatusAccepted {
			a.t.Fatalf("grab: %d %s", r.Status, r.Raw)
		}
		ids = append(ids, r.Body["order_id"].(string))
	}
	a.fulfillAll()
	if r := a.do(http.MethodPost, "/api/v1/orders/"+ids[0]+"/pay", a.token(10, false), ""); r.Status != http.StatusOK {
		a.t.Fatalf("pay: %d %s", r.Status, r.Raw)
	}
	if r := a.do(http.MethodPost, "/api/v1/orders/"+ids[1]+"/cancel", a.token(11, false), ""); r.Status != http.StatusOK {
		a.t.Fatalf("cancel: %d %s", r.Status, r.Raw)
	}
	return ids
}

// exported is an answer to an export, its body read whole (or until the error that
// cut it off).
type exported struct {
	status int
	header http.Header
	length int64
	body   string
	err    error
}

// export asks for a voucher's orders as CSV, with query q and accept (text/csv when
// empty).
func (a *api) export(id, q, token, accept string) exported {
	a.t.Helper()
	if accept == "" {
		accept = "text/csv"
	}
	req, err := http.NewRequest(http.MethodGet, a.url+"/api/v1/vouchers/"+id+"/orders"+q, nil)
	if err != nil {
		a.t.Fatal(err)
	}
	req.Header.Set("Accept", accept)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		a.t.Fatalf("export: %v", err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	checkResponse(a.t, http.MethodGet, "/api/v1/vouchers/"+id+"/orders"+q, res.StatusCode, res.Header, body)
	return exported{status: res.StatusCode, header: res.Header, length: res.ContentLength, body: string(body), err: err}
}

// csvRows parses an export and checks its header line.
func csvRows(t *testing.T, body string) [][]string {
	t.Helper()
	rows, err := csv.NewReader(strings.NewReader(body)).ReadAll()
	if err != nil {
		t.Fatalf("not CSV: %v\n%s", err, body)
	}
	if len(rows) == 0 || strings.Join(rows[0], ",") != "order_id,voucher_id,user_id,quantity,status,created_at" {
		t.Fatalf("no header line: %q", body)
	}
	return rows[1:]
}

// An admin lists a voucher's persisted orders oldest first, a page at a time, by
// status; unpaid ones say when they expire; a reservation not yet persisted is not
// listed. Bad input answers the contract's 4xx.
func TestVoucherOrders(t *testing.T) {
	t.Parallel()
	a := newAPI(t)
	id := a.createVoucher(10, 1)
	ids := a.saleWithOrders(id, 5)
	queued := a.do(http.MethodPost, "/api/v1/vouchers/"+id+"/grab", a.token(99, false), "")
	if queued.Status != http.StatusAccepted {
		t.Fatalf("grab: %d %s", queued.Status, queued.Raw)
	}
	path := "/api/v1/vouchers/" + id + "/orders"

	all := a.do(http.MethodGet, path, a.admin, "")
	orders, _ := all.Body["orders"].([]any)
	if all.Status != http.StatusOK || len(orders) != 5 || all.Body["next_cursor"] != nil {
		t.Fatalf("list: %d %s, want the 5 persisted orders on one page", all.Status, all.Raw)
	}
	sorted := slices.Sorted(slices.Values(ids))
	for i, o := range orders {
		o := o.(map[string]any)
		_, expires := o["expires_at"]
		if o["order_id"] != sorted[i] || o["voucher_id"] != id || expires != (o["status"] == "awaiting_payment") {
			t.Fatalf("order %d: %v, want %s, expires_at only while awaiting payment", i, o, sorted[i])
		}
	}

	walk := func(status string, limit int) []string {
		t.Helper()
		var got []string
		q := fmt.Sprintf("?limit=%d", limit)
		if status != "" {
			q += "&status=" + status
		}
		for pages := 0; ; pages++ {
			r := a.do(http.MethodGet, path+q, a.admin, "")
			if r.Status != http.StatusOK || pages > 10 {
				t.Fatalf("page %d of %s: %d %s", pages, q, r.Status, r.Raw)
			}
			for _, o := range r.Body["orders"].([]any) {
				got = append(got, o.(map[string]any)["order_id"].(string))
			}
			next, ok := r.Body["next_cursor"].(string)
			if !ok {
				return got
			}
			q = fmt.Sprintf("?limit=%d&cursor=%s", limit, next)
			if status != "" {
				q += "&status=" + status
			}
		}
	}
	if got := walk("", 2); !slices.Equal(got, sorted) {
		t.Fatalf("pages of 2: %v, want %v", got, sorted)
	}
	if got := walk("paid", 1); !slices.Equal(got, []string{ids[0]}) {
		t.Fatalf("paid: %v, want %v", got, ids[:1])
	}
	if got := walk("cancelled", 1); !slices.Equal(got, []string{ids[1]}) {
		t.Fatalf("cancelled: %v, want %v", got, ids[1:2])
	}
	if got := walk("awaiting_payment", 2); len(got) != 3 {
		t.Fatalf("awaiting payment: %v, want 3", got)
	}

	first := a.do(http.MethodGet, path+"?limit=2", a.admin, "")
	cursor, _ := first.Body["next_cursor"].(string)
	other := a.createVoucher(10, 1)
	for _, tc := range []struct {
		name, path, token string
		status            int
		code              string
	}{
		{"as a user", path, a.token(10, false), 403, "forbidden"},
		{"without a token", path, "", 401, "unauthorized"},
		{"unknown voucher", "/api/v1/vouchers/424242/orders", a.admin, 404, "not_found"},
		{"bad voucher id", "/api/v1/vouchers/x/orders", a.admin, 400, "invalid_request"},
		{"queued status", path + "?status=queued", a.admin, 400, "invalid_request"},
		{"unknown status", path + "?status=shipped", a.admin, 400, "invalid_request"},
		{"empty status", path + "?status=", a.admin, 400, "invalid_request"},
		{"limit 0", path + "?limit=0", a.admin, 400, "invalid_request"},
		{"garbage cursor", path + "?cursor=!!", a.admin, 400, "invalid_request"},
		{"cursor of another status", path + "?status=paid&cursor=" + cursor, a.admin, 400, "invalid_request"},
		{"cursor of another voucher", "/api/v1/vouchers/" + other + "/orders?cursor=" + cursor, a.admin, 400, "invalid_request"},
		{"repeated status", path + "?status=paid&status=failed", a.admin, 400, "invalid_request"},
	} {
		if r := a.do(http.MethodGet, tc.path, tc.token, ""); r.Status != tc.status || r.code() != tc.code {
			t.Errorf("%s: %d %s, want %d %s", tc.name, r.Status, r.Raw, tc.status, tc.code)
		}
	}
}

// With Accept: text/csv an admin gets every matching order as CSV, streamed (no
// Content-Length), the same orders the JSON list has, in its order; across the export's
// pages each order once. Bad input is refused before anything is streamed.
func TestVoucherOrdersExport(t *testing.T) {
	t.Parallel()
	a := newAPI(t)
	id := a.createVoucher(10, 1)
	ids := a.saleWithOrders(id, 4)
	ex := a.export(id, "", a.admin, "")
	if ex.err != nil || ex.status != http.StatusOK || ex.header.Get("Content-Type") != "text/csv; charset=utf-8" ||
		ex.length != -1 || !strings.Contains(ex.header.Get("Content-Disposition"), "voucher-"+id+"-orders.csv") {
		t.Fatalf("export: %d %v %d (%v)\n%s", ex.status, ex.header, ex.length, ex.err, ex.body)
	}
	rows := csvRows(t, ex.body)
	list := a.do(http.MethodGet, "/api/v1/vouchers/"+id+"/orders", a.admin, "")
	orders := list.Body["orders"].([]any)
	if len(rows) != len(ids) || len(orders) != len(ids) {
		t.Fatalf("%d rows, %d listed, want %d:\n%s", len(rows), len(orders), len(ids), ex.body)
	}
	for i, o := range orders {
		o := o.(map[string]any)
		want := []string{o["order_id"].(string), id, o["user_id"].(string), "1", o["status"].(string), o["created_at"].(string)}
		if !slices.Equal(rows[i], want) {
			t.Fatalf("row %d = %v, want %v (as listed)", i, rows[i], want)
		}
	}
	paid := a.export(id, "?status=paid", a.admin, "")
	if rows := csvRows(t, paid.body); len(rows) != 1 || rows[0][0] != ids[0] || rows[0][4] != "paid" {
		t.Fatalf("paid only: %q", paid.body)
	}

	// CSV is what is asked for when it is preferred, or as good as JSON; not otherwise.
	for accept, csv := range map[string]bool{
		"text/csv;q=0.9, application/json;q=0.8": true,
		"application/json, text/csv":             true,
		"application/json, text/csv;q=0.5":       false,
		"text/csv;q=0":                           false,
		"*/*":                                    false,
	} {
		ex := a.export(id, "", a.admin, accept)
		if got := strings.HasPrefix(ex.header.Get("Content-Type"), "text/csv"); got != csv {
			t.Errorf("Accept: %s answered %s, want CSV %v", accept, ex.header.Get("Content-Type"), csv)
		}
	}

	for _, tc := range []struct {
		name, id, q, token string
		status             int
	}{
		{"as a user", id, "", a.token(10, false), http.StatusForbidden},
		{"without a token", id, "", "", http.StatusUnauthorized},
		{"unknown voucher", "424242", "", a.admin, http.StatusNotFound},
		{"bad status", id, "?status=queued", a.admin, http.StatusBadRequest},
		{"with a limit", id, "?limit=10", a.admin, http.StatusBadRequest},
		{"with a cursor", id, "?cursor=abc", a.admin, http.StatusBadRequest},
	} {
		ex := a.export(tc.id, tc.q, tc.token, "")
		if ex.status != tc.status || !strings.HasPrefix(ex.header.Get("Content-Type"), "application/json") ||
			!strings.Contains(ex.body, `"code"`) {
			t.Errorf("%s: %d %s %s, want %d with a JSON error", tc.name, ex.status, ex.header.Get("Content-Type"), ex.body, tc.status)
		}
	}
}

// An export larger than a page streams every order once, oldest first — and reads
// the database only: with Redis gone (its client closed) it is whole all the same.
func TestVoucherOrdersExportManyPagesWithoutRedis(t *testing.T) {
	t.Parallel()
	a := newAPI(t)
	now := time.Now()
	const n = 2*application.ExportPage + 100 // three pages
	v := domain.Voucher{Title: "big", Stock: n, PerUserLimit: 1, BeginsAt: now.Add(-2 * time.Hour), EndsAt: now.Add(-time.Hour)}
	id := a.storeVoucher(v)
	vid, _ := domain.ParseVoucherID(id)
	os := make([]domain.Order, n)
	for i := range os {
		os[i] = domain.Order{ID: domain.OrderID(fmt.Sprintf("01KB%022d", n-i)), VoucherID: vid, UserID: domain.UserID(i + 1),
			Quantity: 1, Status: domain.StatusPaid, CreatedAt: now.Add(-90 * time.Minute).UTC().Truncate(time.Millisecond)}
	}
	for from := 0; from < n; from += 5000 { // a statement each
		if err := a.orders.Import(context.Background(), os[from:min(from+5000, n)]); err != nil {
			t.Fatal(err)
		}
	}
	deleteKeys(a.redis, a.stock.Keys().Prefix)
	if err := a.redis.Close(); err != nil {
		t.Fatal(err)
	}
	if r := a.do(http.MethodGet, "/api/v1/vouchers/"+id, "", ""); r.Status < 500 {
		t.Fatalf("GET the voucher with Redis gone: %d %s, want a failure (Redis is needed there)", r.Status, r.Raw)
	}
	ex := a.export(id, "", a.admin, "")
	if ex.err != nil || ex.status != http.StatusOK {
		t.Fatalf("export with Redis gone: %d %v", ex.status, ex.err)
	}
	rows := csvRows(t, ex.body)
	if len(rows) != n {
		t.Fatalf("%d rows, want %d", len(rows), n)
	}
	for i, row := range rows {
		if want := fmt.Sprintf("01KB%022d", i+1); row[0] != want {
			t.Fatalf("row %d is order %s, want %s", i, row[0], want)
		}
	}
}

// An export whose database read fails after the answer began is cut off — the client
// sees a transfer that did not end — never ended as if the file were whole.
func TestVoucherOrdersExportBrokenOffIsNotWhole(t *testing.T) {
	t.Parallel()
	a := newAPI(t)
	id := a.createVoucher(10, 1)
	a.saleWithOrders(id, 3)
	// The voucher is found (its table is there), then every read of its orders fails.
	if _, err := a.db.ExecContext(context.Background(), "ALTER TABLE orders RENAME TO orders_gone"); err != nil {
		t.Fatal(err)
	}
	ex := a.export(id, "", a.admin, "")
	if ex.status != http.StatusOK || !errors.Is(ex.err, io.ErrUnexpectedEOF) {
		t.Fatalf("export broken off: %d, body %q, read error %v; want 200 cut off (unexpected EOF)", ex.status, ex.body, ex.err)
	}
	if ex.body != "order_id,voucher_id,user_id,quantity,status,created_at\r\n" {
		t.Fatalf("sent %q before the failure, want the header line alone", ex.body)
	}
}
