package sqlstore_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/seckill/seckill/adapters/sqlstore"
	"github.com/seckill/seckill/domain"
	"github.com/seckill/seckill/ports"
)

// outboxFixture is a migrated database with repositories that write webhook events.
type outboxFixture struct {
	orderFixture
	hooks *sqlstore.Webhooks
}

func newOutboxFixture(t *testing.T) outboxFixture {
	t.Helper()
	f := newOrderFixture(t)
	f.orders, f.vouchers = f.orders.WithOutbox(), f.vouchers.WithOutbox()
	return outboxFixture{orderFixture: f, hooks: sqlstore.NewWebhooks(f.db)}
}

// events returns "type subject" of every event in the outbox, oldest first: the
// subject is an order's id or a voucher's id.
func (f outboxFixture) events(t *testing.T) []string {
	t.Helper()
	ds, err := f.hooks.List(context.Background(), ports.DeliveryQuery{Limit: 1000})
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	out := make([]string, 0, len(ds))
	for _, d := range slices.Backward(ds) {
		switch {
		case d.Order != nil:
			out = append(out, fmt.Sprintf("%s %s", d.Type, d.Order.ID))
		case d.Voucher != nil:
			out = append(out, fmt.Sprintf("%s %s", d.Type, d.Voucher.ID))
		}
	}
	return out
}

func wantEvents(t *testing.T, got []string, want ...string) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Fatalf("events =\n%q\nwant\n%q", got, want)
	}
}

func TestOutboxPersistWritesOrderAndSoldOutEvents(t *testing.T) {
	f := newOutboxFixture(t)
	v := f.voucher(t, 2)
	// Order 1 and 2 fill the stock; 3 finds it full; 4 is user 1's second order.
	f.persist(t, reserve(1, v, 1, 1), reserve(2, v, 2, 1), reserve(3, v, 3, 1), reserve(4, v, 1, 1))
	got := f.events(t)
	slices.Sort(got[:4])
	wantEvents(t, got,
		"order.awaiting_payment "+string(orderID(1)),
		"order.awaiting_payment "+string(orderID(2)),
		"order.failed "+string(orderID(3)),
		"order.failed "+string(orderID(4)),
		"voucher.sold_out "+v.String())

	// A redelivery changes nothing, and writes nothing.
	f.persist(t, reserve(1, v, 1, 1), reserve(3, v, 3, 1))
	if n := len(f.events(t)); n != 5 {
		t.Fatalf("%d events after a redelivery, want 5", n)
	}
	ds, err := f.hooks.List(context.Background(), ports.DeliveryQuery{Status: domain.DeliveryPending, Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	sold := ds[0]
	if sold.Voucher == nil || sold.Voucher.Sold != 2 || sold.Voucher.Stock != 2 || sold.Status != domain.DeliveryPending || sold.Attempts != 0 {
		t.Fatalf("sold-out delivery = %+v", sold)
	}
}

func TestOutboxLifecycleWritesEvents(t *testing.T) {
	f := newOutboxFixture(t)
	v := f.voucher(t, 10)
	f.persisted(t, reserve(1, v, 1, 1), reserve(2, v, 2, 1), reserve(3, v, 3, 1))
	ctx := context.Background()
	if _, err := f.orders.Transition(ctx, orderID(1), 1, domain.StatusPaid, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := f.orders.Transition(ctx, orderID(2), 2, domain.StatusCancelled, nil); err != nil {
		t.Fatal(err)
	}
	// A transition refused writes nothing.
	if _, err := f.orders.Transition(ctx, orderID(1), 1, domain.StatusCancelled, nil); !errors.Is(err, domain.ErrInvalidState) {
		t.Fatalf("cancel a paid order: %v", err)
	}
	if _, err := f.orders.ExpireDue(ctx, t0.Add(time.Hour), 0, 10); err != nil {
		t.Fatal(err)
	}
	got := f.events(t)
	slices.Sort(got[:3])
	wantEvents(t, got,
		"order.awaiting_payment "+string(orderID(1)),
		"order.awaiting_payment "+string(orderID(2)),
		"order.awaiting_payment "+string(orderID(3)),
		"order.paid "+string(orderID(1)),
		"order.cancelled "+string(orderID(2)),
		"order.expired "+string(orderID(3)))
}

func TestOutboxRolledBackChangeLeavesNoEvent(t *testing.T) {
	f := newOutboxFixture(t)
	v := f.voucher(t, 10)
	f.persisted(t, reserve(1, v, 1, 1))
	ctx := context.Background()
	refuse := errors.New("refused")

	// The receipt's answer fails after the change and its event were written.
	_, err := f.orders.Transition(ctx, orderID(1), 1, domain.StatusPaid, &ports.Receipt[domain.Order]{
		Answer: func(domain.Order) (int, []byte, error) { return 0, nil, refuse },
	})
	if !errors.Is(err, refuse) {
		t.Fatalf("Transition: %v, want the answer's error", err)
	}
	_, err = f.vouchers.Update(ctx, v, ports.VoucherUpdate{Action: domain.AuditVoucherUpdate,
		Change: func(x domain.Voucher) (domain.Voucher, error) { x.Title = "renamed"; return x, nil },
		Commit: func(context.Context, domain.Voucher, domain.Voucher) error { return refuse },
	})
	if !errors.Is(err, refuse) {
		t.Fatalf("Update: %v, want Commit's error", err)
	}
	wantEvents(t, f.events(t), "order.awaiting_payment "+string(orderID(1)))

	// The same changes, committed, write their events.
	after, err := f.vouchers.Update(ctx, v, ports.VoucherUpdate{Action: domain.AuditVoucherPause,
		Change: func(x domain.Voucher) (domain.Voucher, error) { x.Paused = true; return x, nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	// A change of nothing writes nothing.
	if _, err := f.vouchers.Update(ctx, v, ports.VoucherUpdate{Action: domain.AuditVoucherPause,
		Change: func(x domain.Voucher) (domain.Voucher, error) { return x, nil },
	}); err != nil {
		t.Fatal(err)
	}
	wantEvents(t, f.events(t), "order.awaiting_payment "+string(orderID(1)), "voucher.updated "+v.String())
	ds, err := f.hooks.List(ctx, ports.DeliveryQuery{Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	if got := ds[0].Voucher; got == nil || !got.Paused || got.Version != after.Version || got.Sold != 1 {
		t.Fatalf("voucher.updated holds %+v, want the voucher paused as stored", got)
	}
}

func TestOutboxOffWritesNothing(t *testing.T) {
	f := newOrderFixture(t)
	v := f.voucher(t, 1)
	f.persisted(t, reserve(1, v, 1, 1))
	if _, err := f.orders.Transition(context.Background(), orderID(1), 1, domain.StatusPaid, nil); err != nil {
		t.Fatal(err)
	}
	n, err := sqlstore.NewWebhooks(f.db).Backlog(context.Background())
	if err != nil || n != 0 {
		t.Fatalf("Backlog = %d, %v; want 0 with the outbox off", n, err)
	}
}

func TestOutboxClaimRecordAndList(t *testing.T) {
	f := newOutboxFixture(t)
	v := f.voucher(t, 10)
	f.persisted(t, reserve(1, v, 1, 1), reserve(2, v, 2, 1), reserve(3, v, 3, 1))
	ctx := context.Background()
	at := time.Now().Add(time.Second)

	first, err := f.hooks.Claim(ctx, "", at, 2, time.Minute)
	if err != nil || len(first) != 2 {
		t.Fatalf("Claim = %d, %v; want 2", len(first), err)
	}
	second, err := f.hooks.Claim(ctx, "", at, 5, time.Minute)
	if err != nil || len(second) != 1 {
		t.Fatalf("second Claim = %d, %v; want the 1 left", len(second), err)
	}
	if none, _ := f.hooks.Claim(ctx, "", at, 5, time.Minute); len(none) != 0 {
		t.Fatalf("a third Claim took %d claimed deliveries", len(none))
	}
	// One delivered, one failed to be retried later, one given up.
	record := func(c ports.ClaimedDelivery, a ports.WebhookAttempt) {
		t.Helper()
		if ok, err := f.hooks.Record(ctx, c, a); err != nil || !ok {
			t.Fatalf("Record(%s) = %v, %v", c.ID, ok, err)
		}
	}
	record(first[0], ports.WebhookAttempt{At: at, Status: 204})
	record(first[1], ports.WebhookAttempt{At: at, Status: 500, Err: "answered 500", Next: at.Add(time.Hour)})
	record(second[0], ports.WebhookAttempt{At: at, Err: "timeout", GiveUp: true})
	// A claim recorded is over: recording under it again changes nothing.
	if ok, err := f.hooks.Record(ctx, first[0], ports.WebhookAttempt{At: at, Err: "late"}); err != nil || ok {
		t.Fatalf("Record under an ended claim = %v, %v; want false", ok, err)
	}
	if n, err := f.hooks.Backlog(ctx); err != nil || n != 1 {
		t.Fatalf("Backlog = %d, %v; want 1 (the one to retry)", n, err)
	}
	if due, _ := f.hooks.Claim(ctx, "", at, 5, time.Minute); len(due) != 0 {
		t.Fatalf("Claim took %d deliveries none of which is due", len(due))
	}
	retry, err := f.hooks.Claim(ctx, "", at.Add(2*time.Hour), 5, time.Minute)
	if err != nil || len(retry) != 1 || retry[0].ID != first[1].ID || retry[0].Attempts != 1 || retry[0].LastStatus != 500 {
		t.Fatalf("Claim after the back-off = %+v, %v; want %s again", retry, err, first[1].ID)
	}

	list := func(s domain.DeliveryStatus) []domain.Delivery {
		t.Helper()
		ds, err := f.hooks.List(ctx, ports.DeliveryQuery{Status: s, Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		return ds
	}
	if ds := list(domain.DeliveryDelivered); len(ds) != 1 || ds[0].DeliveredAt.IsZero() || ds[0].Attempts != 1 || ds[0].LastStatus != 204 {
		t.Fatalf("delivered = %+v", ds)
	}
	if ds := list(domain.DeliveryFailed); len(ds) != 2 {
		t.Fatalf("failed = %+v, want 2", ds)
	}
	all := list("")
	page, err := f.hooks.List(ctx, ports.DeliveryQuery{Before: all[0].ID, Limit: 10})
	if err != nil || len(page) != 2 || page[0].ID != all[1].ID {
		t.Fatalf("page after %s = %+v, %v", all[0].ID, page, err)
	}
}

// TestOutboxClaimsNeverOverlap claims from many goroutines at once (two instances'
// dispatchers, say): every delivery is claimed exactly once.
func TestOutboxClaimsNeverOverlap(t *testing.T) {
	f := newOutboxFixture(t)
	v := f.voucher(t, 1000)
	var rs []domain.Reservation
	for i := 1; i <= 200; i++ {
		rs = append(rs, reserve(i, v, int64(i), 1))
	}
	f.persisted(t, rs...)
	ctx := context.Background()
	at := time.Now().Add(time.Second)
	var mu sync.Mutex
	seen := make(map[string]int)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for {
				ds, err := f.hooks.Claim(ctx, "", at, 7, time.Minute)
				if err != nil {
					t.Error(err)
					return
				}
				if len(ds) == 0 {
					return
				}
				mu.Lock()
				for _, d := range ds {
					seen[d.ID]++
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(seen) != 200 {
		t.Fatalf("%d deliveries claimed, want 200", len(seen))
	}
	for id, n := range seen {
		if n != 1 {
			t.Fatalf("delivery %s claimed %d times", id, n)
		}
	}
}

func TestOutboxPurgeForgetsOnlyFinishedOldDeliveries(t *testing.T) {
	f := newOutboxFixture(t)
	v := f.voucher(t, 10)
	f.persisted(t, reserve(1, v, 1, 1), reserve(2, v, 2, 1), reserve(3, v, 3, 1))
	ctx := context.Background()
	at := time.Now().Add(time.Second)
	ds, err := f.hooks.Claim(ctx, "", at, 3, time.Minute)
	if err != nil || len(ds) != 3 {
		t.Fatalf("Claim = %d, %v", len(ds), err)
	}
	slices.SortFunc(ds, func(a, b ports.ClaimedDelivery) int { return strings.Compare(a.ID, b.ID) })
	for i, a := range []ports.WebhookAttempt{{At: at, Status: 200}, {At: at, Err: "x", GiveUp: true}, {At: at, Err: "x", Next: at}} {
		if ok, err := f.hooks.Record(ctx, ds[i], a); err != nil || !ok {
			t.Fatalf("Record: %v, %v", ok, err)
		}
	}
	// Events are younger than a cutoff of now minus a minute: nothing goes.
	if n, err := f.hooks.Purge(ctx, time.Now().Add(-time.Minute)); err != nil || n != 0 {
		t.Fatalf("Purge of nothing old = %d, %v", n, err)
	}
	// A cutoff after them takes the delivered and the given up, not the one to retry.
	if n, err := f.hooks.Purge(ctx, time.Now().Add(time.Minute)); err != nil || n != 2 {
		t.Fatalf("Purge = %d, %v; want 2", n, err)
	}
	left, err := f.hooks.List(ctx, ports.DeliveryQuery{Limit: 10})
	if err != nil || len(left) != 1 || left[0].ID != ds[2].ID {
		t.Fatalf("left = %+v, %v; want only %s", left, err, ds[2].ID)
	}
}
