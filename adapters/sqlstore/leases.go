package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/uptrace/bun"
)

// Leases lets one instance at a time run a periodic job, on PostgreSQL and SQLite
// alike (SQLite has no advisory locks): a row per job names its holder and until when
// it holds it, and keeps the job's state (where it stopped) for whoever holds it next.
// A lease is dated by the one clock its holders share, the database's (see at): an
// instance whose own clock is off takes a lease that lasts as long for the others.
type Leases struct {
	db *bun.DB
	// local is this process's clock: the time of the leases on SQLite.
	local func() time.Time
}

// NewLeases returns the leases kept in db.
func NewLeases(db *bun.DB) *Leases {
	return &Leases{db: db, local: now}
}

// acquireSQL takes or renews a lease in one statement: a new row, or the row of an
// expired lease or of one the same holder holds. RETURNING answers no row when
// another holder's lease is still running.
const acquireSQL = `INSERT INTO leases (name, holder, expires_at) VALUES (?, ?, ?)
ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at
WHERE leases.expires_at <= ? OR leases.holder = excluded.holder
RETURNING state`

// Acquire takes lease name for holder until ttl from now, or renews it when holder
// holds it already; it reports false, taking nothing, while another holder's lease
// runs. It returns the state the last holder saved (Save).
func (l *Leases) Acquire(ctx context.Context, name, holder string, ttl time.Duration) (string, bool, error) {
	at, err := l.at(ctx)
	if err != nil {
		return "", false, fmt.Errorf("acquire lease %s: %w", name, err)
	}
	var state string
	err = l.db.NewRaw(acquireSQL, name, holder, at.Add(ttl), at).Scan(ctx, &state)
	if errors.Is(err, sql.ErrNoRows) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("acquire lease %s: %w", name, Classify(err))
	}
	return state, true, nil
}

// Save keeps state with lease name, only while holder holds it; it reports whether it
// did (false: the lease expired and another holder took it).
func (l *Leases) Save(ctx context.Context, name, holder, state string) (bool, error) {
	res, err := l.db.NewRaw("UPDATE leases SET state = ? WHERE name = ? AND holder = ?", state, name, holder).Exec(ctx)
	if err != nil {
		return false, fmt.Errorf("save lease %s: %w", name, Classify(err))
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("save lease %s: %w", name, err)
	}
	return n == 1, nil
}

// Release ends holder's lease name now, keeping its state, so another holder may take
// it at once; a lease holder does not hold is left alone.
func (l *Leases) Release(ctx context.Context, name, holder string) error {
	at, err := l.at(ctx)
	if err != nil {
		return fmt.Errorf("release lease %s: %w", name, err)
	}
	_, err = l.db.NewRaw("UPDATE leases SET expires_at = ? WHERE name = ? AND holder = ?", at, name, holder).Exec(ctx)
	if err != nil {
		return fmt.Errorf("release lease %s: %w", name, Classify(err))
	}
	return nil
}

// at is the time leases are dated by: on PostgreSQL its clock, which every instance
// shares (clock_timestamp(): the time it is read, not its transaction's start), in
// UTC at the microsecond as the rows keep it; on SQLite, which one process holds (the
// zero-setup mode), that process's clock.
func (l *Leases) at(ctx context.Context) (time.Time, error) {
	if IsSQLite(l.db) {
		return l.local(), nil
	}
	var at time.Time
	if err := l.db.NewRaw("SELECT clock_timestamp()").Scan(ctx, &at); err != nil {
		return time.Time{}, fmt.Errorf("read the database's clock: %w", Classify(err))
	}
	return at.UTC().Truncate(time.Microsecond), nil
}
