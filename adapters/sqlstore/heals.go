package sqlstore

import (
	"context"
	"fmt"
	"time"

	"github.com/uptrace/bun"
)

// Heals remembers, per Redis server, the run_id under which its sale state was last
// made the database's (the redis_heals table), so a server that restarted while no
// instance was watching it — the instances restarted with it — is still found
// changed, and healed, when they come back.
type Heals struct {
	db *bun.DB
}

// NewHeals returns the heals kept in db.
func NewHeals(db *bun.DB) *Heals { return &Heals{db: db} }

type healRow struct {
	bun.BaseModel `bun:"table:redis_heals"`

	Server   string    `bun:"server,pk"`
	RunID    string    `bun:"run_id"`
	HealedAt time.Time `bun:"healed_at"`
}

// Healed returns the run_id last recorded for each server, by the key Record was given.
func (h *Heals) Healed(ctx context.Context) (map[string]string, error) {
	var rows []healRow
	if err := h.db.NewSelect().Model(&rows).Scan(ctx); err != nil {
		return nil, fmt.Errorf("read healed redis servers: %w", Classify(err))
	}
	out := make(map[string]string, len(rows))
	for _, r := range rows {
		out[r.Server] = r.RunID
	}
	return out, nil
}

// Record records that the sale state of each server (key: the server, value: its
// run_id) is the database's as of now.
func (h *Heals) Record(ctx context.Context, servers map[string]string) error {
	if len(servers) == 0 {
		return nil
	}
	rows := make([]healRow, 0, len(servers))
	at := now()
	for server, runID := range servers {
		rows = append(rows, healRow{Server: server, RunID: runID, HealedAt: at})
	}
	_, err := h.db.NewInsert().Model(&rows).
		On("CONFLICT (server) DO UPDATE").Set("run_id = EXCLUDED.run_id").Set("healed_at = EXCLUDED.healed_at").
		Exec(ctx)
	if err != nil {
		return fmt.Errorf("record healed redis servers: %w", Classify(err))
	}
	return nil
}
