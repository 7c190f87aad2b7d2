package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/seckill/seckill/adapters/httpapi"
	"github.com/seckill/seckill/domain"
)

// seckill token reads the secret serve keeps beside its SQLite database when
// SECKILL_JWT_SECRET is unset, as serve does, and mints a range of users' tokens in
// one run, one per line.
func TestTokenReadsTheKeptSecretAndMintsARange(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db := filepath.Join(dir, "s.db")
	// The secret serve keeps for this database (made at its first start).
	secret, err := keptSecret(db + secretSuffix)
	if err != nil {
		t.Fatal(err)
	}
	c := tokenCmd{User: "7", Count: 3, TTL: time.Hour, DatabaseURL: "sqlite:" + db}
	if err := c.Validate(); err != nil {
		t.Fatalf("validate with the secret kept in %s: %v", db+secretSuffix, err)
	}
	var out bytes.Buffer
	if err := c.mint(&out); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 3 {
		t.Fatalf("--count 3 printed %d lines: %q", len(lines), out.String())
	}
	tokens := httpapi.NewTokens([]byte(secret))
	for i, tok := range lines {
		p, err := tokens.Parse(tok)
		if err != nil {
			t.Fatalf("token %d is not signed with the kept secret: %v", i, err)
		}
		if want := domain.UserID(7 + i); p.User != want {
			t.Errorf("token %d names user %v, want %v", i, p.User, want)
		}
	}
}

// With no secret set or kept, seckill token says the secret is unset, naming the
// setting, rather than that it is too short.
func TestTokenWithoutASecretSaysItIsUnset(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, database := range []string{"sqlite:" + filepath.Join(dir, "s.db"), "postgres://u@127.0.0.1:5432/seckill"} {
		c := tokenCmd{User: "1", Count: 1, TTL: time.Hour, DatabaseURL: database}
		err := c.Validate()
		if err == nil || !strings.Contains(err.Error(), "SECKILL_JWT_SECRET (--jwt-secret) is unset") || strings.Contains(err.Error(), "bytes") {
			t.Errorf("database %s, no secret: %v, want it to say SECKILL_JWT_SECRET is unset", database, err)
		}
	}
	// The default database is ./seckill.db: its secret is ./seckill.db.secret.
	if got, want := secretFile(""), "seckill.db"+secretSuffix; got != want {
		t.Errorf("secretFile of the default database = %q, want %q", got, want)
	}
	short := tokenCmd{User: "1", Count: 1, TTL: time.Hour, JWTSecret: "short"}
	if err := short.Validate(); err == nil || !strings.Contains(err.Error(), "at least 16 bytes") {
		t.Errorf("a short secret: %v, want it refused as too short", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "s.db"+secretSuffix)); err == nil {
		t.Error("seckill token made up a secret: one serve does not run with")
	}
}
