package sqlstore_test

import (
	"context"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/seckill/seckill/adapters/testenv"
	"github.com/seckill/seckill/domain"
)

// TestLostConnectionsAreUnavailable: when the server drops the connections (as a
// restart or an outage does), repository calls fail as domain.ErrUnavailable, so the
// worker waits instead of counting the reservations as poison.
func TestLostConnectionsAreUnavailable(t *testing.T) {
	admin := testenv.AdminDatabaseURL(t) // a test of the server: PostgreSQL's pass alone
	f := newOrderFixture(t)
	v := f.voucher(t, 10)
	var name string
	if err := f.db.QueryRowContext(context.Background(), "SELECT current_database()").Scan(&name); err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(context.Background(), admin)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(context.Background(),
		"SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()", name); err != nil {
		t.Fatal(err)
	}
	_, err = f.orders.Persist(context.Background(), []domain.Reservation{reserve(1, v, 1, 1)})
	if !errors.Is(err, domain.ErrUnavailable) {
		t.Fatalf("persist on a dropped connection: %v, want ErrUnavailable", err)
	}
	// Each pooled connection fails once as it is found dead; then the pool
	// reconnects, and an error that is the request's own stays what it is.
	for i := 0; ; i++ {
		_, err := f.orders.Get(context.Background(), "x")
		if errors.Is(err, domain.ErrUnavailable) && i < 50 {
			continue
		}
		if !errors.Is(err, domain.ErrNotFound) || errors.Is(err, domain.ErrUnavailable) {
			t.Fatalf("get unknown order after reconnecting: %v", err)
		}
		break
	}
}
