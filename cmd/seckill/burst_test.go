package main

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/seckill/seckill/adapters/testenv"
	"github.com/seckill/seckill/cmd/internal/burst"
	"github.com/seckill/seckill/domain"
)

// TestReferenceBurst is the seeds' reference load through the real binary, HTTP, Redis
// and PostgreSQL: 5,000 grabs at the same instant (4,950 users, 50 of them twice), each
// on its own connection, for 100 units. On a quiet machine every grab gets a true
// answer at once (no 5xx). On one whose CPUs other processes keep busy a grab may
// instead be told the instance is overloaded — the contract's 503 unavailable, within
// a second rather than late — and its client tries again after the Retry-After, as
// clients do; every grab then ends with a true answer. Either way exactly the stock is
// sold, one order to each of distinct users: its 202 names it, or, for a grab whose
// answer was a 503, the already_purchased of its next try does.
func TestReferenceBurst(t *testing.T) {
	t.Run("quiet", func(t *testing.T) { referenceBurst(t, startInstance(t), false) })
	t.Run("busy", func(t *testing.T) {
		in := startInstance(t)
		t.Logf("%d CPU hogs", testenv.Hog(t))
		referenceBurst(t, in, true)
	})
}

// burstRetries bounds the rounds in which a busy burst's overloaded grabs try again.
const burstRetries = 20

// retryOverloaded sends again, a second later (the answer's Retry-After), each of reqs
// whose result is the contract's overloaded answer (503 unavailable), as a client does,
// round after round until none is, and puts the new answers in results. It returns the
// indexes of the requests answered 503 at least once; burstRetries rounds without an
// end fail the test.
func (in *instance) retryOverloaded(reqs []burst.Request, results []burst.Result) map[int]bool {
	in.t.Helper()
	overloaded := map[int]bool{}
	for round := 0; ; round++ {
		var again []int
		for i, r := range results {
			if r.Err == nil && r.Status == http.StatusServiceUnavailable && r.Code == "unavailable" {
				again = append(again, i)
			}
		}
		if len(again) == 0 {
			return overloaded
		}
		if round == burstRetries {
			in.t.Fatalf("%d grabs still answered 503 after %d tries; the service logged:\n%s", len(again), burstRetries, in.logs)
		}
		for _, i := range again {
			overloaded[i] = true
		}
		time.Sleep(time.Second)
		retry := make([]burst.Request, len(again))
		for j, i := range again {
			retry[j] = reqs[i]
		}
		answers, _, err := burst.Fire(context.Background(), in.base, retry, burst.Options{})
		if err != nil {
			in.t.Fatal(err)
		}
		for j, i := range again {
			results[i] = answers[j]
		}
	}
}

func referenceBurst(t *testing.T, in *instance, busy bool) {
	const stock, users, twice = 100, 4950, 50
	id := in.createVoucher(stock, 1)

	reqs := make([]burst.Request, 0, users+twice)
	userOf := make([]string, 0, users+twice) // each request's user id
	for i := range users + twice {
		u := domain.UserID(1001 + i%users)
		reqs = append(reqs, burst.Request{Path: "/api/v1/vouchers/" + id + "/grab", Token: in.token(u, false)})
		userOf = append(userOf, strconv.FormatInt(int64(u), 10))
	}
	results, took, err := burst.Fire(context.Background(), in.base, reqs, burst.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var overloaded map[int]bool
	if busy {
		overloaded = in.retryOverloaded(reqs, results)
	}

	// Each user's order: named by its 202, or by an already_purchased answer (a grab
	// answered 503 whose call Redis did judge — a reply lost to a timeout — is found so).
	orderOf := map[string]string{} // user id → order id
	counts := map[string]int{}
	for i, r := range results {
		if r.Err != nil {
			t.Fatalf("request %d: %v", i, r.Err)
		}
		switch {
		case r.Status == http.StatusAccepted && counts["reserved"] == stock:
			t.Fatalf("request %d: a 202 beyond the %d units", i, stock)
		case r.Status == http.StatusAccepted || r.Status == http.StatusConflict && r.Code == "already_purchased":
			if r.Status == http.StatusAccepted {
				counts["reserved"]++
			} else {
				counts[r.Code]++
			}
			if r.OrderID == "" {
				t.Fatalf("request %d: %d %q names no order", i, r.Status, r.Code)
			}
			if o, ok := orderOf[userOf[i]]; ok && o != r.OrderID {
				t.Fatalf("user of request %d has two orders: %s and %s", i, o, r.OrderID)
			}
			orderOf[userOf[i]] = r.OrderID
		case r.Status == http.StatusConflict && r.Code == "sold_out":
			counts[r.Code]++
		default:
			t.Fatalf("request %d: unexpected answer %d %q; the service logged:\n%s", i, r.Status, r.Code, in.logs)
		}
	}
	t.Logf("burst of %d cleared in %v: %v (%d grabs answered 503 unavailable, tried again)", len(reqs), took, counts, len(overloaded))
	vid, err := domain.ParseVoucherID(id)
	if err != nil {
		t.Fatal(err)
	}
	// The reservations Redis holds: one per user, each the order that user was told of.
	entries, err := in.redis.XRange(context.Background(), in.keys.Stream(vid), "-", "+").Result()
	if err != nil {
		t.Fatal(err)
	}
	held := map[string]string{} // user id → order id
	for _, e := range entries {
		f := strings.Split(fmt.Sprint(e.Values["r"]), ":") // user:qty:at_ms:order
		if len(f) != 4 {
			t.Fatalf("stream entry %v: r is not user:qty:at_ms:order", e.Values)
		}
		if _, twice := held[f[0]]; twice {
			t.Fatalf("user %s holds two reservations", f[0])
		}
		held[f[0]] = f[3]
	}
	if len(held) != stock {
		t.Fatalf("users holding a reservation = %d, want %d", len(held), stock)
	}
	for user, order := range orderOf {
		if held[user] != order {
			t.Fatalf("user %s was told of order %s; Redis holds %q for it", user, order, held[user])
		}
	}
	if !busy && counts["reserved"] != stock {
		t.Fatalf("reserved = %d, want %d", counts["reserved"], stock)
	}
	if status, v := in.call(http.MethodGet, "/api/v1/vouchers/"+id, "", nil); status != http.StatusOK || v["remaining"] != 0.0 {
		t.Fatalf("voucher after the burst: %d %v", status, v)
	}
	if got, want := in.streamLen(id), int64(stock); got != want {
		t.Fatalf("stream entries = %d, want %d", got, want)
	}
}
