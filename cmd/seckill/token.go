package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"time"

	"github.com/seckill/seckill/adapters/httpapi"
	"github.com/seckill/seckill/domain"
)

type tokenCmd struct {
	User        string        `name:"user" required:"" help:"User id (a positive integer) the token names."`
	Count       int           `name:"count" default:"1" help:"Mint this many tokens, for users --user, --user+1, …, one per line (e.g. --user 1 --count 2000 for users 1 to 2000)."`
	Admin       bool          `name:"admin" help:"Grant the admin role."`
	TTL         time.Duration `name:"ttl" default:"24h" help:"How long the token is valid."`
	JWTSecret   string        `name:"jwt-secret" env:"SECKILL_JWT_SECRET" help:"HS256 secret (the server's); unset, the one serve keeps beside its SQLite database (./seckill.db.secret by default)."`
	DatabaseURL string        `name:"database-url" env:"SECKILL_DATABASE_URL" help:"serve's database setting, which names the file keeping its secret when SECKILL_JWT_SECRET is unset (sqlite:PATH keeps it in PATH.secret; unset, ./seckill.db.secret)."`
}

// Validate checks the flags before Run (kong calls it; a failure exits 2) and settles
// the secret: SECKILL_JWT_SECRET, or when it is unset the one serve keeps beside its
// SQLite database (secretFile), read as serve reads it.
func (c *tokenCmd) Validate() error {
	if _, err := domain.ParseUserID(c.User); err != nil {
		return fmt.Errorf("--user: %q is not a positive integer", c.User)
	}
	if c.Count < 1 {
		return fmt.Errorf("--count: must be at least 1")
	}
	if c.TTL <= 0 {
		return fmt.Errorf("--ttl: must be greater than 0")
	}
	if err := checkDatabaseURL(c.DatabaseURL); err != nil {
		return err
	}
	if c.JWTSecret == "" {
		return c.keptSecret()
	}
	if len(c.JWTSecret) < minSecretLen {
		return fmt.Errorf("SECKILL_JWT_SECRET (--jwt-secret): must be at least %d bytes", minSecretLen)
	}
	return nil
}

// keptSecret reads the secret serve keeps for the database setting, or says that
// SECKILL_JWT_SECRET is unset and none is kept.
func (c *tokenCmd) keptSecret() error {
	path := secretFile(c.DatabaseURL)
	if path == "" {
		return errors.New("SECKILL_JWT_SECRET (--jwt-secret) is unset, and serve keeps no secret for a PostgreSQL database: set it to the secret serve runs with")
	}
	secret, err := readSecret(path)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("SECKILL_JWT_SECRET (--jwt-secret) is unset, and no secret is kept in %s (serve keeps one there from its first start in the zero-setup mode): set it to the secret serve runs with, or run this where serve runs", path)
	}
	if err != nil {
		return err
	}
	c.JWTSecret = secret
	return nil
}

// Run prints a token signed with the server's secret, or --count of them, one per line.
func (c *tokenCmd) Run(context.Context) error {
	return c.mint(os.Stdout)
}

// mint writes the tokens to w, one per line.
func (c *tokenCmd) mint(w io.Writer) error {
	user, err := domain.ParseUserID(c.User)
	if err != nil {
		return err
	}
	tokens := httpapi.NewTokens([]byte(c.JWTSecret))
	out := bufio.NewWriter(w)
	for i := range c.Count {
		tok, err := tokens.Mint(user+domain.UserID(i), c.Admin, c.TTL)
		if err != nil {
			return err
		}
		if _, err := fmt.Fprintln(out, tok); err != nil {
			return err
		}
	}
	return out.Flush()
}
