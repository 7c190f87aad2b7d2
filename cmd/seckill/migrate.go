package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/uptrace/bun"

	"github.com/seckill/seckill/adapters/sqlstore"
)

type migrateCmd struct {
	DatabaseURL string `name:"database-url" env:"SECKILL_DATABASE_URL" help:"PostgreSQL URL, or sqlite:PATH; unset, the SQLite file seckill.db in the working directory."`

	Up     migrateUpCmd     `cmd:"" help:"Apply every pending migration."`
	Down   migrateDownCmd   `cmd:"" help:"Roll back the last applied group of migrations."`
	Status migrateStatusCmd `cmd:"" help:"List the migrations and whether each is applied."`
}

type migrateUpCmd struct{}
type migrateDownCmd struct{}
type migrateStatusCmd struct{}

// Run applies pending migrations.
func (migrateUpCmd) Run(ctx context.Context, m *migrateCmd) error {
	return m.with(ctx, func(db *bun.DB) error {
		applied, err := sqlstore.MigrateUp(ctx, db)
		if err != nil {
			return err
		}
		return report(os.Stdout, "applied", applied)
	})
}

// Run rolls back the last group.
func (migrateDownCmd) Run(ctx context.Context, m *migrateCmd) error {
	return m.with(ctx, func(db *bun.DB) error {
		rolled, err := sqlstore.MigrateDown(ctx, db)
		if err != nil {
			return err
		}
		return report(os.Stdout, "rolled back", rolled)
	})
}

// Run prints one line per migration.
func (migrateStatusCmd) Run(ctx context.Context, m *migrateCmd) error {
	return m.with(ctx, func(db *bun.DB) error {
		states, err := sqlstore.MigrationStatus(ctx, db)
		if err != nil {
			return err
		}
		for _, s := range states {
			state := "pending"
			if s.Applied {
				state = "applied"
			}
			if _, err := fmt.Fprintf(os.Stdout, "%-8s %s\n", state, s.Name); err != nil {
				return err
			}
		}
		return nil
	})
}

func (m *migrateCmd) with(ctx context.Context, fn func(*bun.DB) error) error {
	if err := checkDatabaseURL(m.DatabaseURL); err != nil {
		return err
	}
	url := databaseURL(m.DatabaseURL)
	openCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	db, err := sqlstore.Open(openCtx, url)
	if err != nil {
		return fmt.Errorf("connect to database %s: %w", redactURL(url), err)
	}
	defer db.Close()
	return fn(db)
}

func report(w io.Writer, verb string, names []string) error {
	if len(names) == 0 {
		_, err := fmt.Fprintf(w, "nothing %s\n", verb)
		return err
	}
	for _, n := range names {
		if _, err := fmt.Fprintf(w, "%s %s\n", verb, n); err != nil {
			return err
		}
	}
	return nil
}
