package ordertest

import (
	"errors"
	"testing"
	"time"

	"github.com/seckill/seckill/domain"
	"github.com/seckill/seckill/ports"
)

// releasesTests hold ports.Releases to its contract.
var releasesTests = []test{
	{"UnreleasedMarkReleased", testUnreleasedMarkReleased},
}

func testUnreleasedMarkReleased(t *testing.T, f *fixture) {
	v := f.voucher(t, 3)
	r1, r2, r3, r4 := reserve(1, v, 1, 1), reserve(2, v, 1, 1), reserve(3, v, 3, 2), reserve(4, v, 4, 1)
	// r2 fails (user 1 holds r1), r4 fails (r1 and r3 fill the stock).
	wantResults(t, f.persist(t, r1, r2, r3, r4),
		result(r1, ports.Persisted), result(r2, ports.Failed), result(r3, ports.Persisted), result(r4, ports.Failed))

	unreleased := func(limit int) []domain.Order {
		t.Helper()
		got, err := f.Store.Unreleased(f.ctx, limit)
		if err != nil {
			t.Fatalf("Unreleased(%d): %v", limit, err)
		}
		return got
	}
	mark := func(ids ...domain.OrderID) {
		t.Helper()
		if err := f.Store.MarkReleased(f.ctx, ids...); err != nil {
			t.Fatalf("MarkReleased(%v): %v", ids, err)
		}
	}
	failed2, failed4 := asOrder(r2, domain.StatusFailed), asOrder(r4, domain.StatusFailed)
	wantOrders(t, "after Persist, Unreleased", unreleased(10), failed2, failed4)

	// Closing orders adds them, in the order they closed.
	if _, err := f.Store.Transition(f.ctx, r1.OrderID, 1, domain.StatusCancelled, nil); err != nil {
		t.Fatalf("cancel: %v", err)
	}
	if _, err := f.Store.ExpireDue(f.ctx, t0.Add(time.Hour), 0, 10); err != nil {
		t.Fatalf("expire: %v", err)
	}
	cancelled1, expired3 := asOrder(r1, domain.StatusCancelled), asOrder(r3, domain.StatusExpired)
	wantOrders(t, "after closing, Unreleased", unreleased(10), failed2, failed4, cancelled1, expired3)
	wantOrders(t, "Unreleased(2)", unreleased(2), failed2, failed4)

	// Live orders never appear, and are not marked: marking one would lose its units
	// when it closes later.
	r5, r6 := reserve(5, v, 5, 1), reserve(6, v, 6, 1)
	f.persisted(t, r5, r6)
	if _, err := f.Store.Transition(f.ctx, r5.OrderID, 5, domain.StatusPaid, nil); err != nil {
		t.Fatalf("pay: %v", err)
	}
	mark(r5.OrderID, r6.OrderID, orderID(99))
	wantOrders(t, "with live orders, Unreleased", unreleased(10), failed2, failed4, cancelled1, expired3)

	// Marked orders leave; marking again changes nothing.
	mark(r2.OrderID, r1.OrderID, r2.OrderID)
	wantOrders(t, "after marking, Unreleased", unreleased(10), failed4, expired3)
	mark(r2.OrderID, r1.OrderID)
	wantOrders(t, "after marking again, Unreleased", unreleased(10), failed4, expired3)

	// The live order that was not marked shows up once it closes.
	if _, err := f.Store.Transition(f.ctx, r6.OrderID, 6, domain.StatusCancelled, nil); err != nil {
		t.Fatalf("cancel: %v", err)
	}
	mark(r4.OrderID, r3.OrderID)
	wantOrders(t, "Unreleased", unreleased(10), asOrder(r6, domain.StatusCancelled))
	mark(r6.OrderID)
	wantEmpty(t, "with everything released, Unreleased", unreleased(10))
	mark()

	for _, limit := range []int{0, -1} {
		_, err := f.Store.Unreleased(f.ctx, limit)
		var verr *domain.ValidationError
		if !errors.As(err, &verr) || verr.Field != "limit" {
			t.Fatalf("Unreleased(%d): %v, want a *domain.ValidationError on limit", limit, err)
		}
	}
}
