package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/redis/go-redis/v9"
	"github.com/uptrace/bun"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest"

	"github.com/seckill/seckill/adapters/httpapi"
	"github.com/seckill/seckill/adapters/redisstore"
	"github.com/seckill/seckill/adapters/sqlstore"
	"github.com/seckill/seckill/adapters/system"
	"github.com/seckill/seckill/adapters/testenv"
	"github.com/seckill/seckill/application"
	"github.com/seckill/seckill/domain"
	"github.com/seckill/seckill/ports"
)

const secret = "test-secret-0123456789"

// api is the HTTP adapter on real Redis and PostgreSQL, as serve wires it.
type api struct {
	t       testing.TB
	url     string
	redis   redis.UniversalClient
	stock   *redisstore.Stock
	fulfill *application.FulfillOrder
	queue   *redisstore.Queue
	grab    *application.GrabVoucher
	e       *echo.Echo
	tokens  *httpapi.Tokens
	admin   string

	// vouchers stores a voucher the API would refuse to create (one that has ended);
	// orders imports orders made elsewhere; db is the database under both.
	vouchers *sqlstore.Vouchers
	orders   *sqlstore.Orders
	db       *bun.DB
	// expire expires the orders due, as the sweeper does.
	expire *application.ExpireOrders
	// idempotency keeps the API's Idempotency-Keys; dbURL names its database.
	idempotency ports.Idempotency
	dbURL       string
	// denied is the grab path's copy of the deny list.
	denied *application.DeniedUsers
	// passKey signs the waiting rooms' passes the grab path checks.
	passKey application.PassKey
	// rooms runs the waiting rooms' step (shuffle, admission), as a worker does.
	rooms *application.AdmitQueues
	// draws runs the draws whose sale has begun (a voucher's, a drop's), as a worker does.
	draws *application.RunDraws
}

// setup is what a test may adjust before newAPI wires the API. Every limit is off by
// default, so tests that are not about them can grab freely.
type setup struct {
	stock redisstore.Options
	http  httpapi.Options
	// clock is the sale's clock of the use cases and of GET /api/v1/time: the host's
	// by default.
	clock ports.Clock
	// streams tune the event streams (their Changes and Tickets are Redis's);
	// onStreams, when set, is handed the hub.
	streams   httpapi.StreamOptions
	onStreams func(*httpapi.Streams)
	// noDenyList leaves the buyers' gate without its deny list (a benchmark's baseline).
	noDenyList bool
}

// paymentWindow is the API's payment window in these tests.
const paymentWindow = domain.PaymentWindow(15 * time.Minute)

// newAPI wires the API on real Redis and PostgreSQL, as serve does.
func newAPI(t testing.TB, opts ...func(*setup)) *api {
	t.Helper()
	ctx := context.Background()
	rdb := testenv.Redis(t)
	dbURL := testenv.DatabaseURL(t)
	db, err := sqlstore.Open(ctx, dbURL)
	if err != nil {
		t.Fatalf("open database: %v", err)
	}
	t.Cleanup(func() { _ = db.Close() })
	if _, err := sqlstore.MigrateUp(ctx, db); err != nil {
		t.Fatalf("migrate: %v", err)
	}
	prefix := "t" + testenv.Unique()
	t.Cleanup(func() { deleteKeys(rdb, prefix) })
	cfg := setup{
		stock: redisstore.Options{Prefix: prefix},
		http: httpapi.Options{BodyLimit: "4K", RequestTimeout: 2 * time.Second, Idempotency: sqlstore.NewIdempotency(db),
			PaymentWindow: paymentWindow},
		clock: system.Clock{},
	}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.http.IPLimit > 0 && cfg.http.IPLimiter == nil {
		cfg.http.IPLimiter = redisstore.NewRateLimiter(rdb, redisstore.Options{Prefix: prefix})
		t.Cleanup(func() { deleteKeys(rdb, "rate:"+prefix) }) // redis_rate's own prefix
	}
	stock := redisstore.NewStock(rdb, cfg.stock)
	vouchers := sqlstore.NewVouchers(db).WithOutbox()
	orders := sqlstore.NewOrders(db).WithOutbox()
	reservations := redisstore.NewReservations(rdb, redisstore.Options{Prefix: prefix})
	queue := redisstore.NewQueue(rdb, redisstore.QueueOptions{Prefix: prefix, Consumer: "test-" + testenv.Unique()})
	clock := cfg.clock
	ids := system.NewULIDs(clock)
	cfg.http.Clock = clock
	// A long flag life: a test that sees units come back sees it through the restock signal.
	changes := redisstore.NewChanges(rdb, redisstore.Options{Prefix: prefix})
	cfg.streams.Changes = changes
	tickets := redisstore.NewTickets(rdb, redisstore.Options{Prefix: prefix})
	cfg.streams.Tickets = application.NewRedeemStreamTicket(tickets)
	cfg.streams.Log = testLogger(t)
	streams := httpapi.NewStreams(cfg.streams)
	cfg.http.Streams = streams
	if cfg.onStreams != nil {
		cfg.onStreams(streams)
	}
	denyList := sqlstore.NewDenyList(db)
	denyChanges := redisstore.NewDenyChanges(rdb, redisstore.Options{Prefix: prefix})
	denied := application.NewDeniedUsers(denyList)
	passKey := application.NewPassKey([]byte(secret))
	pow := redisstore.NewProofOfWork(rdb, redisstore.Options{Prefix: prefix}, clock)
	verifyProof := application.NewVerifyProof(pow)
	campaigns := sqlstore.NewCampaigns(db).WithOutbox()
	rooms := application.NewRoomSales(vouchers, campaigns)
	gateOpts := application.GateOptions{SoldOutTTL: time.Minute, Denied: denied, PassKey: passKey, Proofs: verifyProof, Rooms: rooms}
	if cfg.noDenyList {
		gateOpts.Denied = nil
	}
	gate := application.NewBuyerGate(vouchers, clock, gateOpts)
	grab := application.NewGrabVoucher(stock, clock, ids, nil, gate, application.GrabOptions{})
	audit := redisstore.NewAudit(rdb, redisstore.Options{Prefix: prefix})
	getOrder := application.NewGetOrder(orders, reservations)
	compensate := application.NewCompensate(stock, orders)
	recovery := application.NewRecoverVoucher(vouchers, stock, audit, orders, clock)
	tokens := httpapi.NewTokens([]byte(secret))
	room := redisstore.NewWaitingRoom(rdb, redisstore.Options{Prefix: prefix})
	shuffles := sqlstore.NewShuffles(db)
	joinQueue := application.NewJoinQueue(room, gate)
	waitlist := redisstore.NewWaitlist(stock)
	stats := application.NewGetVoucherStats(vouchers, orders, audit, clock, waitlist)
	entries := redisstore.NewEntries(stock)
	draws := sqlstore.NewDraws(db)
	e := httpapi.New(
		cfg.http,
		httpapi.UseCases{
			CreateVoucher:       application.NewCreateVoucher(vouchers, stock, clock).WithCampaigns(campaigns, stock),
			GetVoucher:          application.NewGetVoucher(vouchers, stock, clock),
			ListVouchers:        application.NewListVouchers(vouchers, stock, clock),
			GrabVoucher:         grab,
			GetOrder:            getOrder,
			ListOrders:          application.NewListOrders(orders, reservations),
			GetVoucherStats:     stats,
			PayOrder:            application.NewPayOrder(getOrder, orders, system.AcceptPayments{}, clock, paymentWindow, changes),
			CancelOrder:         application.NewCancelOrder(getOrder, orders, compensate, changes),
			PauseSale:           application.NewPauseSale(vouchers, stock, clock, changes),
			EditVoucher:         application.NewEditVoucher(vouchers, stock, recovery, clock, changes),
			ListAudit:           application.NewListAudit(sqlstore.NewAuditLog(db)),
			ListVoucherOrders:   application.NewListVoucherOrders(vouchers, orders),
			ExportVoucherOrders: application.NewExportVoucherOrders(vouchers, orders),
			ListDeliveries:      application.NewListDeliveries(sqlstore.NewWebhooks(db)),
			RetryDelivery:       application.NewRetryDelivery(sqlstore.NewWebhooks(db), system.Clock{}, "http://receiver.test/hooks"),
			DenyUser:            application.NewDenyUser(denyList, denyChanges, denied, waitlist),
			AllowUser:           application.NewAllowUser(denyList, denyChanges, denied),
			ListDenied:          application.NewListDenied(denyList),
			JoinWaitlist:        application.NewJoinWaitlist(waitlist, ids, clock, gate),
			WaitlistPosition:    application.NewWaitlistPosition(waitlist),
			LeaveWaitlist:       application.NewLeaveWaitlist(waitlist),
			IssueChallenge:      application.NewIssueChallenge(rooms, pow, clock),
			IssueStreamTicket:   application.NewIssueStreamTicket(tickets, clock),
			JoinQueue:           joinQueue,
			QueueStatus:         application.NewQueueStatus(rooms, room, shuffles, clock, application.NewPassKey([]byte(secret))),
			QueueEntrants:       application.NewQueueEntrants(rooms, shuffles),
			GetQueueStats:       application.NewGetQueueStats(rooms, room, shuffles),
			CreateCampaign:      application.NewCreateCampaign(campaigns, stock, clock),
			GetCampaign:         application.NewGetCampaign(campaigns, vouchers, stock, clock),
			ListCampaigns:       application.NewListCampaigns(campaigns, vouchers, stock, clock),
			UpdateCampaign:      application.NewUpdateCampaign(campaigns, vouchers, stock, stock, clock, changes),
			GetCampaignStats:    application.NewGetCampaignStats(campaigns, stats),
			EnterDraw:           application.NewEnterDraw(entries, gate),
			GetDraw:             application.NewGetDraw(draws, entries, rooms),
		},
		tokens,
		[]httpapi.Check{
			{Name: "redis", Ping: func(ctx context.Context) error { return rdb.Ping(ctx).Err() }},
			{Name: "database", Ping: db.PingContext},
		},
		testLogger(t),
	)
	srv := httptest.NewServer(e)
	// Streams end first, so the server's Close does not wait for them.
	t.Cleanup(srv.Close)
	t.Cleanup(streams.Close)
	a := &api{t: t, url: srv.URL, denied: denied, passKey: passKey, redis: rdb, stock: stock, vouchers: vouchers, orders: orders, db: db, tokens: tokens, queue: queue, grab: grab, e: e,
		fulfill: application.NewFulfillOrder(orders, queue, compensate, changes, 5), idempotency: cfg.http.Idempotency, dbURL: dbURL,
		expire: application.NewExpireOrders(orders, compensate, clock, paymentWindow, changes),
		rooms: application.NewAdmitQueues(rooms, room, shuffles, sqlstore.NewLeases(db), clock,
			application.RoomOptions{Holder: "test"}, application.RoomObserver{}),
		draws: application.NewRunDraws(draws, entries, sqlstore.NewLeases(db), ids, clock, rooms, "test",
			application.DrawOptions{}, application.DrawObserver{})}
	a.admin = a.token(1, true)
	return a
}

// shiftedClock is the host's clock moved by a shift the test may change as it goes: the
// sale's clock of an API whose clock is off the test's, or that time passed for.
type shiftedClock struct{ shift atomic.Int64 }

func (c *shiftedClock) Now() time.Time { return time.Now().Add(time.Duration(c.shift.Load())) }

// set moves the clock to d from the host's.
func (c *shiftedClock) set(d time.Duration) { c.shift.Store(int64(d)) }

// withClock has the API tell and judge time by clock.
func withClock(clock ports.Clock) func(*setup) {
	return func(s *setup) { s.clock = clock }
}

// testLogger logs through the test in tests; in benchmarks it encodes every line as
// production does (JSON, info level) but discards it, so logging's cost is measured.
func testLogger(t testing.TB) *zap.Logger {
	if _, ok := t.(*testing.F); ok {
		// A fuzz target may not log through f; the errors behind a failing input
		// still show, on stderr.
		enc := zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig())
		return zap.New(zapcore.NewCore(enc, zapcore.Lock(os.Stderr), zap.ErrorLevel))
	}
	if _, ok := t.(*testing.B); ok {
		enc := zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig())
		return zap.New(zapcore.NewCore(enc, zapcore.AddSync(io.Discard), zap.InfoLevel))
	}
	return zaptest.NewLogger(t)
}

func deleteKeys(rdb redis.UniversalClient, prefix string) {
	ctx := context.Background()
	iter := rdb.Scan(ctx, 0, prefix+":*", 1000).Iterator()
	var page []string
	for iter.Next(ctx) {
		// One UNLINK per key: on a cluster the keys of a page live in many slots.
		if page = append(page, iter.Val()); len(page) == 1000 {
			unlinkAll(ctx, rdb, page)
			page = page[:0]
		}
	}
	unlinkAll(ctx, rdb, page)
}

// unlinkAll unlinks keys in one pipeline.
func unlinkAll(ctx context.Context, rdb redis.UniversalClient, keys []string) {
	pipe := rdb.Pipeline()
	for _, k := range keys {
		pipe.Unlink(ctx, k)
	}
	_, _ = pipe.Exec(ctx)
}

func (a *api) token(user domain.UserID, admin bool) string {
	a.t.Helper()
	tok, err := a.tokens.Mint(user, admin, time.Hour)
	if err != nil {
		a.t.Fatal(err)
	}
	return tok
}

// response is a decoded answer.
type response struct {
	Status int
	Header http.Header
	Body   map[string]any
	Raw    string
}

func (r response) code() string {
	e, _ := r.Body["error"].(map[string]any)
	c, _ := e["code"].(string)
	return c
}

func (a *api) do(method, path, token, body string) response {
	a.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = bytes.NewBufferString(body)
	}
	req, err := http.NewRequest(method, a.url+path, rd)
	if err != nil {
		a.t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		a.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	checkResponse(a.t, method, path, res.StatusCode, res.Header, raw)
	out := response{Status: res.StatusCode, Header: res.Header, Raw: string(raw)}
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &out.Body); err != nil {
			a.t.Fatalf("%s %s: body is not a JSON object: %q", method, path, raw)
		}
	}
	return out
}

// createVoucher makes a voucher on sale now and returns its id.
func (a *api) createVoucher(stock, limit int) string {
	a.t.Helper()
	now := time.Now().UTC()
	body, _ := json.Marshal(map[string]any{
		"title": "Coffee", "stock": stock, "per_user_limit": limit,
		"begins_at": now.Add(-time.Minute), "ends_at": now.Add(time.Hour),
	})
	r := a.do(http.MethodPost, "/api/v1/vouchers", a.admin, string(body))
	if r.Status != http.StatusCreated {
		a.t.Fatalf("create voucher: %d %s", r.Status, r.Raw)
	}
	return r.Body["id"].(string)
}

// storeVoucher stores v and warms its stock directly, as if it had been created
// earlier through the API, and returns its id.
func (a *api) storeVoucher(v domain.Voucher) string {
	a.t.Helper()
	ctx := context.Background()
	if err := a.vouchers.Create(ctx, &v, domain.Author{}, nil); err != nil {
		a.t.Fatalf("store voucher: %v", err)
	}
	if _, err := a.stock.Warm(ctx, v); err != nil {
		a.t.Fatalf("warm voucher: %v", err)
	}
	return v.ID.String()
}

func (a *api) streamLen(id string) int64 {
	a.t.Helper()
	vid, _ := domain.ParseVoucherID(id)
	n, err := a.redis.XLen(context.Background(), a.stock.Keys().Stream(vid)).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		a.t.Fatal(err)
	}
	return n
}

func (a *api) remaining(id string) float64 {
	a.t.Helper()
	r := a.do(http.MethodGet, "/api/v1/vouchers/"+id, "", "")
	if r.Status != http.StatusOK {
		a.t.Fatalf("get voucher: %d %s", r.Status, r.Raw)
	}
	return r.Body["remaining"].(float64)
}

// serveFrom sends one request as if from addr (host:port), in-process, and decodes
// the answer; header holds extra name, value pairs.
func (a *api) serveFrom(method, path, token, body, addr string, header ...string) response {
	a.t.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	req.RemoteAddr = addr
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	rec := httptest.NewRecorder()
	a.e.ServeHTTP(rec, req)
	checkResponse(a.t, method, path, rec.Code, rec.Header(), rec.Body.Bytes())
	out := response{Status: rec.Code, Header: rec.Header(), Raw: rec.Body.String()}
	if rec.Body.Len() > 0 {
		if err := json.Unmarshal(rec.Body.Bytes(), &out.Body); err != nil {
			a.t.Fatalf("%s %s: body is not a JSON object: %q", method, path, rec.Body)
		}
	}
	return out
}

// fulfill persists every reservation queued so far, as a worker would.
func (a *api) fulfillAll() {
	a.t.Helper()
	ds, err := a.queue.Read(context.Background(), 1000, time.Millisecond)
	if err != nil {
		a.t.Fatal(err)
	}
	if _, err := a.fulfill.Handle(context.Background(), ds); err != nil {
		a.t.Fatal(err)
	}
}
