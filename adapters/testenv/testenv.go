// Package testenv connects integration tests to the throwaway Redis and PostgreSQL
// that scripts/test.sh starts. A test calls Redis or PostgresURL; when the service's
// variable is unset the test is skipped, except in CI (CI=true), where it fails: CI
// must never count a skipped integration test as a pass.
//
// SECKILL_TEST_REDIS_URL=cluster runs the Redis tests against the throwaway Redis
// Cluster whose URL SECKILL_TEST_REDIS_CLUSTER_URL holds (scripts/services.sh's
// start_cluster): Redis then returns a cluster client.
//
// SECKILL_TEST_REDIS_URL=embedded runs the Redis tests against the in-process server
// of the zero-setup mode (redisstore.StartEmbedded) instead: each test gets a server
// of its own, stopped when the test ends. Likewise SECKILL_TEST_DATABASE_URL=sqlite
// runs the database tests that ask for DatabaseURL against a SQLite file of their own;
// the tests of PostgreSQL itself (PostgresURL) then skip, and run in the pass with a
// server.
package testenv

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/adapters/redisstore"
	"github.com/seckill/seckill/adapters/sqlstore"
)

// Variables scripts/test.sh exports.
const (
	RedisURLVar        = "SECKILL_TEST_REDIS_URL"
	RedisClusterURLVar = "SECKILL_TEST_REDIS_CLUSTER_URL"
	DatabaseURLVar     = "SECKILL_TEST_DATABASE_URL"
)

// ClusterRedis is the value of RedisURLVar that runs the Redis tests against the Redis
// Cluster named by RedisClusterURLVar.
const ClusterRedis = "cluster"

// SQLiteDatabase is the value of DatabaseURLVar that gives every test that asks for
// DatabaseURL a new SQLite file of its own instead of a PostgreSQL database.
const SQLiteDatabase = "sqlite"

// EmbeddedRedis is the value of RedisURLVar that gives every test an embedded server of
// its own (redisstore.StartEmbedded) instead of a real Redis.
const EmbeddedRedis = "embedded"

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

// RedisURL returns the throwaway Redis server's URL, or with RedisURLVar set to
// ClusterRedis the throwaway cluster's. With RedisURLVar set to EmbeddedRedis it
// returns the URL of the test's own embedded server, started on the test's first call
// and stopped when the test ends; every call of one test (Redis included) gets the
// same server.
func RedisURL(t testing.TB) string {
	t.Helper()
	switch u := lookup(t, RedisURLVar); u {
	case EmbeddedRedis:
		return embeddedFor(t).URL()
	case ClusterRedis:
		return lookup(t, RedisClusterURLVar)
	default:
		return u
	}
}

// embedded holds the embedded server of each running test.
var embedded struct {
	sync.Mutex
	servers map[testing.TB]*redisstore.Embedded
}

// embeddedFor returns t's embedded server, starting it on the first call.
func embeddedFor(t testing.TB) *redisstore.Embedded {
	t.Helper()
	embedded.Lock()
	defer embedded.Unlock()
	if e, ok := embedded.servers[t]; ok {
		return e
	}
	e, err := redisstore.StartEmbedded()
	if err != nil {
		t.Fatalf("%s=%s: %v", RedisURLVar, EmbeddedRedis, err)
	}
	if embedded.servers == nil {
		embedded.servers = make(map[testing.TB]*redisstore.Embedded)
	}
	embedded.servers[t] = e
	// Registered before any client's cleanup, so it runs after them all.
	t.Cleanup(func() {
		embedded.Lock()
		delete(embedded.servers, t)
		embedded.Unlock()
		e.Close()
	})
	return e
}

// Redis returns a client of the throwaway Redis server (of the test's embedded server
// with RedisURLVar set to EmbeddedRedis, of the throwaway cluster with ClusterRedis),
// closed when the test ends. Tests isolate themselves with their own key prefix (see
// Unique); none flushes.
func Redis(t testing.TB) redis.UniversalClient {
	t.Helper()
	c, err := redisstore.NewClient(context.Background(), RedisURL(t), func(*redis.Options) {})
	if err != nil {
		t.Fatalf("connect to %s: %v", RedisURLVar, err)
	}
	if err := c.Ping(context.Background()).Err(); err != nil {
		t.Fatalf("ping redis: %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// DatabaseURL returns the URL of an empty database of the test's own: a new database
// on the throwaway PostgreSQL server (PostgresURL), or with DatabaseURLVar set to
// SQLiteDatabase a new SQLite file in the test's temporary directory.
func DatabaseURL(t testing.TB) string {
	t.Helper()
	if os.Getenv(DatabaseURLVar) == SQLiteDatabase {
		return sqlstore.SQLiteScheme + filepath.Join(t.TempDir(), "seckill.db")
	}
	return PostgresURL(t)
}

// PostgresURL creates an empty database on the throwaway PostgreSQL server and returns
// its URL; the database is dropped when the test ends. It is for tests of PostgreSQL
// itself, which skip in the SQLite pass (see DatabaseURL for the rest).
func PostgresURL(t testing.TB) string {
	t.Helper()
	admin := AdminDatabaseURL(t)
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
	if os.Getenv(DatabaseURLVar) == SQLiteDatabase {
		t.Skip("tests PostgreSQL itself; this is the SQLite pass (SECKILL_TEST_DATABASE_URL=sqlite), the PostgreSQL pass runs it")
	}
	return lookup(t, DatabaseURLVar)
}

// RedisAddr returns the address (host:port) of the throwaway Redis server, for tests
// of a client of one server (a relay, the breaker). With RedisURLVar set to
// ClusterRedis the test is skipped: the pass against one server runs it.
func RedisAddr(t testing.TB) string {
	t.Helper()
	if os.Getenv(RedisURLVar) == ClusterRedis {
		t.Skip("tests a client of one server; the pass against one Redis server runs it")
	}
	opts, err := redis.ParseURL(RedisURL(t))
	if err != nil {
		t.Fatalf("parse %s: %v", RedisURLVar, err)
	}
	return opts.Addr
}

// DeleteKeys deletes every key matching pattern, on each master of a cluster or on the
// one server, one key at a time (so keys of different slots may match).
func DeleteKeys(ctx context.Context, client redis.UniversalClient, pattern string) error {
	del := func(ctx context.Context, c *redis.Client) error {
		iter := c.Scan(ctx, 0, pattern, 1000).Iterator()
		for iter.Next(ctx) {
			if err := c.Unlink(ctx, iter.Val()).Err(); err != nil {
				return err
			}
		}
		return iter.Err()
	}
	switch c := client.(type) {
	case *redis.ClusterClient:
		return c.ForEachMaster(ctx, del)
	case *redis.Client:
		return del(ctx, c)
	default:
		return fmt.Errorf("delete keys: unexpected client %T", client)
	}
}

// Patience is how long a test waits for what should happen at once (a goroutine to
// return, a condition to hold) before it fails: generous, so that a busy machine never
// fails a test that is right. (10 s was not: CI once waited longer than that for a
// grab's order to reach awaiting_payment on an order's event stream, with the end-to-end
// tests' serve processes and their race detectors sharing two cores.) No test waits it
// out when it passes.
const Patience = 30 * time.Second

// Eventually polls cond until it reports ok and returns how long that took; it fails
// the test when cond has not within timeout, quoting the state cond last reported. It
// polls often at first (every 5 ms), then less (up to every 100 ms). In a synctest
// bubble it waits on the bubble's clock.
func Eventually(t testing.TB, timeout time.Duration, what string, cond func() (ok bool, state string)) time.Duration {
	t.Helper()
	start := time.Now()
	deadline := start.Add(timeout)
	pause := 5 * time.Millisecond
	for {
		ok, state := cond()
		if ok {
			return time.Since(start)
		}
		if time.Now().After(deadline) {
			if state == "" {
				t.Fatalf("%s: not within %v", what, timeout)
			}
			t.Fatalf("%s: not within %v; last seen: %s", what, timeout, state)
		}
		time.Sleep(pause)
		pause = min(2*pause, 100*time.Millisecond)
	}
}
