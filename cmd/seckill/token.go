package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/seckill/seckill/adapters/httpapi"
	"github.com/seckill/seckill/domain"
)

type tokenCmd struct {
	User      string        `name:"user" required:"" help:"User id (a positive integer) the token names."`
	Admin     bool          `name:"admin" help:"Grant the admin role."`
	TTL       time.Duration `name:"ttl" default:"24h" help:"How long the token is valid."`
	JWTSecret string        `name:"jwt-secret" env:"SECKILL_JWT_SECRET" help:"HS256 secret (the server's)."`
}

// Validate checks the flags before Run (kong calls it; a failure exits 2).
func (c *tokenCmd) Validate() error {
	if _, err := domain.ParseUserID(c.User); err != nil {
		return fmt.Errorf("--user: %q is not a positive integer", c.User)
	}
	if c.TTL <= 0 {
		return fmt.Errorf("--ttl: must be greater than 0")
	}
	if len(c.JWTSecret) < minSecretLen {
		return fmt.Errorf("SECKILL_JWT_SECRET (--jwt-secret): must be at least %d bytes", minSecretLen)
	}
	return nil
}

// Run prints a token signed with the server's secret.
func (c *tokenCmd) Run(context.Context) error {
	user, err := domain.ParseUserID(c.User)
	if err != nil {
		return err
	}
	tok, err := httpapi.NewTokens([]byte(c.JWTSecret)).Mint(user, c.Admin, c.TTL)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(os.Stdout, tok)
	return err
}
