package migrations_test

import (
	"testing"

	"github.com/seckill/seckill/migrations"
)

func TestEveryMigrationCanBeRolledBack(t *testing.T) {
	ms := migrations.Migrations.Sorted()
	if len(ms) == 0 {
		t.Fatal("no migrations discovered")
	}
	for _, m := range ms {
		if m.Up == nil {
			t.Errorf("migration %s has no up file", m)
		}
		if m.Down == nil {
			t.Errorf("migration %s has no down file", m)
		}
	}
}
