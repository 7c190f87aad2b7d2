// Package testenv connects integration tests to the throwaway Redis and PostgreSQL
// that scripts/test.sh starts. A test calls Redis or PostgresURL; when the service's
// variable is unset the test is skipped, except in CI (CI=true), where it fails: CI
// must never count a skipped integration test as a pass.
package testenv

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"
)

// Variables scripts/test.sh exports.
const (
	RedisURLVar    = "SECKILL_TEST_REDIS_URL"
	DatabaseURLVar = "SECKILL_TEST_DATABASE_URL"
)

func lookup(t testing.TB, name string) string {
	t.Helper()
	v := os.Getenv(name)
	if v != "" {
		return v
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s is not set; in CI every integration test must run (use scripts/test.sh)", name)
	}
	t.Skipf("%s is not set; run scripts/test.sh to test against real services", name)
	return ""
}

// Unique returns a short random name, distinct for every call, for keys, schemas and
// databases a test owns.
func Unique() string {
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b[:])
}

// RedisURL returns the throwaway Redis server's URL.
func RedisURL(t testing.TB) string {
	t.Helper()
	return lookup(t, RedisURLVar)
}

// Redis returns a client of the throwaway Redis server, closed when the test ends.
// Tests isolate themselves with their own key prefix (see Unique); none flushes.
func Redis(t testing.TB) *redis.Client {
	t.Helper()
	opts, err := redis.ParseURL(RedisURL(t))
	if err != nil {
		t.Fatalf("parse %s: %v", RedisURLVar, err)
	}
	c := redis.NewClient(opts)
	if err := c.Ping(context.Background()).Err(); err != nil {
		t.Fatalf("ping redis: %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// PostgresURL creates an empty database on the throwaway PostgreSQL server and returns
// its URL; the database is dropped when the test ends.
func PostgresURL(t testing.TB) string {
	t.Helper()
	admin := lookup(t, DatabaseURLVar)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		t.Fatalf("connect to postgres: %v", err)
	}
	defer conn.Close(ctx)
	name := "t_" + Unique()
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatalf("create database: %v", err)
	}
	t.Cleanup(func() {
		c, err := pgx.Connect(context.Background(), admin)
		if err != nil {
			t.Errorf("drop database %s: %v", name, err)
			return
		}
		defer c.Close(context.Background())
		if _, err := c.Exec(context.Background(), "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			t.Errorf("drop database %s: %v", name, err)
		}
	})
	u, err := url.Parse(admin)
	if err != nil {
		t.Fatalf("parse %s: %v", DatabaseURLVar, err)
	}
	u.Path = "/" + name
	return u.String()
}

// AdminDatabaseURL returns the URL of the throwaway server's maintenance database,
// for tests that act on the server itself (dropping connections, say).
func AdminDatabaseURL(t testing.TB) string {
	t.Helper()
	return lookup(t, DatabaseURLVar)
}
