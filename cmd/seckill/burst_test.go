package main

import (
	"context"
	"net/http"
	"testing"

	"github.com/seckill/seckill/adapters/testenv"
	"github.com/seckill/seckill/cmd/internal/burst"
	"github.com/seckill/seckill/domain"
)

// TestReferenceBurst is the seeds' reference load through the real binary, HTTP, Redis
// and PostgreSQL: 5,000 grabs at the same instant (4,950 users, 50 of them twice), each
// on its own connection, for 100 units — on a quiet machine, and on one whose CPUs
// other processes keep busy: either way every grab gets a true answer (no 5xx), and
// exactly the stock is sold, to distinct users.
func TestReferenceBurst(t *testing.T) {
	t.Run("quiet", func(t *testing.T) { referenceBurst(t, startInstance(t)) })
	t.Run("busy", func(t *testing.T) {
		in := startInstance(t)
		t.Logf("%d CPU hogs", testenv.Hog(t))
		referenceBurst(t, in)
	})
}

func referenceBurst(t *testing.T, in *instance) {
	const stock, users, twice = 100, 4950, 50
	id := in.createVoucher(stock, 1)

	reqs := make([]burst.Request, 0, users+twice)
	for u := 1; u <= users; u++ {
		reqs = append(reqs, burst.Request{Path: "/api/v1/vouchers/" + id + "/grab", Token: in.token(domain.UserID(1000+u), false)})
	}
	for u := 1; u <= twice; u++ {
		reqs = append(reqs, burst.Request{Path: "/api/v1/vouchers/" + id + "/grab", Token: in.token(domain.UserID(1000+u), false)})
	}
	results, took, err := burst.Fire(context.Background(), in.base, reqs, burst.Options{})
	if err != nil {
		t.Fatal(err)
	}

	winners := map[string]bool{} // the tokens (users) that got a 202
	orders := map[string]bool{}
	counts := map[string]int{}
	for i, r := range results {
		if r.Err != nil {
			t.Fatalf("request %d: %v", i, r.Err)
		}
		switch {
		case r.Status == http.StatusAccepted:
			counts["reserved"]++
			if winners[reqs[i].Token] {
				t.Fatalf("user of request %d reserved twice", i)
			}
			winners[reqs[i].Token] = true
			orders[r.OrderID] = true
		case r.Status == http.StatusConflict && (r.Code == "sold_out" || r.Code == "already_purchased"):
			counts[r.Code]++
		default:
			t.Fatalf("request %d: unexpected answer %d %q; the service logged:\n%s", i, r.Status, r.Code, in.logs)
		}
	}
	t.Logf("burst of %d cleared in %v: %v", len(reqs), took, counts)
	if got, want := counts["reserved"], stock; got != want {
		t.Fatalf("reserved = %d, want %d", got, want)
	}
	if got, want := len(orders), stock; got != want {
		t.Fatalf("distinct order ids = %d, want %d", got, want)
	}
	if status, v := in.call(http.MethodGet, "/api/v1/vouchers/"+id, "", nil); status != http.StatusOK || v["remaining"] != 0.0 {
		t.Fatalf("voucher after the burst: %d %v", status, v)
	}
	if got, want := in.streamLen(id), int64(stock); got != want {
		t.Fatalf("stream entries = %d, want %d", got, want)
	}
}
