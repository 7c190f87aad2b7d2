package application_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/seckill/seckill/adapters/memory"
	"github.com/seckill/seckill/application"
	"github.com/seckill/seckill/domain"
)

// tickingClock moves a second forward each time it is read, so a round's budget runs
// out after a known number of reads.
type tickingClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *tickingClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(time.Second)
	return c.now
}

func TestReconcileRoundsCarryOnWhereTheyStopped(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	vouchers, stock := memory.NewVouchers(), memory.NewStock()
	orders := memory.NewOrders(vouchers)
	clock := &tickingClock{now: t0}
	create := application.NewCreateVoucher(vouchers, stock, memory.NewClock(t0))
	var ids []domain.VoucherID
	for range 3 {
		v, err := create.Handle(ctx, application.CreateVoucherCmd{Title: "v", Stock: 5,
			BeginsAt: t0, EndsAt: t0.Add(24 * time.Hour), PerUserLimit: 1})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, v.ID)
	}
	rc := application.NewReconcile(vouchers, stock, orders, application.NewCompensate(stock, orders), newRecover(vouchers, stock, orders, clock), vouchers.Log, clock, application.ReconcileOptions{Grace: time.Minute, KeyGrace: time.Hour})

	// A budget of a second: one voucher per round (the clock ticks once per read).
	var checked []domain.VoucherID
	after := domain.VoucherID(0)
	for round := 0; ; round++ {
		if round > 5 {
			t.Fatalf("more than 5 rounds: %v", checked)
		}
		res, err := rc.Round(ctx, application.RoundCmd{After: after, Budget: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Reports) != 1 || len(res.Unchecked) != 0 {
			t.Fatalf("round %d = %+v, want one voucher checked", round, res)
		}
		checked = append(checked, res.Reports[0].VoucherID)
		if after = res.Next; after == 0 {
			break
		}
	}
	if !slices.Equal(checked, ids) {
		t.Fatalf("rounds checked %v, want %v", checked, ids)
	}

	// A Redis that fails: every voucher is reported unchecked, and the round goes on
	// past each one to the end instead of retrying it.
	stock.Err = errors.New("redis down")
	res, err := rc.Round(ctx, application.RoundCmd{Budget: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	var unchecked []domain.VoucherID
	for _, u := range res.Unchecked {
		unchecked = append(unchecked, u.VoucherID)
	}
	if !slices.Equal(unchecked, ids) || len(res.Reports) != 0 || res.Next != 0 {
		t.Fatalf("round with redis down = %+v, want all %v unchecked", res, ids)
	}
}
