package main

// End-to-end tests of Idempotency-Key through the failures that once left a key
// answering "still in progress" for a day: a create that timed out on a slow database,
// a pay whose client left, an instance killed during a create (after its commit, and
// before it). A retry with the same key gets the first answer or does the work, on any
// instance, and nothing is done twice.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/seckill/seckill/adapters/httpapi"
	"github.com/seckill/seckill/adapters/testenv"
)

// keyedAnswer is the answer to a request sent with an Idempotency-Key.
type keyedAnswer struct {
	status   int
	body     string
	replayed bool
}

func (a keyedAnswer) String() string {
	return fmt.Sprintf("%d %s (replayed %v)", a.status, strings.TrimSpace(a.body), a.replayed)
}

// code is the error code of the answer, if it is an error.
func (a keyedAnswer) code() string {
	var e struct {
		Error struct{ Code, Message string }
	}
	_ = json.Unmarshal([]byte(a.body), &e)
	return e.Error.Code
}

// inProgress reports whether the answer says the key's first request is in progress.
func (a keyedAnswer) inProgress() bool {
	return a.status == http.StatusConflict && a.code() == "idempotency_in_progress" && strings.Contains(a.body, "in progress")
}

// keyed sends a POST with an Idempotency-Key, within ctx, and returns the answer, or
// the error of a request that got none (cancelled, or its instance killed).
func (in *instance) keyed(ctx context.Context, path, token, body, key string) (keyedAnswer, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, in.base+path, strings.NewReader(body))
	if err != nil {
		return keyedAnswer{}, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set(httpapi.IdempotencyKeyHeader, key)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return keyedAnswer{}, err
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		return keyedAnswer{}, err
	}
	return keyedAnswer{status: res.StatusCode, body: string(raw), replayed: res.Header.Get("Idempotent-Replayed") == "true"}, nil
}

// mustKeyed is keyed that fails the test when no answer came.
func (in *instance) mustKeyed(path, token, body, key string) keyedAnswer {
	in.t.Helper()
	a, err := in.keyed(context.Background(), path, token, body, key)
	if err != nil {
		in.t.Fatalf("POST %s: %v", path, err)
	}
	return a
}

// wantReplay fails unless a repeat of the request with key is first replayed.
func (in *instance) wantReplay(path, token, body, key string, first keyedAnswer) {
	in.t.Helper()
	if again := in.mustKeyed(path, token, body, key); again.status != first.status || !again.replayed || again.body != first.body {
		in.t.Fatalf("repeat: %v, want %v replayed", again, first)
	}
}

// hold takes lock (a LOCK TABLE, a SELECT … FOR UPDATE) in a transaction of its own on
// the instance's database and keeps it, so the statements that need it wait, as on a
// database slowed by a long transaction; release ends it (at the latest when the test
// ends).
func (fi *fulfillInstance) hold(lock string, args ...any) (release func()) {
	fi.t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, fi.dbURL)
	if err != nil {
		fi.t.Fatal(err)
	}
	tx, err := conn.Begin(ctx)
	if err == nil {
		_, err = tx.Exec(ctx, lock, args...)
	}
	if err != nil {
		_ = conn.Close(ctx)
		fi.t.Fatalf("%s: %v", lock, err)
	}
	done := false
	release = func() {
		if !done {
			done = true
			_ = tx.Rollback(ctx)
			_ = conn.Close(ctx)
		}
	}
	fi.t.Cleanup(release)
	return release
}

// scan runs a query of one row on the instance's database into dest.
func (fi *fulfillInstance) scan(dest []any, query string, args ...any) {
	fi.t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, fi.dbURL)
	if err != nil {
		fi.t.Fatal(err)
	}
	defer conn.Close(ctx)
	if err := conn.QueryRow(ctx, query, args...).Scan(dest...); err != nil {
		fi.t.Fatalf("%s: %v", query, err)
	}
}

// count runs a SELECT count(*) on the instance's database.
func (fi *fulfillInstance) count(query string, args ...any) int {
	fi.t.Helper()
	var n int
	fi.scan([]any{&n}, query, args...)
	return n
}

// waitBlocked waits until a statement starting with prefix waits for a lock.
func (fi *fulfillInstance) waitBlocked(prefix string) {
	fi.t.Helper()
	testenv.Eventually(fi.t, 30*time.Second, prefix+" waiting for a lock", func() (bool, string) {
		n := fi.count(`SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE $1`, prefix+"%")
		return n > 0, fmt.Sprintf("%d waiting; logs:\n%s", n, fi.logs)
	})
}

// voucherBody is a create request for a voucher titled title.
func voucherBody(title string) string {
	return `{"title":"` + title + `","stock":5,"begins_at":"2026-01-01T00:00:00Z","ends_at":"2099-01-01T00:00:00Z"}`
}

// idOf is the id in a voucher's answer.
func idOf(t *testing.T, a keyedAnswer) string {
	t.Helper()
	var v struct{ ID string }
	if err := json.Unmarshal([]byte(a.body), &v); err != nil || v.ID == "" {
		t.Fatalf("no voucher in %v", a)
	}
	return v.ID
}

// TestIdempotentCreateThatTimedOutIsDoneByItsRetry: a create that answers 503 because
// the database was too slow for its deadline (its insert waits for a lock a long
// transaction holds) leaves its key free, though its own context has expired: the
// retry with the same key creates the voucher — once — and a repeat replays it.
func TestIdempotentCreateThatTimedOutIsDoneByItsRetry(t *testing.T) {
	fi := startFulfillInstance(t)
	admin := fi.token(1, true)
	const path, key, title = "/api/v1/vouchers", "slow-create", "slow"

	release := fi.hold("LOCK TABLE vouchers IN EXCLUSIVE MODE")
	if first := fi.mustKeyed(path, admin, voucherBody(title), key); first.status != http.StatusServiceUnavailable {
		t.Fatalf("create while the database is too slow: %v, want 503", first)
	}
	release()

	retry := fi.mustKeyed(path, admin, voucherBody(title), key)
	if retry.status != http.StatusCreated || retry.replayed {
		t.Fatalf("retry after the 503: %v, want 201 from doing the work", retry)
	}
	fi.wantReplay(path, admin, voucherBody(title), key, retry)
	if n := fi.count("SELECT count(*) FROM vouchers WHERE title = $1", title); n != 1 {
		t.Fatalf("%d vouchers titled %q, want 1: the 503 created none", n, title)
	}
}

// TestIdempotentPayWhoseClientLeftIsDoneByItsRetry: a pay whose client gives up while
// the payment waits for the database (its order row locked by a long transaction)
// leaves the order unpaid and its key free, though its own context was cancelled: the
// retry with the same key pays, and a repeat replays the payment.
func TestIdempotentPayWhoseClientLeftIsDoneByItsRetry(t *testing.T) {
	fi := startFulfillInstance(t)
	id := fi.createVoucher(5, 1)
	const user, key = 7, "pay-once"
	status, grab := fi.call(http.MethodPost, "/api/v1/vouchers/"+id+"/grab", fi.token(user, false), nil)
	if status != http.StatusAccepted {
		t.Fatalf("grab: %d %v", status, grab)
	}
	order := grab["order_id"].(string)
	testenv.Eventually(t, 30*time.Second, "the order awaiting payment", func() (bool, string) {
		status, o := fi.call(http.MethodGet, "/api/v1/orders/"+order, fi.token(user, false), nil)
		return status == http.StatusOK && o["status"] == "awaiting_payment", fmt.Sprintf("%d %v", status, o)
	})
	path, token := "/api/v1/orders/"+order+"/pay", fi.token(user, false)

	release := fi.hold("SELECT 1 FROM orders WHERE id = $1 FOR UPDATE", order)
	ctx, leave := context.WithCancel(context.Background())
	gone := make(chan error, 1)
	go func() {
		_, err := fi.keyed(ctx, path, token, "", key)
		gone <- err
	}()
	fi.waitBlocked(`UPDATE "orders"`)
	leave()
	if err := <-gone; err == nil {
		t.Fatal("the pay answered though its client left")
	}
	// The server sees its client gone and gives the key up while the row is still
	// locked: the payment cannot have been made.
	testenv.Eventually(t, 30*time.Second, "the key of the abandoned pay freed", func() (bool, string) {
		n := fi.count("SELECT count(*) FROM idempotency_keys WHERE idem_key = $1", key)
		return n == 0, fmt.Sprintf("%d claims of the key; logs:\n%s", n, fi.logs)
	})
	release()

	retry := fi.mustKeyed(path, token, "", key)
	if retry.status != http.StatusOK || retry.replayed || !strings.Contains(retry.body, `"status":"paid"`) {
		t.Fatalf("retry after the client left: %v, want 200 paid from doing the work", retry)
	}
	fi.wantReplay(path, token, "", key, retry)
}

// TestIdempotentCreateKilledAfterItsCommitIsAnsweredByAnotherInstance: an instance
// killed (SIGKILL) after its create committed — here while it waits for a frozen
// Redis to load the new voucher — answered nothing, but the answer was kept with the
// voucher: the retry with the same key on another instance gets 201 with that very
// voucher, and no second voucher is made.
func TestIdempotentCreateKilledAfterItsCommitIsAnsweredByAnotherInstance(t *testing.T) {
	redisPID := redisPIDFile(t)
	a := startFulfillInstance(t)
	b := a.another()
	admin := a.token(1, true)
	const path, key, title = "/api/v1/vouchers", "killed-after-commit", "committed"

	thaw := freezeRedis(t, redisPID)
	go func() { _, _ = a.keyed(context.Background(), path, admin, voucherBody(title), key) }()
	testenv.Eventually(t, 30*time.Second, "the voucher committed", func() (bool, string) {
		n := a.count("SELECT count(*) FROM vouchers WHERE title = $1", title)
		return n == 1, fmt.Sprintf("%d vouchers; logs:\n%s", n, a.logs)
	})
	a.kill()
	thaw()

	retry := b.mustKeyed(path, admin, voucherBody(title), key)
	if retry.status != http.StatusCreated || !retry.replayed {
		t.Fatalf("retry on another instance: %v, want the 201 the killed instance kept", retry)
	}
	var stored string
	a.scan([]any{&stored}, "SELECT id::text FROM vouchers WHERE title = $1", title)
	if got := idOf(t, retry); got != stored {
		t.Fatalf("the retry answers voucher %s, the database holds voucher %s", got, stored)
	}
	if n := a.count("SELECT count(*) FROM vouchers WHERE title = $1", title); n != 1 {
		t.Fatalf("%d vouchers titled %q, want 1", n, title)
	}
}

// TestIdempotencyKeyOfAKilledInstanceIsTakenOverAfterItsLease: an instance killed
// (SIGKILL) while its create waits for the database holds its key no longer than the
// key's lease: a retry on another instance finds the create in progress while the lease
// runs, then takes the key over and creates the voucher. The killed create's
// transaction never commits, so there is one voucher.
func TestIdempotencyKeyOfAKilledInstanceIsTakenOverAfterItsLease(t *testing.T) {
	a := startFulfillInstance(t)
	b := a.another()
	admin := a.token(1, true)
	const path, key, title = "/api/v1/vouchers", "killed-before-commit", "taken-over"
	lease := httpapi.IdempotencyLease(2 * time.Second) // SECKILL_REQUEST_TIMEOUT's default

	release := a.hold("LOCK TABLE vouchers IN EXCLUSIVE MODE")
	sent := time.Now()
	go func() { _, _ = a.keyed(context.Background(), path, admin, voucherBody(title), key) }()
	a.waitBlocked(`INSERT INTO "vouchers"`)
	if n := a.count("SELECT count(*) FROM idempotency_keys WHERE idem_key = $1 AND status = 0", key); n != 1 {
		t.Fatalf("%d claims of the key in progress, want 1", n)
	}
	a.kill()
	release()

	// The claim was made after sent, so its lease runs at least until sent + lease.
	first := b.mustKeyed(path, admin, voucherBody(title), key)
	if answered := time.Now(); answered.Before(sent.Add(lease)) && !first.inProgress() {
		t.Fatalf("retry %v after the claim, within its lease: %v, want 409 still in progress", answered.Sub(sent), first)
	}
	var retry keyedAnswer
	testenv.Eventually(t, lease+30*time.Second, "the key taken over", func() (bool, string) {
		retry = b.mustKeyed(path, admin, voucherBody(title), key)
		return !retry.inProgress(), retry.String()
	})
	if retry.status != http.StatusCreated || retry.replayed {
		t.Fatalf("retry after the lease: %v, want 201 from doing the work", retry)
	}
	b.wantReplay(path, admin, voucherBody(title), key, retry)
	if n := a.count("SELECT count(*) FROM vouchers WHERE title = $1", title); n != 1 {
		t.Fatalf("%d vouchers titled %q, want 1: the killed create's insert must not commit", n, title)
	}
}
