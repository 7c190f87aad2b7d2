package sqlstore

import (
	"time"

	"github.com/uptrace/bun"
)

// Becoming is becoming, for the tests of the status conditions it builds.
var Becoming = becoming

// LeasesOnClock returns the leases kept in db by a process whose clock is local.
func LeasesOnClock(db *bun.DB, local func() time.Time) *Leases {
	return &Leases{db: db, local: local}
}
