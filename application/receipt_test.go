package application_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/seckill/seckill/adapters/memory"
	"github.com/seckill/seckill/application"
	"github.com/seckill/seckill/domain"
	"github.com/seckill/seckill/ports"
)

// lease is every claim's lease in these tests.
const lease = 7 * time.Second

// takenOver claims key of user at t0 and has a retry take it over once the lease
// passed: it returns the first claim, lost, and the retry's.
func takenOver(t *testing.T, keys ports.Idempotency, user domain.UserID, key string) (lost, held ports.KeyClaim) {
	t.Helper()
	ctx := context.Background()
	lost, _, err := keys.Claim(ctx, user, key, "fp", t0, lease)
	if err != nil || !lost.Held() {
		t.Fatalf("claim: %+v, %v", lost, err)
	}
	held, _, err = keys.Claim(ctx, user, key, "fp", t0.Add(lease), lease)
	if err != nil || !held.Held() {
		t.Fatalf("take over: %+v, %v", held, err)
	}
	return lost, held
}

// answered renders whatever it is given as 200 "answered".
func answered[T any](T) (int, []byte, error) { return 200, []byte("answered"), nil }

// wantAnswer fails unless key of user keeps status.
func wantAnswer(t *testing.T, keys ports.Idempotency, user domain.UserID, key string, status int) {
	t.Helper()
	c, kept, err := keys.Claim(context.Background(), user, key, "fp", t0.Add(lease), lease)
	if err != nil || c.Held() || kept.Status != status {
		t.Fatalf("key %q: held %v, kept %+v, %v; want status %d kept", key, c.Held(), kept, err, status)
	}
}

// TestCreateVoucherUnderALostClaim: a create whose key was taken over stores nothing
// and loads nothing into the stock; the holder's create stores the voucher with its
// answer.
func TestCreateVoucherUnderALostClaim(t *testing.T) {
	t.Parallel()
	vouchers, stock := memory.NewVouchers(), memory.NewStock()
	create := application.NewCreateVoucher(vouchers, stock, memory.NewClock(t0))
	lost, held := takenOver(t, vouchers.Idempotency, 1, "create")
	cmd := application.CreateVoucherCmd{Title: "x", Stock: 1, BeginsAt: t0, EndsAt: t0.Add(time.Hour), PerUserLimit: 1,
		Receipt: &ports.Receipt[application.LiveVoucher]{Claim: lost, Answer: answered[application.LiveVoucher]}}
	if _, err := create.Handle(context.Background(), cmd); !errors.Is(err, ports.ErrClaimLost) {
		t.Fatalf("create under a lost claim: %v, want ports.ErrClaimLost", err)
	}
	if all, _ := vouchers.List(context.Background(), ports.VoucherQuery{Limit: 10}); len(all) != 0 {
		t.Fatalf("stored %+v under a lost claim", all)
	}
	cmd.Receipt.Claim = held
	// The answer kept is rendered from the voucher the create returns: the same
	// remaining units and state, judged at the same moment.
	var kept application.LiveVoucher
	cmd.Receipt.Answer = func(v application.LiveVoucher) (int, []byte, error) { kept = v; return answered(v) }
	v, err := create.Handle(context.Background(), cmd)
	if err != nil {
		t.Fatal(err)
	}
	if kept != v || v.State != domain.StateLive || v.Remaining != 1 {
		t.Fatalf("kept %+v, returned %+v; want the same, live with 1 remaining", kept, v)
	}
	if left, _ := stock.Remaining(context.Background(), v.ID); left[v.ID] != 1 {
		t.Fatalf("remaining %v, want the voucher warmed", left)
	}
	wantAnswer(t, vouchers.Idempotency, 1, "create", 200)
}

// TestPayUnderALostClaimVoidsThePayment: a pay whose key was taken over leaves the
// order unpaid and voids the payment it authorized.
func TestPayUnderALostClaimVoidsThePayment(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	l := newLifecycle(t, 10)
	id := l.persisted(t, 5)
	lost, held := takenOver(t, l.vouchers.Idempotency, 5, "pay")
	if _, err := l.pay.Handle(ctx, application.OrderChangeCmd{User: 5, Order: id, Receipt: &ports.Receipt[domain.Order]{Claim: lost, Answer: answered[domain.Order]}}); !errors.Is(err, ports.ErrClaimLost) {
		t.Fatalf("pay under a lost claim: %v, want ports.ErrClaimLost", err)
	}
	if o := l.order(t, id); o.Status != domain.StatusAwaitingPayment || !slices.Equal(l.payments.Voided, []domain.OrderID{id}) {
		t.Fatalf("after a pay under a lost claim: %+v, voided %v; want it unpaid, its payment voided", o, l.payments.Voided)
	}
	if o, err := l.pay.Handle(ctx, application.OrderChangeCmd{User: 5, Order: id, Receipt: &ports.Receipt[domain.Order]{Claim: held, Answer: answered[domain.Order]}}); err != nil || o.Status != domain.StatusPaid {
		t.Fatalf("pay under the claim that took the key over: %+v, %v", o, err)
	}
	wantAnswer(t, l.vouchers.Idempotency, 5, "pay", 200)
}

// TestCancelUnderALostClaimReleasesNothing: a cancel whose key was taken over leaves
// the order as it was and its units held — nothing goes back on sale for a change
// that did not happen.
func TestCancelUnderALostClaimReleasesNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	l := newLifecycle(t, 1)
	id := l.persisted(t, 5)
	lost, held := takenOver(t, l.vouchers.Idempotency, 5, "cancel")
	if _, err := l.cancel.Handle(ctx, application.OrderChangeCmd{User: 5, Order: id, Receipt: &ports.Receipt[domain.Order]{Claim: lost, Answer: answered[domain.Order]}}); !errors.Is(err, ports.ErrClaimLost) {
		t.Fatalf("cancel under a lost claim: %v, want ports.ErrClaimLost", err)
	}
	if o, left := l.order(t, id), l.remaining(t); o.Status != domain.StatusAwaitingPayment || left != 0 {
		t.Fatalf("after a cancel under a lost claim: %+v, %d remaining; want it awaiting payment, none released", o, left)
	}
	if o, err := l.cancel.Handle(ctx, application.OrderChangeCmd{User: 5, Order: id, Receipt: &ports.Receipt[domain.Order]{Claim: held, Answer: answered[domain.Order]}}); err != nil || o.Status != domain.StatusCancelled {
		t.Fatalf("cancel under the claim that took the key over: %+v, %v", o, err)
	}
	if left := l.remaining(t); left != 1 {
		t.Fatalf("%d remaining after the cancel, want its unit back", left)
	}
	wantAnswer(t, l.vouchers.Idempotency, 5, "cancel", 200)
}
