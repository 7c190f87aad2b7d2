package application_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/seckill/seckill/adapters/memory"
	"github.com/seckill/seckill/application"
	"github.com/seckill/seckill/domain"
)

// A ticket opens one stream, as its user; one not spelt as issued is refused without
// a look in the store.
func TestStreamTicketIsRedeemedOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store := memory.NewStreamTickets()
	clock := memory.NewClock(t0)
	issue := application.NewIssueStreamTicket(store, clock)
	redeem := application.NewRedeemStreamTicket(store)
	tk, err := issue.Handle(ctx, application.IssueStreamTicketCmd{UserID: 7})
	if err != nil || !tk.ExpiresAt.Equal(t0.Add(time.Minute)) || len(tk.Ticket) != 43 {
		t.Fatalf("issue = %+v, %v; want 43 characters expiring a minute after the sale's clock", tk, err)
	}
	if user, err := redeem.Handle(ctx, application.RedeemStreamTicketCmd{Ticket: tk.Ticket}); err != nil || user != 7 {
		t.Fatalf("redeem = %v, %v; want user 7", user, err)
	}
	if _, err := redeem.Handle(ctx, application.RedeemStreamTicketCmd{Ticket: tk.Ticket}); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("redeem again = %v, want not found", err)
	}
	before := store.Redeems
	for _, bad := range []string{"", "short", tk.Ticket + "A", tk.Ticket[:42] + "="} {
		if _, err := redeem.Handle(ctx, application.RedeemStreamTicketCmd{Ticket: bad}); !errors.Is(err, domain.ErrNotFound) {
			t.Fatalf("redeem %q = %v, want not found", bad, err)
		}
	}
	if store.Redeems != before {
		t.Fatalf("malformed tickets reached the store %d times", store.Redeems-before)
	}
}
