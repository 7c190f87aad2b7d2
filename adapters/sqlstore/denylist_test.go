package sqlstore_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/seckill/seckill/adapters/sqlstore"
	"github.com/seckill/seckill/domain"
	"github.com/seckill/seckill/ports"
)

func TestDenyListKeepsUsersAndAuditsEachChange(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := openMigrated(t)
	list, log := sqlstore.NewDenyList(db), sqlstore.NewAuditLog(db)
	by := domain.Author{Actor: "1", RequestID: "req-1"}

	d, err := list.Deny(ctx, domain.Denial{User: 42, Reason: "bot"}, by, nil)
	if err != nil || d.User != 42 || d.Reason != "bot" || d.At.IsZero() {
		t.Fatalf("Deny = %+v, %v", d, err)
	}
	// The same reason again changes nothing; another reason changes it.
	if again, err := list.Deny(ctx, domain.Denial{User: 42, Reason: "bot"}, by, nil); err != nil || !again.At.Equal(d.At) {
		t.Fatalf("Deny again = %+v, %v; want the denial as it was", again, err)
	}
	if _, err := list.Deny(ctx, domain.Denial{User: 42, Reason: "scalper"}, by, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := list.Deny(ctx, domain.Denial{User: 7}, by, nil); err != nil {
		t.Fatal(err)
	}
	users, err := list.Users(ctx)
	slices.Sort(users)
	if err != nil || !slices.Equal(users, []domain.UserID{7, 42}) {
		t.Fatalf("Users = %v, %v; want [7 42]", users, err)
	}
	page, err := list.List(ctx, 7, 10)
	if err != nil || len(page) != 1 || page[0].User != 42 || page[0].Reason != "scalper" {
		t.Fatalf("List after 7 = %+v, %v", page, err)
	}
	if _, err := list.List(ctx, 0, 0); !errors.Is(err, domain.ErrInvalid) {
		t.Fatalf("List limit 0: %v, want ErrInvalid", err)
	}
	if err := list.Allow(ctx, 42, by, nil); err != nil {
		t.Fatal(err)
	}
	// Allowing a user not listed is no error and writes nothing.
	if err := list.Allow(ctx, 42, by, nil); err != nil {
		t.Fatal(err)
	}
	if users, _ := list.Users(ctx); !slices.Equal(users, []domain.UserID{7}) {
		t.Fatalf("Users after Allow = %v, want [7]", users)
	}

	entries, err := log.List(ctx, ports.AuditQuery{Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range entries {
		if e.VoucherID != 0 || e.Actor != "1" || e.RequestID != "req-1" {
			t.Errorf("entry %+v: want no voucher, actor 1, request req-1", e)
		}
		got = append(got, string(e.Action)+" "+string(e.Before)+" "+string(e.After))
	}
	want := []string{
		`denylist.remove {"reason":"scalper","user_id":"42"} `,
		`denylist.add  {"reason":"","user_id":"7"}`,
		`denylist.add {"reason":"bot","user_id":"42"} {"reason":"scalper","user_id":"42"}`,
		`denylist.add  {"reason":"bot","user_id":"42"}`,
	}
	if !slices.Equal(got, want) {
		t.Fatalf("audit entries, newest first:\n%q\nwant\n%q", got, want)
	}
}

func TestDenyListKeepsTheAnswerWithTheChange(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := openMigrated(t)
	list := sqlstore.NewDenyList(db)
	refuse := errors.New("refused")
	_, err := list.Deny(ctx, domain.Denial{User: 5}, domain.Author{}, &ports.Receipt[domain.Denial]{
		Answer: func(domain.Denial) (int, []byte, error) { return 0, nil, refuse },
	})
	if !errors.Is(err, refuse) {
		t.Fatalf("Deny: %v, want the answer's error", err)
	}
	err = list.Allow(ctx, 5, domain.Author{}, &ports.Receipt[domain.UserID]{
		Answer: func(domain.UserID) (int, []byte, error) { return 0, nil, refuse },
	})
	if !errors.Is(err, refuse) {
		t.Fatalf("Allow: %v, want the answer's error", err)
	}
	if users, err := list.Users(ctx); err != nil || len(users) != 0 {
		t.Fatalf("Users = %v, %v; a rolled-back denial must leave none", users, err)
	}
	if entries, _ := sqlstore.NewAuditLog(db).List(ctx, ports.AuditQuery{Limit: 10}); len(entries) != 0 {
		t.Fatalf("audit entries %v; a rolled-back change must leave none", entries)
	}
}
