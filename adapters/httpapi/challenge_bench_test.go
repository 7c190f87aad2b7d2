package httpapi_test

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/seckill/seckill/adapters/redisstore"
	"github.com/seckill/seckill/adapters/system"
	"github.com/seckill/seckill/domain"
)

// BenchmarkGrabProofOfWork measures what a proof of work costs the service, against
// the plain grab in the same run, over loopback HTTP as BenchmarkGrab: "plain" grabs a
// voucher without a challenge, "pow" one with, every grab carrying its user's solved
// challenge (one SHA-256 and one Redis call more). The challenges are issued and
// solved before the clock starts, at 1 bit: solving is the client's work, and checking
// costs the service the same whatever the difficulty.
func BenchmarkGrabProofOfWork(b *testing.B) {
	for _, pow := range []bool{false, true} {
		name := map[bool]string{false: "plain", true: "pow"}[pow]
		b.Run(name, func(b *testing.B) {
			a := newAPI(b)
			var id string
			if pow {
				id = a.createPowVoucher(10_000_000, 1)
			} else {
				id = a.createVoucher(10_000_000, 1)
			}
			vid, _ := domain.ParseVoucherID(id)
			challenges := redisstore.NewProofOfWork(a.redis, redisstore.Options{Prefix: a.stock.Keys().Prefix}, system.Clock{})
			tokens, proofs := make([]string, b.N), make([]string, b.N)
			for i := range tokens {
				user := domain.UserID(1000 + i)
				tokens[i] = a.token(user, false)
				if pow {
					offer, err := challenges.Issue(context.Background(), vid, user, 1)
					if err != nil {
						b.Fatal(err)
					}
					proofs[i] = offer.Challenge + ":" + domain.SolvePow(offer.Challenge, offer.Difficulty)
				}
			}
			url := a.url + "/api/v1/vouchers/" + id + "/grab"
			c := benchClient()
			var next atomic.Int64
			b.SetParallelism(benchParallelism)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					i := int(next.Add(1) - 1)
					req, _ := http.NewRequest(http.MethodPost, url, nil)
					req.Header.Set("Authorization", "Bearer "+tokens[i])
					if proofs[i] != "" {
						req.Header.Set("X-Seckill-Pow", proofs[i])
					}
					res, err := c.Do(req)
					if err != nil {
						b.Error(err)
						return
					}
					_ = res.Body.Close()
					if res.StatusCode != http.StatusAccepted {
						b.Errorf("status %d, want 202", res.StatusCode)
					}
				}
			})
			b.StopTimer()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "grabs/s")
		})
	}
}
