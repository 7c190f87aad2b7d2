package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/seckill/seckill/adapters/sqlstore"
	"github.com/seckill/seckill/adapters/testenv"
	"github.com/seckill/seckill/domain"
)

// TestExportStreamsBesideTheSale: in the zero-setup mode — the in-process Redis and a
// SQLite file with its one connection — an admin's CSV export of a voucher's 60,000
// orders streams as it is read (chunked, no length given), and a client that stops
// reading half-way, leaving the export stuck on a full socket, holds up nothing: a
// grab of another voucher is answered and persisted meanwhile. Then the export ends
// whole: every order once, oldest first.
func TestExportStreamsBesideTheSale(t *testing.T) {
	exportBesideTheSale(t, startZeroSetup(t))
}

// TestExportStreamsBesideTheSaleOnPostgres: the same on PostgreSQL and a Redis server
// (a Redis Cluster in the cluster pass of scripts/test.sh).
func TestExportStreamsBesideTheSaleOnPostgres(t *testing.T) {
	exportBesideTheSale(t, startFulfillInstance(t))
}

// exportOrders is how many orders the exported voucher holds: about 6 MB of CSV, more
// than the sockets between the test and serve can buffer (Linux lets a socket's send
// buffer grow to 4 MB by default; the test's receive buffer is 16 KB).
const exportOrders = 60_000

func exportBesideTheSale(t *testing.T, fi *fulfillInstance) {
	ctx := context.Background()
	big := importOrders(t, fi, exportOrders)
	live := fi.createVoucher(10, 1)
	admin := fi.token(1, true)

	// A client with a small receive buffer that reads the first rows, then stops.
	dialer := &net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		err := c.Control(func(fd uintptr) { serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 16<<10) })
		if err != nil {
			return err
		}
		return serr
	}}
	client := &http.Client{Transport: &http.Transport{DialContext: dialer.DialContext, DisableCompression: true}}
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, fi.base+"/api/v1/vouchers/"+big+"/orders", nil)
	req.Header.Set("Authorization", "Bearer "+admin)
	req.Header.Set("Accept", "text/csv")
	res, err := client.Do(req)
	if err != nil {
		t.Fatalf("export: %v", err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK || res.Header.Get("Content-Type") != "text/csv; charset=utf-8" ||
		res.ContentLength != -1 || !slices.Contains(res.TransferEncoding, "chunked") {
		t.Fatalf("export: %d %v, length %d, %v; want 200 text/csv, chunked", res.StatusCode, res.Header, res.ContentLength, res.TransferEncoding)
	}
	lines := bufio.NewReader(res.Body)
	header, err := lines.ReadString('\n')
	if err != nil || header != "order_id,voucher_id,user_id,quantity,status,created_at\r\n" {
		t.Fatalf("header line %q, %v", header, err)
	}
	var ids []string
	readRow := func() error {
		line, err := lines.ReadString('\n')
		if err != nil {
			return err
		}
		fields := strings.Split(strings.TrimSuffix(line, "\r\n"), ",")
		if len(fields) != 6 || fields[1] != big {
			return fmt.Errorf("row %q", line)
		}
		ids = append(ids, fields[0])
		return nil
	}
	for range 1000 {
		if err := readRow(); err != nil {
			t.Fatalf("row %d: %v", len(ids)+1, err)
		}
	}

	// The export waits on its client; the sale goes on.
	status, grab := fi.call(http.MethodPost, "/api/v1/vouchers/"+live+"/grab", fi.token(5, false), nil)
	if status != http.StatusAccepted {
		t.Fatalf("grab while an export waits: %d %v", status, grab)
	}
	order := grab["order_id"].(string)
	testenv.Eventually(t, 30*time.Second, "the grab persisted while the export waits", func() (bool, string) {
		status, o := fi.call(http.MethodGet, "/api/v1/orders/"+order, fi.token(5, false), nil)
		return status == http.StatusOK && o["status"] == "awaiting_payment", fmt.Sprint(status, o)
	})
	// The export was still waiting on its client all along: serve counts a request
	// when it ends.
	if n := exportsAnswered(t, fi); n != 0 {
		t.Fatalf("%v exports answered before their client read them: the export did not wait on its client", n)
	}

	for {
		err := readRow()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("row %d: %v", len(ids)+1, err)
		}
	}
	if len(ids) != exportOrders || !slices.IsSorted(ids) || len(slices.Compact(slices.Clone(ids))) != exportOrders {
		t.Fatalf("exported %d rows (sorted %v), want each of the %d orders once, oldest first", len(ids), slices.IsSorted(ids), exportOrders)
	}
	testenv.Eventually(t, 10*time.Second, "the export counted once it ended", func() (bool, string) {
		n := exportsAnswered(t, fi)
		return n == 1, fmt.Sprint(n)
	})
}

// exportsAnswered is how many requests for a voucher's orders fi has answered to the end.
func exportsAnswered(t *testing.T, fi *fulfillInstance) float64 {
	t.Helper()
	var n float64
	for series, v := range scrapeURL(t, fi.base+"/metrics") {
		if strings.HasPrefix(series, "seckill_http_request_duration_seconds_count{") && strings.Contains(series, `route="/api/v1/vouchers/:id/orders"`) {
			n += v
		}
	}
	return n
}

// importOrders stores an ended voucher holding n paid orders straight into fi's
// database, as `seckill-lab seed` would (ended, so no warm-up loads it), and returns
// its id. The orders are made by the database itself, in one statement: order n is
// 01KB followed by n in 22 digits, of user 10^18 + n (long ids: long rows), made n ms
// after the sale began.
func importOrders(t *testing.T, fi *fulfillInstance, n int) string {
	t.Helper()
	ctx := context.Background()
	db, err := fi.openStore(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	at := time.Now().Add(-2 * time.Hour).UTC().Truncate(time.Second)
	vs, err := sqlstore.NewVouchers(db).Import(ctx, []domain.Voucher{{Title: "Exported", Stock: n, Sold: n, PerUserLimit: 1,
		BeginsAt: at, EndsAt: at.Add(time.Hour)}})
	if err != nil {
		t.Fatal(err)
	}
	id, created := "'01KB' || lpad(n::text, 22, '0')", "?::timestamptz + n * interval '1 millisecond'"
	if sqlstore.IsSQLite(db) {
		id, created = "printf('01KB%022d', n)", "strftime('%Y-%m-%d %H:%M:%f+00:00', ?, '+' || (n / 1000.0) || ' seconds')"
	}
	_, err = db.ExecContext(ctx, `WITH RECURSIVE seq(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM seq WHERE n < ?)
		INSERT INTO orders (id, voucher_id, user_id, quantity, status, created_at)
		SELECT `+id+`, ?, 1000000000000000000 + n, 1, 'paid', `+created+` FROM seq`, n, int64(vs[0].ID), at.Format("2006-01-02 15:04:05"))
	if err != nil {
		t.Fatalf("make %d orders: %v", n, err)
	}
	return vs[0].ID.String()
}
