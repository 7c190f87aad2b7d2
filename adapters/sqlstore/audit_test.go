package sqlstore_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/seckill/seckill/adapters/testenv"
	"github.com/seckill/seckill/domain"
)

// terminateOthers drops every other connection to the test's database, as a server
// restart would, and waits until they are gone.
func terminateOthers(t *testing.T, f orderFixture) {
	t.Helper()
	ctx := context.Background()
	var name string
	if err := f.db.QueryRowContext(ctx, "SELECT current_database()").Scan(&name); err != nil {
		t.Fatal(err)
	}
	admin, err := pgx.Connect(ctx, testenv.AdminDatabaseURL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	if _, err := admin.Exec(ctx,
		"SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()", name); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, testenv.Patience, "connections gone after pg_terminate_backend", func() (bool, string) {
		var left int
		if err := admin.QueryRow(ctx, "SELECT count(*) FROM pg_stat_activity WHERE datname = $1", name).Scan(&left); err != nil {
			t.Fatal(err)
		}
		return left == 0, fmt.Sprintf("%d connections left", left)
	})
}

// The lifecycle, release and audit methods report a dropped connection as
// domain.ErrUnavailable, like the rest of the repository.
func TestLifecycleLostConnectionsAreUnavailable(t *testing.T) {
	t.Parallel()
	testenv.AdminDatabaseURL(t) // a test of the server: PostgreSQL's pass alone
	ctx := context.Background()
	f := newOrderFixture(t)
	v := f.voucher(t, 10)
	r := reserve(1, v, 1, 1)
	f.persisted(t, r)
	// One connection, used just before the drop: the pool hands out that dead one
	// rather than pinging it (pgx pings only connections idle for over a second).
	f.db.SetMaxOpenConns(1)

	calls := map[string]func() error{
		"Transition": func() error {
			_, err := f.orders.Transition(ctx, r.OrderID, r.UserID, domain.StatusPaid, nil)
			return err
		},
		"ExpireDue": func() error {
			_, err := f.orders.ExpireDue(ctx, t0.Add(time.Hour), 0, 10)
			return err
		},
		"Unreleased": func() error {
			_, err := f.orders.Unreleased(ctx, 10)
			return err
		},
		"MarkReleased": func() error { return f.orders.MarkReleased(ctx, r.OrderID) },
		"Ledger": func() error {
			_, err := f.orders.Ledger(ctx, v)
			return err
		},
		"RecountSold": func() error {
			_, err := f.orders.RecountSold(ctx, v)
			return err
		},
	}
	for name, call := range calls {
		t.Run(name, func(t *testing.T) {
			// After the previous drop the pool may need a try or two to reconnect.
			for i := 0; ; i++ {
				_, err := f.orders.Get(ctx, r.OrderID)
				if err == nil {
					break
				}
				if !errors.Is(err, domain.ErrUnavailable) || i == 10 {
					t.Fatalf("Get before the drop: %v", err)
				}
			}
			terminateOthers(t, f)
			if err := call(); !errors.Is(err, domain.ErrUnavailable) {
				t.Fatalf("%s on a dropped connection: %v, want domain.ErrUnavailable", name, err)
			}
		})
	}
}
