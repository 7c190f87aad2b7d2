package httpapi

import (
	"context"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/seckill/seckill/adapters/memory"
	"github.com/seckill/seckill/domain"
	"github.com/seckill/seckill/ports"
)

// A listener that does not keep up is dropped, never waited for: the others still get
// every event, and an order's change wakes only its own streams.
func TestSlowListenerIsDropped(t *testing.T) {
	changes := memory.NewChanges()
	s := NewStreams(StreamOptions{Changes: changes})
	s.metrics = NewMetrics(prometheus.NewRegistry())
	ctx := context.Background()
	slow, quick := voucherListener(), voucherListener()
	mine, other := orderListener("01KB0000000000000000000001"), orderListener("01KB0000000000000000000002")
	var ts []*topic
	for _, l := range []*listener{slow, quick, mine, other} {
		ts = append(ts, s.join(ctx, 7, l))
	}
	t.Cleanup(func() {
		for i, l := range []*listener{slow, quick, mine, other} {
			s.leave(ts[i], l)
		}
	})
	for i := range clientBuffer + 1 {
		ts[0].broadcast([]byte{byte(i)}, s.metrics)
		<-quick.events // the quick one reads each at once
	}
	select {
	case <-slow.gone:
	default:
		t.Fatal("the slow listener was not dropped")
	}
	if got := gatherCounter(t, s.metrics.Registry(), "seckill_streams_dropped_total"); got != 1 {
		t.Fatalf("dropped: %v, want 1", got)
	}
	if err := changes.Publish(ctx, ports.Change{Voucher: 7, Order: mine.order}, ports.Change{Voucher: 7, Order: mine.order}); err != nil {
		t.Fatal(err)
	}
	if len(mine.wake) != 1 || len(other.wake) != 0 {
		t.Fatalf("wakes: mine %d, other %d", len(mine.wake), len(other.wake))
	}
	if s.topics[domain.VoucherID(7)] != ts[0] {
		t.Fatal("one topic per voucher")
	}
}

// gatherCounter returns the value of the counter name on reg.
func gatherCounter(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			return mf.GetMetric()[0].GetCounter().GetValue()
		}
	}
	t.Fatalf("no metric %s", name)
	return 0
}
