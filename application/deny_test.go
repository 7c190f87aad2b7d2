package application_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/seckill/seckill/adapters/memory"
	"github.com/seckill/seckill/application"
	"github.com/seckill/seckill/domain"
)

func TestDeniedUserIsRefusedBeforeTheStock(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newGrabFixture(t, window)
	list := memory.NewDenyList()
	local := application.NewDeniedUsers(list)
	grab := application.NewGrabVoucher(f.stock, f.clock, &memory.OrderIDs{}, nil,
		application.NewBuyerGate(f.vouchers, f.clock, application.GateOptions{Denied: local}), application.GrabOptions{})
	deny := application.NewDenyUser(list, list, local, nil)
	allow := application.NewAllowUser(list, list, local)

	if _, err := deny.Handle(ctx, application.DenyUserCmd{Denial: domain.Denial{User: 7, Reason: "bot"}}); err != nil {
		t.Fatalf("deny: %v", err)
	}
	if list.Announced != 1 || local.Len() != 1 {
		t.Fatalf("announced %d, local set %d; want 1 and 1", list.Announced, local.Len())
	}
	if _, err := grab.Handle(ctx, application.GrabVoucherCmd{VoucherID: f.id, UserID: 7, Quantity: 1}); !errors.Is(err, domain.ErrDenied) {
		t.Fatalf("grab of a denied user = %v, want ErrDenied", err)
	}
	if len(f.stock.Reserved) != 0 {
		t.Fatalf("a denied grab reserved %v", f.stock.Reserved)
	}
	if _, err := grab.Handle(ctx, application.GrabVoucherCmd{VoucherID: f.id, UserID: 8, Quantity: 1}); err != nil {
		t.Fatalf("grab of another user: %v", err)
	}
	if _, err := allow.Handle(ctx, application.AllowUserCmd{User: 7}); err != nil {
		t.Fatalf("allow: %v", err)
	}
	if _, err := grab.Handle(ctx, application.GrabVoucherCmd{VoucherID: f.id, UserID: 7, Quantity: 1}); err != nil {
		t.Fatalf("grab once allowed again: %v", err)
	}
}

func TestDenyUserRefusesBadInput(t *testing.T) {
	t.Parallel()
	list := memory.NewDenyList()
	deny := application.NewDenyUser(list, list, application.NewDeniedUsers(list), nil)
	for name, d := range map[string]domain.Denial{
		"no user":       {Reason: "x"},
		"long reason":   {User: 1, Reason: strings.Repeat("é", domain.MaxDenyReason+1)},
		"control":       {User: 1, Reason: "a\nb"},
		"invalid utf8":  {User: 1, Reason: "\xff"},
		"negative user": {User: -1},
	} {
		if _, err := deny.Handle(context.Background(), application.DenyUserCmd{Denial: d}); !errors.Is(err, domain.ErrInvalid) {
			t.Errorf("%s: err = %v, want ErrInvalid", name, err)
		}
	}
	if _, err := deny.Handle(context.Background(), application.DenyUserCmd{Denial: domain.Denial{User: 1, Reason: strings.Repeat("é", domain.MaxDenyReason)}}); err != nil {
		t.Errorf("a reason of the longest length: %v", err)
	}
}

func TestListDeniedPages(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	list := memory.NewDenyList()
	for u := domain.UserID(1); u <= 5; u++ {
		if _, err := list.Deny(ctx, domain.Denial{User: u}, domain.Author{}, nil); err != nil {
			t.Fatal(err)
		}
	}
	uc := application.NewListDenied(list)
	var got []domain.UserID
	cursor := ""
	for range 5 {
		page, err := uc.Handle(ctx, application.ListDeniedQuery{Limit: 2, Cursor: cursor})
		if err != nil {
			t.Fatalf("page: %v", err)
		}
		for _, d := range page.Denials {
			got = append(got, d.User)
		}
		if cursor = page.NextCursor; cursor == "" {
			break
		}
	}
	if len(got) != 5 || got[0] != 1 || got[4] != 5 {
		t.Fatalf("paged users = %v, want 1..5", got)
	}
	if _, err := uc.Handle(ctx, application.ListDeniedQuery{Limit: 2, Cursor: "bm90LWEtY3Vyc29y"}); !errors.Is(err, domain.ErrInvalid) {
		t.Fatalf("a foreign cursor: %v, want ErrInvalid", err)
	}
}
