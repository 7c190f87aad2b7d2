package sqlstore

import (
	"context"
	"time"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/migrate"

	"github.com/seckill/seckill/migrations"
)

// Becoming is becoming, for the tests of the status conditions it builds.
var Becoming = becoming

// LeasesOnClock returns the leases kept in db by a process whose clock is local.
func LeasesOnClock(db *bun.DB, local func() time.Time) *Leases {
	return &Leases{db: db, local: local}
}

// MigrateBefore applies, as MigrateUp does, every migration older than version (the
// number a migration's name starts with) and none from version on: the schema a
// binary before that migration left.
func MigrateBefore(ctx context.Context, db *bun.DB, version string) error {
	older := migrate.NewMigrations()
	for _, m := range migrations.Migrations.Sorted() {
		if m.Name < version {
			older.Add(m)
		}
	}
	m := newMigrator(db, older)
	if err := m.Init(ctx); err != nil {
		return err
	}
	_, err := m.Migrate(ctx)
	return err
}
