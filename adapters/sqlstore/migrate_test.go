package sqlstore_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/uptrace/bun"

	"github.com/seckill/seckill/adapters/sqlstore"
	"github.com/seckill/seckill/adapters/testenv"
	"github.com/seckill/seckill/migrations"
)

// allMigrations returns the names of the embedded migrations, oldest first.
func allMigrations(t *testing.T) []string {
	t.Helper()
	var names []string
	for _, m := range migrations.Migrations.Sorted() {
		names = append(names, m.String())
	}
	if len(names) == 0 {
		t.Fatal("no migrations embedded")
	}
	return names
}

// tablesExist reports, for each table, whether it exists.
func tablesExist(t *testing.T, db *bun.DB, tables ...string) []bool {
	t.Helper()
	out := make([]bool, 0, len(tables))
	for _, table := range tables {
		var exists bool
		query := "SELECT to_regclass(?) IS NOT NULL"
		if sqlstore.IsSQLite(db) {
			query = "SELECT count(*) > 0 FROM sqlite_master WHERE type = 'table' AND name = ?"
		}
		err := db.NewRaw(query, table).Scan(context.Background(), &exists)
		if err != nil {
			t.Fatalf("look up table %s: %v", table, err)
		}
		out = append(out, exists)
	}
	return out
}

func migrateUp(t *testing.T, db *bun.DB) []string {
	t.Helper()
	applied, err := sqlstore.MigrateUp(context.Background(), db)
	if err != nil {
		t.Fatalf("MigrateUp: %v", err)
	}
	return applied
}

func migrateDown(t *testing.T, db *bun.DB) []string {
	t.Helper()
	rolledBack, err := sqlstore.MigrateDown(context.Background(), db)
	if err != nil {
		t.Fatalf("MigrateDown: %v", err)
	}
	return rolledBack
}

func migrationStatus(t *testing.T, db *bun.DB) []sqlstore.MigrationState {
	t.Helper()
	states, err := sqlstore.MigrationStatus(context.Background(), db)
	if err != nil {
		t.Fatalf("MigrationStatus: %v", err)
	}
	return states
}

func TestMigrateUpStatusDown(t *testing.T) {
	t.Parallel()
	db := openDB(t)
	all := allMigrations(t)
	schema := []string{"vouchers", "orders"}

	var pending []sqlstore.MigrationState
	for _, name := range all {
		pending = append(pending, sqlstore.MigrationState{Name: name})
	}
	if got := migrationStatus(t, db); !slices.Equal(got, pending) {
		t.Fatalf("status on a fresh database = %+v, want all pending %+v", got, pending)
	}

	if got, want := migrateUp(t, db), all; !slices.Equal(got, want) {
		t.Fatalf("up applied %q, want %q", got, want)
	}
	if got, want := tablesExist(t, db, schema...), []bool{true, true}; !slices.Equal(got, want) {
		t.Fatalf("after up, %q exist: %v, want %v", schema, got, want)
	}
	if got := migrateUp(t, db); len(got) != 0 {
		t.Fatalf("second up applied %q, want nothing", got)
	}

	states := migrationStatus(t, db)
	if got, want := len(states), len(all); got != want {
		t.Fatalf("status lists %d migrations, want %d", got, want)
	}
	for i, s := range states {
		if s.Name != all[i] || !s.Applied || s.Group != 1 || s.AppliedAt.IsZero() {
			t.Errorf("status[%d] = %+v, want %s applied in group 1 with a time", i, s, all[i])
		}
	}

	want := slices.Clone(all)
	slices.Reverse(want)
	if got := migrateDown(t, db); !slices.Equal(got, want) {
		t.Fatalf("down rolled back %q, want %q", got, want)
	}
	if got, want := tablesExist(t, db, schema...), []bool{false, false}; !slices.Equal(got, want) {
		t.Fatalf("after down, %q exist: %v, want %v", schema, got, want)
	}
	if got := migrationStatus(t, db); !slices.Equal(got, pending) {
		t.Fatalf("status after down = %+v, want all pending %+v", got, pending)
	}
	if got := migrateDown(t, db); len(got) != 0 {
		t.Fatalf("down with nothing applied rolled back %q", got)
	}

	if got, want := migrateUp(t, db), all; !slices.Equal(got, want) {
		t.Fatalf("up after down applied %q, want %q", got, want)
	}
	if got, want := tablesExist(t, db, schema...), []bool{true, true}; !slices.Equal(got, want) {
		t.Fatalf("after up again, %q exist: %v, want %v", schema, got, want)
	}
}

// Instances that start together all migrate at once: exactly one applies the schema,
// the others wait for it and then find nothing to do.
func TestMigrateUpConcurrently(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := testenv.PostgresURL(t)
	const instances = 4
	dbs := make([]*bun.DB, instances)
	for i := range dbs {
		db, err := sqlstore.Open(ctx, url)
		if err != nil {
			t.Fatalf("open instance %d: %v", i, err)
		}
		t.Cleanup(func() { _ = db.Close() })
		dbs[i] = db
	}

	applied := make([][]string, instances)
	errs := make([]error, instances)
	var wg sync.WaitGroup
	for i, db := range dbs {
		wg.Go(func() { applied[i], errs[i] = sqlstore.MigrateUp(ctx, db) })
	}
	wg.Wait()

	var total []string
	for i, err := range errs {
		if err != nil {
			t.Fatalf("instance %d: MigrateUp: %v", i, err)
		}
		total = append(total, applied[i]...)
	}
	if got, want := total, allMigrations(t); !slices.Equal(got, want) {
		t.Fatalf("instances applied %q between them, want each migration once: %q", got, want)
	}
}

// TestCheckSchema: a database never migrated, or missing its newest migration, is
// behind, and the check itself changes nothing.
func TestCheckSchema(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := openDB(t)
	all := allMigrations(t)

	if got, err := sqlstore.PendingMigrations(ctx, db); err != nil || !slices.Equal(got, all) {
		t.Fatalf("pending on a fresh database = %q, %v; want %q", got, err, all)
	}
	if err := sqlstore.CheckSchema(ctx, db); !errors.Is(err, sqlstore.ErrSchemaBehind) {
		t.Fatalf("CheckSchema on a fresh database = %v, want ErrSchemaBehind", err)
	}
	if got := tablesExist(t, db, "bun_migrations"); got[0] {
		t.Fatal("the check created Bun's bookkeeping table")
	}
	// The bookkeeping exists but nothing is applied.
	migrationStatus(t, db)
	if err := sqlstore.CheckSchema(ctx, db); !errors.Is(err, sqlstore.ErrSchemaBehind) {
		t.Fatalf("CheckSchema with nothing applied = %v, want ErrSchemaBehind", err)
	}

	migrateUp(t, db)
	if err := sqlstore.CheckSchema(ctx, db); err != nil {
		t.Fatalf("CheckSchema after up = %v, want nil", err)
	}

	// Partly migrated: the newest migration is not recorded.
	newest := migrations.Migrations.Sorted()[len(all)-1]
	if _, err := db.NewDelete().Table("bun_migrations").Where("name = ?", newest.Name).Exec(ctx); err != nil {
		t.Fatal(err)
	}
	err := sqlstore.CheckSchema(ctx, db)
	if !errors.Is(err, sqlstore.ErrSchemaBehind) || !strings.Contains(err.Error(), newest.String()) {
		t.Fatalf("CheckSchema without the newest migration = %v, want ErrSchemaBehind naming %s", err, newest)
	}
}
