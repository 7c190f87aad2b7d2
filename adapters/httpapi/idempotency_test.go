package httpapi_test

import (
	"context"
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

// TestIdempotentCreateVoucher: a create repeated with its Idempotency-Key answers the
// first 201 again and stores one voucher; the key with another body is a conflict;
// another admin's same key is theirs; a malformed key is a 400.
func TestIdempotentCreateVoucher(t *testing.T) {
	t.Parallel()
	a := newAPI(t)
	body := `{"title":"once","stock":5,"begins_at":"2026-01-01T00:00:00Z","ends_at":"2099-01-01T00:00:00Z"}`
	first := a.serveFrom(http.MethodPost, "/api/v1/vouchers", a.admin, body, "192.0.2.1:1", "Idempotency-Key", "create-1")
	if first.Status != http.StatusCreated {
		t.Fatalf("first create: %d %s", first.Status, first.Raw)
	}
	again := a.serveFrom(http.MethodPost, "/api/v1/vouchers", a.admin, body, "192.0.2.1:1", "Idempotency-Key", "create-1")
	if again.Status != http.StatusCreated || again.Raw != first.Raw || again.Header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("repeat: %d %q (replayed %q), want the first answer %q", again.Status, again.Raw, again.Header.Get("Idempotent-Replayed"), first.Raw)
	}
	list := a.do(http.MethodGet, "/api/v1/vouchers", "", "")
	if vs, _ := list.Body["vouchers"].([]any); len(vs) != 1 {
		t.Fatalf("vouchers after a repeated create: %s, want one", list.Raw)
	}
	other := strings.Replace(body, `"stock":5`, `"stock":6`, 1)
	conflict := a.serveFrom(http.MethodPost, "/api/v1/vouchers", a.admin, other, "192.0.2.1:1", "Idempotency-Key", "create-1")
	if conflict.Status != http.StatusUnprocessableEntity || conflict.code() != "idempotency_key_mismatch" {
		t.Fatalf("same key, another body: %d %s, want 422 idempotency_key_mismatch", conflict.Status, conflict.Raw)
	}
	theirs := a.serveFrom(http.MethodPost, "/api/v1/vouchers", a.token(2, true), body, "192.0.2.1:1", "Idempotency-Key", "create-1")
	if theirs.Status != http.StatusCreated || theirs.Raw == first.Raw {
		t.Fatalf("another admin's same key: %d %s, want a voucher of their own", theirs.Status, theirs.Raw)
	}
	bad := a.serveFrom(http.MethodPost, "/api/v1/vouchers", a.admin, body, "192.0.2.1:1", "Idempotency-Key", "tab\there")
	if bad.Status != http.StatusBadRequest || bad.code() != "invalid_request" {
		t.Fatalf("a key with a control character: %d %s, want 400", bad.Status, bad.Raw)
	}
}

// TestIdempotentPayAndCancel: a repeated pay answers the first 200 again; a cancel
// with a key that paid is a conflict (another request), and a client error is kept
// and answered again too.
func TestIdempotentPayAndCancel(t *testing.T) {
	t.Parallel()
	a := newAPI(t)
	id := a.createVoucher(5, 1)
	user := a.token(7, false)
	grab := a.do(http.MethodPost, "/api/v1/vouchers/"+id+"/grab", user, "")
	order, _ := grab.Body["order_id"].(string)
	a.fulfillAll()

	pay := func(key string) response {
		return a.serveFrom(http.MethodPost, "/api/v1/orders/"+order+"/pay", user, "", "192.0.2.1:1", "Idempotency-Key", key)
	}
	first := pay("pay-1")
	if first.Status != http.StatusOK {
		t.Fatalf("pay: %d %s", first.Status, first.Raw)
	}
	if again := pay("pay-1"); again.Status != http.StatusOK || again.Raw != first.Raw {
		t.Fatalf("repeated pay: %d %s, want the first answer", again.Status, again.Raw)
	}
	// A new key is a new request: the order is paid already.
	if second := pay("pay-2"); second.Status != http.StatusConflict || second.code() != "invalid_state" {
		t.Fatalf("pay with a new key: %d %s, want 409 invalid_state", second.Status, second.Raw)
	}
	if again := pay("pay-2"); again.Status != http.StatusConflict || again.code() != "invalid_state" {
		t.Fatalf("its repeat: %d %s, want the same 409", again.Status, again.Raw)
	}
	cancel := a.serveFrom(http.MethodPost, "/api/v1/orders/"+order+"/cancel", user, "", "192.0.2.1:1", "Idempotency-Key", "pay-1")
	if cancel.Status != http.StatusUnprocessableEntity || cancel.code() != "idempotency_key_mismatch" {
		t.Fatalf("cancel under the pay's key: %d %s, want 422 idempotency_key_mismatch", cancel.Status, cancel.Raw)
	}
}

// TestIdempotencyKeyOfADeadRequest: a key held by a request that never settled it (its
// process died) answers 409 while the holder's lease runs, and is taken over by a
// retry once it has passed: the retry does the work, and the dead holder can keep no
// answer of its own.
func TestIdempotencyKeyOfADeadRequest(t *testing.T) {
	t.Parallel()
	a := newAPI(t)
	ctx := t.Context()
	lease := httpapi.IdempotencyLease(2 * time.Second) // newAPI's RequestTimeout
	body := `{"title":"dead","stock":5,"begins_at":"2026-01-01T00:00:00Z","ends_at":"2099-01-01T00:00:00Z"}`
	create := func(key string) response {
		return a.serveFrom(http.MethodPost, "/api/v1/vouchers", a.admin, body, "192.0.2.1:1", "Idempotency-Key", key)
	}
	// The admin's token is user 1's.
	if _, _, err := a.idempotency.Claim(ctx, 1, "live", "a dead request's", time.Now(), lease); err != nil {
		t.Fatal(err)
	}
	if r := create("live"); r.Status != http.StatusConflict || r.code() != "idempotency_in_progress" || r.Header.Get("Retry-After") == "" {
		t.Fatalf("a key whose holder's lease runs: %d %s, want 409 idempotency_in_progress with Retry-After", r.Status, r.Raw)
	}
	dead, _, err := a.idempotency.Claim(ctx, 1, "lapsed", "a dead request's", time.Now().Add(-lease), lease)
	if err != nil || !dead.Held() {
		t.Fatalf("claim: %+v, %v", dead, err)
	}
	retry := create("lapsed")
	if retry.Status != http.StatusCreated || retry.Header.Get("Idempotent-Replayed") != "" {
		t.Fatalf("a key whose holder's lease passed: %d %s, want 201 from doing the work", retry.Status, retry.Raw)
	}
	if kept, err := a.idempotency.Complete(ctx, dead, http.StatusInternalServerError, []byte("{}")); err != nil || kept {
		t.Fatalf("the dead holder's Complete = %v, %v; want nothing kept", kept, err)
	}
	if again := create("lapsed"); again.Status != http.StatusCreated || again.Raw != retry.Raw || again.Header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("repeat: %d %s, want the retry's 201 replayed", again.Status, again.Raw)
	}
	if vs, _ := a.do(http.MethodGet, "/api/v1/vouchers", "", "").Body["vouchers"].([]any); len(vs) != 1 {
		t.Fatalf("%d vouchers, want the retry's one", len(vs))
	}
}

// TestIdempotentHolderTakenOverKeepsNothing: a create still running when its key is
// taken over (it outlived its lease: its process was paused, say) keeps neither its
// voucher nor its answer — its transaction is rolled back and it answers 503 — and
// the key stays the retry's. PostgreSQL only: a lock held by the test keeps the create
// waiting, which on SQLite would stop every other statement too.
func TestIdempotentHolderTakenOverKeepsNothing(t *testing.T) {
	t.Parallel()
	testenv.AdminDatabaseURL(t) // skips in the SQLite pass
	const timeout = 30 * time.Second
	a := newAPI(t, func(s *setup) { s.http.RequestTimeout = timeout })
	ctx := t.Context()
	lease := httpapi.IdempotencyLease(timeout)
	conn, watch := pgxConn(t, a.dbURL), pgxConn(t, a.dbURL)
	lock, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lock.Exec(ctx, "LOCK TABLE vouchers IN EXCLUSIVE MODE"); err != nil {
		t.Fatal(err)
	}

	body := `{"title":"outlived","stock":5,"begins_at":"2026-01-01T00:00:00Z","ends_at":"2099-01-01T00:00:00Z"}`
	answered := make(chan response, 1)
	go func() {
		req, _ := http.NewRequest(http.MethodPost, a.url+"/api/v1/vouchers", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+a.admin)
		req.Header.Set("Idempotency-Key", "k")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			answered <- response{Raw: err.Error()}
			return
		}
		defer res.Body.Close()
		raw, _ := io.ReadAll(res.Body)
		answered <- response{Status: res.StatusCode, Raw: string(raw)}
	}()
	testenv.Eventually(t, testenv.Patience, "the create waiting for the table", func() (bool, string) {
		// Not on conn: in its transaction the statistics are a snapshot.
		var n int
		err := watch.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()
			AND wait_event_type = 'Lock' AND query LIKE 'INSERT INTO "vouchers"%'`).Scan(&n)
		return err == nil && n == 1, fmt.Sprintf("%d waiting, %v", n, err)
	})
	taken, _, err := a.idempotency.Claim(ctx, 1, "k", "a retry's", time.Now().Add(lease+time.Second), lease)
	if err != nil || !taken.Held() {
		t.Fatalf("take the key over: %+v, %v", taken, err)
	}
	if err := lock.Rollback(ctx); err != nil {
		t.Fatal(err)
	}

	if r := <-answered; r.Status != http.StatusServiceUnavailable || !strings.Contains(r.Raw, `"unavailable"`) {
		t.Fatalf("the create whose key was taken over: %d %s, want 503 unavailable", r.Status, r.Raw)
	}
	if vs, _ := a.do(http.MethodGet, "/api/v1/vouchers", "", "").Body["vouchers"].([]any); len(vs) != 0 {
		t.Fatalf("%d vouchers, want none: the create's insert must roll back", len(vs))
	}
	if kept, err := a.idempotency.Complete(ctx, taken, http.StatusCreated, []byte("the retry's")); err != nil || !kept {
		t.Fatalf("the retry's Complete = %v, %v; want its answer kept", kept, err)
	}
}

// pgxConn connects to the database at url, until the test ends.
func pgxConn(t *testing.T, url string) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	return conn
}

// TestIdempotencyKeyAsTheDraftHasIt: the IETF Idempotency-Key draft's cases past a
// plain repeat — the same JSON serialized another way is the same request; a
// validation failure is not kept, so the corrected request may use the same key; an
// empty key is refused; a 409 is kept.
func TestIdempotencyKeyAsTheDraftHasIt(t *testing.T) {
	t.Parallel()
	a := newAPI(t)
	post := func(body, key string) response {
		return a.serveFrom(http.MethodPost, "/api/v1/vouchers", a.admin, body, "192.0.2.1:1", "Idempotency-Key", key)
	}
	body := `{"title":"meant","stock":5,"begins_at":"2026-01-01T00:00:00Z","ends_at":"2099-01-01T00:00:00Z"}`
	first := post(body, "k-1")
	if first.Status != http.StatusCreated {
		t.Fatalf("create: %d %s", first.Status, first.Raw)
	}
	respaced := "{ \"stock\": 5,\n  \"title\": \"meant\", \"ends_at\": \"2099-01-01T00:00:00Z\",\t\"begins_at\": \"2026-01-01T00:00:00Z\" }"
	if again := post(respaced, "k-1"); again.Status != http.StatusCreated || again.Raw != first.Raw ||
		again.Header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("the same JSON with other spacing and member order: %d %s, want the first answer replayed", again.Status, again.Raw)
	}

	invalid := `{"title":"","stock":5,"begins_at":"2026-01-01T00:00:00Z","ends_at":"2099-01-01T00:00:00Z"}`
	if r := post(invalid, "k-2"); r.Status != http.StatusBadRequest {
		t.Fatalf("invalid create: %d %s, want 400", r.Status, r.Raw)
	}
	fixed := strings.Replace(invalid, `"title":""`, `"title":"fixed"`, 1)
	if r := post(fixed, "k-2"); r.Status != http.StatusCreated || r.Header.Get("Idempotent-Replayed") != "" {
		t.Fatalf("the corrected create under the same key: %d %s, want a fresh 201", r.Status, r.Raw)
	}
	if r := post(body, ""); r.Status != http.StatusBadRequest || r.code() != "invalid_request" {
		t.Fatalf("an empty Idempotency-Key: %d %s, want 400 invalid_request", r.Status, r.Raw)
	}
	if r := a.do(http.MethodGet, "/api/v1/vouchers", "", ""); len(r.Body["vouchers"].([]any)) != 2 {
		t.Fatalf("vouchers: %s, want the two created", r.Raw)
	}
}
