package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/migrate"

	"github.com/seckill/seckill/migrations"
)

// migrationLockKey keys the PostgreSQL advisory lock that lets one instance at a time
// migrate a database. Any fixed number does; this one spells "seckill".
const migrationLockKey int64 = 0x7365636b696c6c

// NewMigrator returns a Bun migrator over the embedded schema migrations, rendered for
// db's dialect (see package migrations). It records a migration as applied only once
// it succeeded, so a failed one runs again next time.
func NewMigrator(db *bun.DB) *migrate.Migrator {
	return newMigrator(db, migrations.Migrations)
}

// newMigrator is NewMigrator over ms.
func newMigrator(db *bun.DB, ms *migrate.Migrations) *migrate.Migrator {
	return migrate.NewMigrator(db, ms,
		migrate.WithMarkAppliedOnSuccess(true),
		migrate.WithTemplateData(templateData{Dialect: db.Dialect().Name().String()}))
}

// templateData is what the migration templates see.
type templateData struct {
	// Dialect is "pg" or "sqlite".
	Dialect string
}

// MigrationState is one migration as `seckill migrate status` lists it.
type MigrationState struct {
	// Name is the migration's file name without its suffix: "20261129000001_init".
	Name string
	// Applied reports whether the migration is applied.
	Applied bool
	// Group numbers the `migrate up` run that applied it (each run that applies
	// anything is one group; `migrate down` rolls back the last); 0 when pending.
	Group int64
	// AppliedAt is when it was applied, in UTC; zero when pending.
	AppliedAt time.Time
}

// MigrateUp applies every pending migration as one group and returns their names in
// the order applied; when the schema is current it applies nothing and returns none.
// It creates Bun's bookkeeping tables first if they are absent.
func MigrateUp(ctx context.Context, db *bun.DB) ([]string, error) {
	var applied []string
	err := withMigrator(ctx, db, func(m *migrate.Migrator) error {
		group, err := m.Migrate(ctx)
		if err != nil {
			return err
		}
		applied = names(group.Migrations)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("migrate up: %w", err)
	}
	return applied, nil
}

// MigrateDown rolls back the last group of migrations and returns their names in the
// order rolled back (newest first); with nothing applied it returns none.
func MigrateDown(ctx context.Context, db *bun.DB) ([]string, error) {
	var rolledBack []string
	err := withMigrator(ctx, db, func(m *migrate.Migrator) error {
		group, err := m.Rollback(ctx)
		if err != nil {
			return err
		}
		for i := len(group.Migrations) - 1; i >= 0; i-- {
			rolledBack = append(rolledBack, group.Migrations[i].String())
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("migrate down: %w", err)
	}
	return rolledBack, nil
}

// MigrationStatus returns every known migration, oldest first, with whether and when
// it was applied. Like MigrateUp it creates Bun's bookkeeping tables if absent, and it
// waits for a migration in progress to finish, so it never reports half a run.
func MigrationStatus(ctx context.Context, db *bun.DB) ([]MigrationState, error) {
	var states []MigrationState
	err := withMigrator(ctx, db, func(m *migrate.Migrator) error {
		ms, err := m.MigrationsWithStatus(ctx)
		if err != nil {
			return err
		}
		states = make([]MigrationState, 0, len(ms))
		for _, mig := range ms {
			s := MigrationState{Name: mig.String(), Applied: mig.IsApplied()}
			if s.Applied {
				s.Group = mig.GroupID
				s.AppliedAt = mig.MigratedAt.UTC()
			}
			states = append(states, s)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("migration status: %w", err)
	}
	return states, nil
}

// withMigrator runs fn with a migrator whose tables exist, holding the migration lock
// throughout so instances starting together migrate one after the other: the first
// applies, the rest find nothing left to do.
//
// The lock is a transaction-scoped advisory lock rather than Bun's lock table: a
// second instance waits for it instead of failing, it also covers Init (concurrent
// CREATE TABLE IF NOT EXISTS can fail in PostgreSQL), and it dies with the session,
// so a migrator that crashes leaves no stale lock behind. The transaction only holds
// the lock; the migrations run on other connections of db, which therefore needs a
// pool of at least two.
//
// SQLite has no such lock, and a transaction holding its write lock would shut out
// the migrations themselves, so there withMigrator takes none: a SQLite file is one
// process's (the zero-setup mode runs one instance), whose migrations run one after
// the other, each file one transaction. Two processes migrating one new file at the
// same moment could both try the first migration; the second fails (the table exists)
// and succeeds when run again.
func withMigrator(ctx context.Context, db *bun.DB, fn func(*migrate.Migrator) error) error {
	if IsSQLite(db) {
		return runMigrator(ctx, db, fn)
	}
	lock, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("lock migrations: %w", err)
	}
	// Ending the transaction releases the lock. A failed rollback needs no handling: the
	// transaction was already ended (ctx done) or its connection is gone, and in both
	// cases the server has released the lock.
	defer func() { _ = lock.Rollback() }()
	if _, err := lock.ExecContext(ctx, "SELECT pg_advisory_xact_lock(?)", migrationLockKey); err != nil {
		return fmt.Errorf("lock migrations: %w", err)
	}
	return runMigrator(ctx, db, fn)
}

// runMigrator runs fn with a migrator whose tables exist.
func runMigrator(ctx context.Context, db *bun.DB, fn func(*migrate.Migrator) error) error {
	m := NewMigrator(db)
	if err := m.Init(ctx); err != nil {
		return fmt.Errorf("init migration tables: %w", err)
	}
	return fn(m)
}

func names(ms migrate.MigrationSlice) []string {
	out := make([]string, 0, len(ms))
	for _, m := range ms {
		out = append(out, m.String())
	}
	return out
}

// ErrSchemaBehind means the database lacks migrations this binary needs (never migrated,
// or only partly); `seckill migrate up` applies them.
var ErrSchemaBehind = errors.New("database schema is behind this binary")

// migrationsTable is where Bun's migrator records the migrations applied.
const migrationsTable = "bun_migrations"

// PendingMigrations returns the names of the migrations this binary holds that db
// has not applied, oldest first; none when the schema is current. Unlike
// MigrationStatus it only reads: it creates nothing and takes no lock, so it suits a
// start-up check and a readiness probe.
func PendingMigrations(ctx context.Context, db bun.IDB) ([]string, error) {
	exists, err := tableExists(ctx, db, migrationsTable)
	if err != nil {
		return nil, fmt.Errorf("read migrations: %w", err)
	}
	applied := map[string]bool{}
	if exists {
		var done []string
		if err := db.NewSelect().Table(migrationsTable).Column("name").Scan(ctx, &done); err != nil {
			return nil, fmt.Errorf("read migrations: %w", err)
		}
		for _, name := range done {
			applied[name] = true
		}
	}
	var pending []string
	for _, m := range migrations.Migrations.Sorted() {
		if !applied[m.Name] {
			pending = append(pending, m.String())
		}
	}
	return pending, nil
}

// CheckSchema returns an error wrapping ErrSchemaBehind, naming the pending
// migrations, when db lacks any; an error from reading them otherwise; nil when the
// schema is current.
func CheckSchema(ctx context.Context, db bun.IDB) error {
	pending, err := PendingMigrations(ctx, db)
	if err != nil {
		return err
	}
	if len(pending) > 0 {
		return fmt.Errorf("%w: %d migration(s) pending (%s)", ErrSchemaBehind, len(pending), strings.Join(pending, ", "))
	}
	return nil
}

// tableExists reports whether the table name exists in db (PostgreSQL: on the
// search path).
func tableExists(ctx context.Context, db bun.IDB, name string) (bool, error) {
	var exists bool
	var err error
	if IsSQLite(db) {
		err = db.NewRaw("SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?)", name).Scan(ctx, &exists)
	} else {
		err = db.NewRaw("SELECT to_regclass(?) IS NOT NULL", name).Scan(ctx, &exists)
	}
	return exists, err
}
