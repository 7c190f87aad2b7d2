package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"time"

	"github.com/seckill/seckill/adapters/httpapi"
	"github.com/seckill/seckill/domain"
)

type tokenCmd struct {
	User      string        `name:"user" required:"" help:"User id (a positive integer) the token names."`
	Count     int           `name:"count" default:"1" help:"Mint this many tokens, for users --user, --user+1, …, one per line (for load tools)."`
	Admin     bool          `name:"admin" help:"Grant the admin role."`
	TTL       time.Duration `name:"ttl" default:"24h" help:"How long the token is valid."`
	JWTSecret string        `name:"jwt-secret" env:"SECKILL_JWT_SECRET" help:"HS256 secret (the server's)."`
}

// Validate checks the flags before Run (kong calls it; a failure exits 2).
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
	if len(c.JWTSecret) < minSecretLen {
		return fmt.Errorf("SECKILL_JWT_SECRET (--jwt-secret): must be at least %d bytes", minSecretLen)
	}
	return nil
}

// Run prints a token signed with the server's secret, or --count of them, one per line.
func (c *tokenCmd) Run(context.Context) error {
	user, err := domain.ParseUserID(c.User)
	if err != nil {
		return err
	}
	tokens := httpapi.NewTokens([]byte(c.JWTSecret))
	out := bufio.NewWriter(os.Stdout)
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
