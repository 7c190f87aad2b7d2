package sqlstore_test

import (
	"context"
	"testing"

	"github.com/uptrace/bun"

	"github.com/seckill/seckill/adapters/sqlstore"
	"github.com/seckill/seckill/adapters/testenv"
)

// openDB opens a fresh, empty database of the throwaway server, closed when the test
// ends (before testenv drops it).
func openDB(t testing.TB) *bun.DB {
	t.Helper()
	db, err := sqlstore.Open(context.Background(), testenv.DatabaseURL(t))
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// openMigrated opens a fresh database with the schema applied.
func openMigrated(t testing.TB) *bun.DB {
	t.Helper()
	db := openDB(t)
	if _, err := sqlstore.MigrateUp(context.Background(), db); err != nil {
		t.Fatalf("migrate up: %v", err)
	}
	return db
}
