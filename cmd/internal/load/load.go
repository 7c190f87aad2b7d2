// Package load fires a flash sale over real HTTP at a running seckill and measures it:
// every user grabs one voucher (a fraction of them twice), a bounded number of
// requests in flight over a pool of keep-alive connections, and the answers are
// tallied, timed and checked against the three promises by the orders the store then
// holds (Run, CheckStore, Report). Sell puts a voucher on sale and does all of it; the
// service and the secret come from the caller: `seckill-lab demo` starts one,
// `seckill-lab loadtest` is given one, `seckill-lab compare` starts one per stock
// strategy.
package load

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// TokenSource returns a bearer token for user, with the admin role when admin is set.
type TokenSource func(user int64, admin bool) (string, error)

// Options describe one flash sale.
type Options struct {
	// Base is the service's base URL, e.g. http://127.0.0.1:8080.
	Base string
	// Voucher is the id of the voucher on sale.
	Voucher string
	// Tokens mints the users' tokens (all minted before the first request).
	Tokens TokenSource
	// Users is the number of distinct users; user ids run from FirstUser.
	Users int
	// Dup is the fraction (0..1) of users that send their grab twice.
	Dup float64
	// Concurrency is how many requests are in flight at once; the connection pool
	// keeps as many keep-alive connections.
	Concurrency int
	// Seed makes the order of the requests (and which users repeat) reproducible.
	Seed uint64
	// FirstUser is the first user id; default 1.
	FirstUser int64
	// RequestTimeout bounds each request; default 30s.
	RequestTimeout time.Duration
	// Progress, when set, receives a progress line (rewritten with \r) while the
	// requests run, and a newline at the end.
	Progress io.Writer
}

// Grab is one request and its answer.
type Grab struct {
	User    int64
	Status  int    // 0 when no answer came (see Err)
	Code    string // the error code of a 4xx/5xx answer
	OrderID string // the order a 202 or an already_purchased answer names
	Latency time.Duration
	Err     error // a transport failure
}

// Reservation is a 202: the user and the order id it named.
type Reservation struct {
	User    int64  `json:"user"`
	OrderID string `json:"order_id"`
}

// maxExamples is how many distinct examples of "other" answers a Result keeps.
const maxExamples = 5

// Result is the tally of a flash sale.
type Result struct {
	Requests         int
	Reserved         int
	SoldOut          int
	AlreadyPurchased int
	// Other counts every other answer, transport failures included.
	Other int
	// Answered counts the requests that got an HTTP answer, whatever its status.
	Answered int
	// OtherExamples are up to five distinct descriptions of other answers.
	OtherExamples []string
	// Mean, P50, P99 and Max are latencies of the requests that got an answer.
	Mean, P50, P99, Max time.Duration
	// Elapsed runs from the first request to the last answer.
	Elapsed time.Duration
	// RPS is Requests per second of Elapsed.
	RPS float64
	// Reservations are the 202 answers, in the order they were sent.
	Reservations []Reservation
	// Unanswered are the users of the grabs that got no sale's answer (the "other"
	// answers, transport failures included), once per grab.
	Unanswered []int64
}

// Plan returns the user of each request in the order they are sent: users ids
// first..first+users-1, round(users*dup) of them twice, shuffled with seed so the
// repeats are interleaved with the rest.
func Plan(users int, dup float64, seed uint64, first int64) []int64 {
	if users <= 0 {
		return nil
	}
	r := rand.New(rand.NewPCG(seed, seed^0x5ec1d11))
	twice := min(users, max(0, int(math.Round(float64(users)*dup))))
	plan := make([]int64, 0, users+twice)
	for i := range users {
		plan = append(plan, first+int64(i))
	}
	for _, i := range r.Perm(users)[:twice] {
		plan = append(plan, first+int64(i))
	}
	r.Shuffle(len(plan), func(i, j int) { plan[i], plan[j] = plan[j], plan[i] })
	return plan
}

// Run mints a token per user, then sends every grab of Plan with Concurrency requests
// in flight and returns the tally. A cancelled ctx stops sending; Run then returns
// what was answered so far and ctx's error.
func Run(ctx context.Context, opts Options) (Result, error) {
	if err := opts.check(); err != nil {
		return Result{}, err
	}
	if opts.FirstUser == 0 {
		opts.FirstUser = 1
	}
	if opts.RequestTimeout <= 0 {
		opts.RequestTimeout = 30 * time.Second
	}
	plan := Plan(opts.Users, opts.Dup, opts.Seed, opts.FirstUser)
	tokens := make(map[int64]string, opts.Users)
	for _, u := range plan {
		if _, ok := tokens[u]; ok {
			continue
		}
		tok, err := opts.Tokens(u, false)
		if err != nil {
			return Result{}, fmt.Errorf("token for user %d: %w", u, err)
		}
		tokens[u] = tok
	}

	client := NewClient(opts.Concurrency, opts.RequestTimeout)
	defer client.CloseIdleConnections()
	path := strings.TrimRight(opts.Base, "/") + "/api/v1/vouchers/" + url.PathEscape(opts.Voucher) + "/grab"

	grabs := make([]Grab, len(plan))
	var done atomic.Int64
	stopProgress := progress(opts.Progress, &done, len(plan))
	jobs := make(chan int)
	var wg sync.WaitGroup
	began := time.Now()
	for range min(opts.Concurrency, len(plan)) {
		wg.Go(func() {
			for i := range jobs {
				grabs[i] = grab(ctx, client, path, plan[i], tokens[plan[i]])
				done.Add(1)
			}
		})
	}
	sent := len(plan)
feed:
	for i := range plan {
		select {
		case jobs <- i:
		case <-ctx.Done():
			sent = i
			break feed
		}
	}
	close(jobs)
	wg.Wait()
	elapsed := time.Since(began)
	stopProgress()
	res := Summarize(grabs[:sent], elapsed)
	return res, ctx.Err()
}

func (o Options) check() error {
	switch {
	case o.Base == "":
		return errors.New("load: no base URL")
	case o.Voucher == "":
		return errors.New("load: no voucher")
	case o.Tokens == nil:
		return errors.New("load: no token source")
	case o.Users < 1:
		return fmt.Errorf("load: users %d, want at least 1", o.Users)
	case o.Dup < 0 || o.Dup > 1 || math.IsNaN(o.Dup):
		return fmt.Errorf("load: dup %v, want 0..1", o.Dup)
	case o.Concurrency < 1:
		return fmt.Errorf("load: concurrency %d, want at least 1", o.Concurrency)
	}
	return nil
}

// NewClient returns an HTTP client whose pool keeps up to conns keep-alive
// connections to one host, with each request bounded by timeout.
func NewClient(conns int, timeout time.Duration) *http.Client {
	return &http.Client{
		Timeout: timeout,
		Transport: &http.Transport{
			Proxy:               http.ProxyFromEnvironment,
			DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
			MaxIdleConns:        conns,
			MaxIdleConnsPerHost: conns,
			IdleConnTimeout:     90 * time.Second,
			DisableCompression:  true,
		},
	}
}

// grab sends one grab and reads its answer to the last byte.
func grab(ctx context.Context, client *http.Client, path string, user int64, token string) Grab {
	g := Grab{User: user}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, path, http.NoBody)
	if err != nil {
		g.Err = err
		return g
	}
	req.Header.Set("Authorization", "Bearer "+token)
	start := time.Now()
	res, err := client.Do(req)
	if err != nil {
		g.Err = err
		g.Latency = time.Since(start)
		return g
	}
	body, err := io.ReadAll(res.Body)
	_ = res.Body.Close()
	g.Latency = time.Since(start)
	g.Status = res.StatusCode
	if err != nil {
		g.Err = err
		return g
	}
	g.Code, g.OrderID = DecodeGrab(body)
	return g
}

// DecodeGrab reads a grab's answer: the error code of a refusal, and the order id of a
// 202 or of an already_purchased refusal. A body that is not the contract's JSON gives
// empty strings.
func DecodeGrab(body []byte) (code, orderID string) {
	var decoded struct {
		OrderID string `json:"order_id"`
		Error   struct {
			Code    string `json:"code"`
			OrderID string `json:"order_id"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &decoded) != nil {
		return "", ""
	}
	if decoded.OrderID == "" {
		decoded.OrderID = decoded.Error.OrderID
	}
	return decoded.Error.Code, decoded.OrderID
}

// progress writes "\r  done/total requests  pct%" to w until the returned function
// is called, which writes the final line. A nil w writes nothing.
func progress(w io.Writer, done *atomic.Int64, total int) (stop func()) {
	if w == nil {
		return func() {}
	}
	line := func() {
		n := done.Load()
		fmt.Fprintf(w, "\r  %d/%d requests  %d%%", n, total, n*100/int64(max(total, 1)))
	}
	quit := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			line()
			select {
			case <-quit:
				return
			case <-t.C:
			}
		}
	}()
	return func() {
		close(quit)
		<-finished
		line()
		fmt.Fprintln(w)
	}
}

// Summarize tallies grabs that took elapsed in all.
func Summarize(grabs []Grab, elapsed time.Duration) Result {
	res := Result{Requests: len(grabs), Elapsed: elapsed}
	latencies := make([]time.Duration, 0, len(grabs))
	for _, g := range grabs {
		if g.Err == nil && g.Status != 0 {
			latencies = append(latencies, g.Latency)
		}
		switch {
		case g.Err == nil && g.Status == http.StatusAccepted:
			res.Reserved++
			res.Reservations = append(res.Reservations, Reservation{User: g.User, OrderID: g.OrderID})
		case g.Err == nil && g.Status == http.StatusConflict && g.Code == "sold_out":
			res.SoldOut++
		case g.Err == nil && g.Status == http.StatusConflict && g.Code == "already_purchased":
			res.AlreadyPurchased++
		default:
			res.Other++
			res.Unanswered = append(res.Unanswered, g.User)
			if ex := describe(g); len(res.OtherExamples) < maxExamples && !slices.Contains(res.OtherExamples, ex) {
				res.OtherExamples = append(res.OtherExamples, ex)
			}
		}
	}
	res.Answered = len(latencies)
	slices.Sort(latencies)
	if len(latencies) > 0 {
		var sum time.Duration
		for _, l := range latencies {
			sum += l
		}
		res.Mean = sum / time.Duration(len(latencies))
	}
	res.P50 = Percentile(latencies, 50)
	res.P99 = Percentile(latencies, 99)
	if len(latencies) > 0 {
		res.Max = latencies[len(latencies)-1]
	}
	if elapsed > 0 {
		res.RPS = float64(res.Requests) / elapsed.Seconds()
	}
	return res
}

// describe is a one-line description of an "other" answer.
func describe(g Grab) string {
	switch {
	case g.Err != nil && g.Status == 0:
		return "transport error: " + g.Err.Error()
	case g.Err != nil:
		return fmt.Sprintf("%d, body unreadable: %v", g.Status, g.Err)
	case g.Code != "":
		return fmt.Sprintf("%d %s", g.Status, g.Code)
	default:
		return fmt.Sprintf("%d %s", g.Status, http.StatusText(g.Status))
	}
}

// Percentile returns the nearest-rank p-th percentile (0 < p <= 100) of sorted
// latencies, or 0 when there are none.
func Percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(math.Ceil(p / 100 * float64(len(sorted))))
	return sorted[min(max(rank, 1), len(sorted))-1]
}

// Served is the number of requests answered as a sale answers: reserved, sold out or
// already purchased. None means the sale was never served (the service was down, or
// failed every request), whatever else the answers were.
func (r Result) Served() int { return r.Reserved + r.SoldOut + r.AlreadyPurchased }

// Oversold is the number of units reserved beyond stock.
func (r Result) Oversold(stock int) int {
	return max(0, r.Reserved-stock)
}

// Duplicates is the number of users that hold more than one distinct reserved order.
func (r Result) Duplicates() int {
	orders := map[int64]map[string]bool{}
	for _, res := range r.Reservations {
		if orders[res.User] == nil {
			orders[res.User] = map[string]bool{}
		}
		orders[res.User][res.OrderID] = true
	}
	n := 0
	for _, ids := range orders {
		if len(ids) > 1 {
			n++
		}
	}
	return n
}

// apiError is the answer of an admin call that did not succeed.
func apiError(what string, res *http.Response) error {
	body, _ := io.ReadAll(io.LimitReader(res.Body, 4096))
	var decoded struct {
		Error struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	e := &StatusError{What: what, Status: res.StatusCode}
	if json.Unmarshal(body, &decoded) == nil && decoded.Error.Code != "" {
		e.Detail = decoded.Error.Code + ": " + decoded.Error.Message
	} else {
		e.Detail = strings.TrimSpace(string(bytes.ToValidUTF8(body, nil)))
	}
	return e
}

// StatusError is an answer with a status other than the one a call wanted.
type StatusError struct {
	// What names the call; Status is the answer's; Detail is its error code and
	// message, or its body.
	What   string
	Status int
	Detail string
}

func (e *StatusError) Error() string { return fmt.Sprintf("%s: %d %s", e.What, e.Status, e.Detail) }

// refused reports whether err is a 4xx answer: asking again would be answered the same.
func refused(err error) bool {
	var se *StatusError
	return errors.As(err, &se) && se.Status >= 400 && se.Status < 500
}
