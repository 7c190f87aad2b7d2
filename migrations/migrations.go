// Package migrations holds seckill's schema as SQL migrations embedded in the binary;
// `seckill migrate` applies them (see sqlstore.MigrateUp), and serve does at start-up
// on a SQLite file.
//
// Files are named <version>_<name>.tx.up.sql and .tx.down.sql: Bun runs each file in
// one transaction, so a migration that fails half-way leaves nothing behind. Statements
// within a file are separated by a "--bun:split" line. The same files serve PostgreSQL
// and SQLite: each is a text/template rendered with .Dialect, "pg" or "sqlite", so
// where the two dialects' SQL differs the file says both.
//
// A migration that must convert data SQL cannot is Go instead: <version>_<name>.go
// registers its up and down functions (Migrations.MustRegister), and each runs in one
// transaction of its own (bun.DB.RunInTx), over SQL both dialects accept.
package migrations

import (
	"embed"
	"fmt"

	"github.com/uptrace/bun/migrate"
)

//go:embed *.sql
var sqlFiles embed.FS

// Migrations is every schema migration, discovered from the embedded SQL files.
var Migrations = migrate.NewMigrations()

func init() {
	// Only a malformed file name can fail here, which is a bug in this package.
	if err := Migrations.Discover(sqlFiles); err != nil {
		panic(fmt.Sprintf("discover migrations: %v", err))
	}
}
