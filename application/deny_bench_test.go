package application_test

import (
	"context"
	"testing"
	"time"

	"github.com/seckill/seckill/adapters/memory"
	"github.com/seckill/seckill/application"
	"github.com/seckill/seckill/domain"
)

// BenchmarkGrabVoucherDenyCheck measures the grab use case, on the in-memory stock,
// without a deny list and with one of 10,000 users that the grabbing users are not on:
// the cost of the check on the grab path of an unlisted user. Each operation is a
// grab answered sold_out by the instance's flag (no stock call), the cheapest grab
// there is, so the check's share is as large as it can be.
func BenchmarkGrabVoucherDenyCheck(b *testing.B) {
	ctx := context.Background()
	list := memory.NewDenyList()
	for u := domain.UserID(1); u <= 10_000; u++ {
		if _, err := list.Deny(ctx, domain.Denial{User: u}, domain.Author{}, nil); err != nil {
			b.Fatal(err)
		}
	}
	denied := application.NewDeniedUsers(list)
	if err := denied.Reload(ctx); err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct {
		name   string
		denied *application.DeniedUsers
	}{{"without", nil}, {"with10000", denied}} {
		b.Run(bc.name, func(b *testing.B) {
			f := newGrabFixture(b, domain.Voucher{Title: "t", Stock: 1, BeginsAt: t0, EndsAt: t0.Add(time.Hour), PerUserLimit: 1})
			grab := application.NewGrabVoucher(f.stock, f.clock, &memory.OrderIDs{}, nil,
				application.NewBuyerGate(f.vouchers, f.clock, application.GateOptions{SoldOutTTL: time.Hour, Denied: bc.denied}), application.GrabOptions{})
			if _, err := grab.Handle(ctx, application.GrabVoucherCmd{VoucherID: f.id, UserID: 20_000, Quantity: 1}); err != nil {
				b.Fatal(err)
			}
			if _, err := grab.Handle(ctx, application.GrabVoucherCmd{VoucherID: f.id, UserID: 20_001, Quantity: 1}); err == nil {
				b.Fatal("the second grab was not sold out")
			}
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				u := domain.UserID(30_000)
				for pb.Next() {
					u++
					_, _ = grab.Handle(ctx, application.GrabVoucherCmd{VoucherID: f.id, UserID: u, Quantity: 1})
				}
			})
		})
	}
}
