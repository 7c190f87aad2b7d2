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
// clients do; every grab then ends with a true answer (fire). Either way Redis holds
// exactly the stock, one reservation to each of distinct users, and each order a user
// was told of (a 202, or the already_purchased of a retry) is the one it holds.
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
	const stock = 100
	id := in.createVoucher(stock, 1)
	g := (&fulfillInstance{instance: in}).fire(id, burstUsers(1001, 4950, 50), busy)
	if !busy && g.counts["reserved"] != stock {
		t.Fatalf("reserved = %d, want %d", g.counts["reserved"], stock)
	}
	vid, err := domain.ParseVoucherID(id)
	if err != nil {
		t.Fatal(err)
	}
	// The reservations Redis holds: one per user, each the order that user was told of
	// (a user a 503 left unsure may hold one no answer named).
	entries, err := in.redis.XRange(context.Background(), in.keys.Stream(vid), "-", "+").Result()
	if err != nil {
		t.Fatal(err)
	}
	held := map[int64]string{} // user → order id
	for _, e := range entries {
		f := strings.Split(fmt.Sprint(e.Values["r"]), ":") // user:qty:at_ms:order
		user, err := strconv.ParseInt(f[0], 10, 64)
		if len(f) != 4 || err != nil {
			t.Fatalf("stream entry %v: r is not user:qty:at_ms:order", e.Values)
		}
		if _, twice := held[user]; twice {
			t.Fatalf("user %d holds two reservations", user)
		}
		held[user] = f[3]
	}
	if len(held) != stock {
		t.Fatalf("users holding a reservation = %d, want %d", len(held), stock)
	}
	for user, order := range g.holder {
		if held[user] != order {
			t.Fatalf("user %d was told of order %s; Redis holds %q for it", user, order, held[user])
		}
	}
	if status, v := in.call(http.MethodGet, "/api/v1/vouchers/"+id, "", nil); status != http.StatusOK || v["remaining"] != 0.0 {
		t.Fatalf("voucher after the burst: %d %v", status, v)
	}
	if got, want := in.streamLen(id), int64(stock); got != want {
		t.Fatalf("stream entries = %d, want %d", got, want)
	}
}
