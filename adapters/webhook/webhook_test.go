package webhook_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	"github.com/uptrace/bun"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/seckill/seckill/adapters/httpapi"
	"github.com/seckill/seckill/adapters/sqlstore"
	"github.com/seckill/seckill/adapters/system"
	"github.com/seckill/seckill/adapters/testenv"
	"github.com/seckill/seckill/adapters/webhook"
	"github.com/seckill/seckill/application"
	"github.com/seckill/seckill/domain"
	"github.com/seckill/seckill/ports"
)

// secret is the signing secret of these tests: "whsec_" and the base64 of 32 bytes.
const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSwMfKQ9r8GKYo="

// received is one request a receiver got.
type received struct {
	id   string
	body []byte
	err  error // the signature's verification
}

// receiver is a webhook endpoint answering as answer says, verifying each request
// as the README shows.
type receiver struct {
	mu     sync.Mutex
	got    []received
	answer func(n int, r *http.Request) int
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	err := verify(body, r.Header)
	rc.mu.Lock()
	rc.got = append(rc.got, received{id: r.Header.Get("webhook-id"), body: body, err: err})
	n := len(rc.got)
	rc.mu.Unlock()
	w.WriteHeader(rc.answer(n, r))
}

// verify is the README's receiver: the library checks the signature and that the
// timestamp is recent.
func verify(body []byte, h http.Header) error {
	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		return err
	}
	return wh.Verify(body, h)
}

func (rc *receiver) requests() []received {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]received(nil), rc.got...)
}

// fixture is a database with a voucher, repositories writing the outbox, and what a
// dispatcher needs.
type fixture struct {
	db      *bun.DB
	orders  *sqlstore.Orders
	hooks   *sqlstore.Webhooks
	voucher domain.VoucherID
	next    int
}

func newFixture(t testing.TB) *fixture {
	t.Helper()
	ctx := context.Background()
	db, err := sqlstore.Open(ctx, testenv.DatabaseURL(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	if _, err := sqlstore.MigrateUp(ctx, db); err != nil {
		t.Fatal(err)
	}
	v := domain.Voucher{Title: "hooks", Stock: 1_000_000, BeginsAt: time.Now().Add(-time.Hour), EndsAt: time.Now().Add(time.Hour), PerUserLimit: 1}
	if err := sqlstore.NewVouchers(db).Create(ctx, &v, domain.Author{}, nil); err != nil {
		t.Fatal(err)
	}
	return &fixture{db: db, orders: sqlstore.NewOrders(db).WithOutbox(), hooks: sqlstore.NewWebhooks(db), voucher: v.ID}
}

// persist stores n new orders (n order.awaiting_payment events) and returns their ids.
func (f *fixture) persist(t testing.TB, n int) []domain.OrderID {
	t.Helper()
	rs := make([]domain.Reservation, n)
	ids := make([]domain.OrderID, n)
	for i := range rs {
		f.next++
		ids[i] = domain.OrderID(fmt.Sprintf("01KB%022d", f.next))
		rs[i] = domain.Reservation{OrderID: ids[i], VoucherID: f.voucher, UserID: domain.UserID(f.next), Quantity: 1, At: time.Now()}
	}
	if _, err := f.orders.Persist(context.Background(), rs); err != nil {
		t.Fatal(err)
	}
	return ids
}

// start runs a dispatcher to url until the test ends, or until stop is called.
func (f *fixture) start(t testing.TB, url string, opts application.WebhookOptions) (stop func()) {
	t.Helper()
	sender, err := webhook.NewSender(url, secret)
	if err != nil {
		t.Fatal(err)
	}
	log := zaptest.NewLogger(t)
	d := application.NewDeliverWebhooks(f.hooks, sender, httpapi.WebhookBody(domain.PaymentWindow(15*time.Minute)), system.Clock{}, opts,
		application.WebhookObserver{Problem: func(err error) { log.Warn("webhooks", zap.Error(err)) }})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = d.Run(ctx); close(done) }()
	stop = func() { cancel(); <-done }
	t.Cleanup(stop)
	return stop
}

// fast are options for tests: retries after milliseconds.
var fast = application.WebhookOptions{Timeout: 2 * time.Second, MinBackoff: 20 * time.Millisecond, MaxBackoff: 200 * time.Millisecond, Poll: 20 * time.Millisecond}

// delivered waits until every delivery is delivered.
func (f *fixture) delivered(t *testing.T, n int) []domain.Delivery {
	t.Helper()
	var ds []domain.Delivery
	testenv.Eventually(t, 4*testenv.Patience, "every delivery delivered", func() (bool, string) {
		var err error
		ds, err = f.hooks.List(context.Background(), ports.DeliveryQuery{Status: domain.DeliveryDelivered, Limit: 1000})
		if err != nil {
			return false, err.Error()
		}
		return len(ds) == n, fmt.Sprintf("%d of %d delivered", len(ds), n)
	})
	return ds
}

func TestDeliveryRetriedUnderTheSameID(t *testing.T) {
	f := newFixture(t)
	rc := &receiver{answer: func(n int, _ *http.Request) int {
		if n == 1 {
			return http.StatusInternalServerError
		}
		return http.StatusNoContent
	}}
	srv := httptest.NewServer(rc)
	t.Cleanup(srv.Close)
	ids := f.persist(t, 1)
	f.start(t, srv.URL, fast)

	ds := f.delivered(t, 1)
	got := rc.requests()
	if len(got) != 2 || got[0].id != got[1].id || got[0].id != ds[0].ID {
		t.Fatalf("requests = %+v, want the delivery %s twice", got, ds[0].ID)
	}
	if string(got[0].body) != string(got[1].body) {
		t.Fatalf("bodies differ:\n%s\n%s", got[0].body, got[1].body)
	}
	for _, r := range got {
		if r.err != nil {
			t.Fatalf("signature: %v", r.err)
		}
	}
	if d := ds[0]; d.Attempts != 2 || d.LastStatus != http.StatusNoContent || d.LastError != "" {
		t.Fatalf("delivery = %+v, want 2 attempts, the last answered 204", d)
	}
	var body struct {
		Type      string         `json:"type"`
		Timestamp time.Time      `json:"timestamp"`
		Data      map[string]any `json:"data"`
	}
	if err := json.Unmarshal(got[1].body, &body); err != nil {
		t.Fatal(err)
	}
	if body.Type != "order.awaiting_payment" || body.Data["order_id"] != string(ids[0]) || body.Data["status"] != "awaiting_payment" ||
		body.Data["expires_at"] == nil || body.Timestamp.IsZero() {
		t.Fatalf("body = %s", got[1].body)
	}
}

func TestDeliveryWaitsForAReceiverThatIsDown(t *testing.T) {
	f := newFixture(t)
	rc := &receiver{answer: func(int, *http.Request) int { return http.StatusOK }}
	srv := httptest.NewServer(rc)
	t.Cleanup(srv.Close)
	link := testenv.NewLink(t, strings.TrimPrefix(srv.URL, "http://"))
	link.Down()
	f.persist(t, 5)
	f.start(t, "http://"+link.Addr()+"/hooks", fast)

	testenv.Eventually(t, 4*testenv.Patience, "attempts refused", func() (bool, string) {
		ds, _ := f.hooks.List(context.Background(), ports.DeliveryQuery{Status: domain.DeliveryFailed, Limit: 10})
		retried := 0
		for _, d := range ds {
			if d.Attempts >= 2 && d.LastStatus == 0 && d.LastError != "" {
				retried++
			}
		}
		return retried == 5, fmt.Sprintf("%d of 5 failed twice", retried)
	})
	link.Up()
	f.delivered(t, 5)
	if n := len(rc.requests()); n != 5 {
		t.Fatalf("receiver got %d requests, want the 5 events once each", n)
	}
}

func TestHungReceiverTimesOutAndFulfillmentGoesOn(t *testing.T) {
	f := newFixture(t)
	release := make(chan struct{})
	var once sync.Once
	t.Cleanup(func() { once.Do(func() { close(release) }) })
	rc := &receiver{answer: func(_ int, r *http.Request) int {
		select {
		case <-release:
			return http.StatusOK
		case <-r.Context().Done():
			return http.StatusServiceUnavailable
		}
	}}
	srv := httptest.NewServer(rc)
	t.Cleanup(srv.Close)
	opts := fast
	opts.Timeout, opts.Concurrency = 100*time.Millisecond, 2
	f.persist(t, 4)
	f.start(t, srv.URL, opts)

	// Every attempt times out, and is tried again.
	testenv.Eventually(t, 4*testenv.Patience, "attempts timed out", func() (bool, string) {
		ds, _ := f.hooks.List(context.Background(), ports.DeliveryQuery{Status: domain.DeliveryFailed, Limit: 10})
		timedOut := 0
		for _, d := range ds {
			if d.Attempts >= 2 && strings.Contains(d.LastError, "no answer within") {
				timedOut++
			}
		}
		return timedOut == 4, fmt.Sprintf("%d of 4 timed out twice", timedOut)
	})
	// Meanwhile fulfillment persists as ever: the dispatcher holds no lock it needs.
	for range 20 {
		f.persist(t, 10)
	}
	once.Do(func() { close(release) })
	f.delivered(t, 204)
}

// TestTwoDispatchersNeverSendOneDeliveryAtOnce runs two dispatchers (two instances)
// on one outbox: no delivery is ever in flight twice, and each is delivered once.
func TestTwoDispatchersNeverSendOneDeliveryAtOnce(t *testing.T) {
	f := newFixture(t)
	var mu sync.Mutex
	inFlight := make(map[string]bool)
	overlaps := 0
	rc := &receiver{answer: func(_ int, r *http.Request) int {
		id := r.Header.Get("webhook-id")
		mu.Lock()
		if inFlight[id] {
			overlaps++
		}
		inFlight[id] = true
		mu.Unlock()
		time.Sleep(2 * time.Millisecond) // a receiver doing some work
		mu.Lock()
		delete(inFlight, id)
		mu.Unlock()
		return http.StatusOK
	}}
	srv := httptest.NewServer(rc)
	t.Cleanup(srv.Close)
	f.persist(t, 300)
	f.start(t, srv.URL, fast)
	f.start(t, srv.URL, fast)
	f.delivered(t, 300)
	mu.Lock()
	defer mu.Unlock()
	if overlaps != 0 {
		t.Fatalf("%d deliveries were in flight twice at once", overlaps)
	}
	seen := make(map[string]int)
	for _, r := range rc.requests() {
		seen[r.id]++
		if seen[r.id] > 1 {
			t.Fatalf("delivery %s sent %d times, though every attempt succeeded", r.id, seen[r.id])
		}
	}
}

// TestReceiverVerifiesSignature is the README's receiver, and the signature spelled
// out by hand as the contract states it.
func TestReceiverVerifiesSignature(t *testing.T) {
	f := newFixture(t)
	rc := &receiver{answer: func(int, *http.Request) int { return http.StatusOK }}
	var headers http.Header
	var mu sync.Mutex
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		headers = r.Header.Clone()
		mu.Unlock()
		rc.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	f.persist(t, 1)
	f.start(t, srv.URL, fast)
	f.delivered(t, 1)
	got := rc.requests()[0]
	if got.err != nil {
		t.Fatalf("the README's receiver refused the webhook: %v", got.err)
	}
	mu.Lock()
	defer mu.Unlock()
	if want := signature(t, got.id, headers.Get("webhook-timestamp"), got.body); headers.Get("webhook-signature") != want {
		t.Fatalf("webhook-signature = %q, want %q", headers.Get("webhook-signature"), want)
	}
	// A body changed on the way fails verification.
	if err := verify(append(got.body, ' '), headers); err == nil {
		t.Fatal("a changed body verified")
	}
}

// signature is the contract's webhook-signature, computed by hand: "v1," and the
// base64 of the HMAC-SHA256, keyed by the secret's bytes, of id.timestamp.body.
func signature(t *testing.T, id, timestamp string, body []byte) string {
	t.Helper()
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil {
		t.Fatal(err)
	}
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(id + "." + timestamp + "." + string(body)))
	return "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

// BenchmarkDeliver measures delivery to a local receiver that answers 204 at once:
// one dispatcher, with the default concurrency (8) and with 32, claims, signs, posts
// and records b.N events waiting in the outbox. Each operation is one delivery.
func BenchmarkDeliver(b *testing.B) {
	for _, concurrency := range []int{8, 32} {
		b.Run(fmt.Sprintf("concurrency=%d", concurrency), func(b *testing.B) {
			f := newFixture(b)
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.Copy(io.Discard, r.Body)
				w.WriteHeader(http.StatusNoContent)
			}))
			b.Cleanup(srv.Close)
			for left := b.N; left > 0; left -= 1000 {
				f.persist(b, min(left, 1000))
			}
			b.ResetTimer()
			f.start(b, srv.URL, application.WebhookOptions{Concurrency: concurrency, Poll: 5 * time.Millisecond})
			for {
				n, err := f.hooks.Backlog(context.Background())
				if err != nil {
					b.Fatal(err)
				}
				if n == 0 {
					break
				}
				time.Sleep(5 * time.Millisecond)
			}
			b.StopTimer()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "deliveries/s")
		})
	}
}

// TestRotatedSecretsBothVerify: with two secrets (the old and the new, while one is
// rotated) each delivery carries a signature of each, so a receiver that knows
// either verifies it with the Standard Webhooks library; with the new alone, the old
// no longer does.
func TestRotatedSecretsBothVerify(t *testing.T) {
	t.Parallel()
	const rotated = "whsec_c2Vja2lsbCByb3RhdGVzIGl0cyBzZWNyZXQgbm93IQ=="
	var (
		mu   sync.Mutex
		seen []http.Header
		body []byte
	)
	srv := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		seen, body = append(seen, r.Header.Clone()), b
		mu.Unlock()
	}))
	defer srv.Close()
	for _, secrets := range [][]string{{secret, rotated}, {rotated}} {
		sender, err := webhook.NewSender(srv.URL, secrets...)
		if err != nil {
			t.Fatal(err)
		}
		if status, err := sender.Send(context.Background(), "msg_1", time.Now(), []byte(`{"type":"order.paid"}`)); err != nil || status != http.StatusOK {
			t.Fatalf("send: %d, %v", status, err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	for i, want := range []map[string]bool{{secret: true, rotated: true}, {secret: false, rotated: true}} {
		if n := len(strings.Fields(seen[i].Get("webhook-signature"))); n != len(want)-i {
			t.Fatalf("delivery %d carries %d signatures", i, n)
		}
		for key, ok := range want {
			wh, err := standardwebhooks.NewWebhook(key)
			if err != nil {
				t.Fatal(err)
			}
			if err := wh.Verify(body, seen[i]); (err == nil) != ok {
				t.Errorf("delivery %d verified with %s: %v, want verified %v", i, key[:12], err, ok)
			}
		}
	}
}

// TestBusyReceiverSaysWhenToComeBack: a 429 or 503 with Retry-After (seconds or an
// HTTP date) is a *ports.ReceiverBusyError carrying the wait; another status, or no
// readable header, is a plain failure.
func TestBusyReceiverSaysWhenToComeBack(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		status int
		header string
		want   time.Duration // 0: no ReceiverBusyError
	}{
		{http.StatusTooManyRequests, "30", 30 * time.Second},
		{http.StatusServiceUnavailable, time.Now().Add(2 * time.Minute).UTC().Format(http.TimeFormat), 2 * time.Minute},
		{http.StatusServiceUnavailable, "soon", 0},
		{http.StatusInternalServerError, "30", 0},
	} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Retry-After", c.header)
			w.WriteHeader(c.status)
		}))
		sender, err := webhook.NewSender(srv.URL, secret)
		if err != nil {
			t.Fatal(err)
		}
		status, err := sender.Send(context.Background(), "msg_1", time.Now(), []byte(`{}`))
		srv.Close()
		busy, ok := errors.AsType[*ports.ReceiverBusyError](err)
		switch {
		case status != c.status || err == nil:
			t.Fatalf("%d %q: %d, %v", c.status, c.header, status, err)
		case c.want == 0 && ok:
			t.Fatalf("%d %q: %v, want a plain failure", c.status, c.header, err)
		case c.want != 0 && (!ok || busy.RetryAfter > c.want || busy.RetryAfter < c.want-5*time.Second):
			t.Fatalf("%d %q: %v, want a wait of about %s", c.status, c.header, err, c.want)
		}
	}
}
