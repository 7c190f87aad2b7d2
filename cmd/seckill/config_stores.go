package main

import (
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/adapters/redisstore"
	"github.com/seckill/seckill/adapters/sqlstore"
)

// The settings naming Redis and the database.

// checkRedisURL accepts a Redis URL (with more cluster seeds as addr parameters), or
// nothing: the in-process Redis.
func checkRedisURL(s string) error {
	if s == "" {
		return nil
	}
	if _, _, err := redisstore.ParseURL(s); err != nil {
		return fmt.Errorf("SECKILL_REDIS_URL (--redis-url): %v", err)
	}
	return nil
}

// checkSentinels accepts both the sentinels' addresses and the master's name, or
// neither; with them, SECKILL_REDIS_URL may only name one server (not cluster seeds).
func (c *Common) checkSentinels() error {
	if (c.RedisSentinels == "") != (c.RedisMasterName == "") {
		return fmt.Errorf("SECKILL_REDIS_SENTINELS (--redis-sentinels) and SECKILL_REDIS_MASTER_NAME (--redis-master-name): set both or neither")
	}
	if c.RedisSentinels == "" {
		return nil
	}
	if strings.TrimSpace(c.RedisMasterName) != c.RedisMasterName {
		return fmt.Errorf("SECKILL_REDIS_MASTER_NAME (--redis-master-name): %q has surrounding spaces", c.RedisMasterName)
	}
	for _, addr := range strings.Split(c.RedisSentinels, ",") {
		addr = strings.TrimSpace(addr)
		host, port, err := net.SplitHostPort(addr)
		if err == nil && host == "" {
			err = fmt.Errorf("no host")
		}
		if n, perr := strconv.Atoi(port); err == nil && (perr != nil || n < 1 || n > 65535) {
			err = fmt.Errorf("port %q is not between 1 and 65535", port)
		}
		if err != nil {
			return fmt.Errorf("SECKILL_REDIS_SENTINELS (--redis-sentinels): %q is not host:port: %v", addr, err)
		}
	}
	if c.RedisURL != "" {
		if _, err := redis.ParseURL(c.RedisURL); err != nil {
			return fmt.Errorf("SECKILL_REDIS_URL (--redis-url): with SECKILL_REDIS_SENTINELS it gives the master's password and database only: %v", err)
		}
	}
	return nil
}

// sentinels returns the addresses of SECKILL_REDIS_SENTINELS (validated).
func (c *Common) sentinels() []string {
	var out []string
	for _, addr := range strings.Split(c.RedisSentinels, ",") {
		out = append(out, strings.TrimSpace(addr))
	}
	return out
}

// embeddedRedis reports whether the settings name no Redis, so serve runs the
// in-process one.
func (c *Common) embeddedRedis() bool {
	return c.RedisURL == "" && c.RedisSentinels == ""
}

// trial reports whether the settings make a service for trying and testing: one with
// the in-process Redis or a SQLite database (the zero-setup defaults of both).
func (c *Common) trial() bool {
	_, isSQLite := c.sqliteFile()
	return c.embeddedRedis() || isSQLite
}

// sqliteFile returns the SQLite file the database setting names, by default or
// explicitly, and whether it names one.
func (c *Common) sqliteFile() (string, bool) {
	path, isSQLite, _ := sqlstore.SQLitePath(databaseURL(c.DatabaseURL))
	return path, isSQLite
}

// defaultDatabaseURL is the database of the zero-setup mode, used when
// SECKILL_DATABASE_URL is unset: a SQLite file in the working directory.
const defaultDatabaseURL = sqlstore.SQLiteScheme + "seckill.db"

// databaseURL is the database s names, or the default when s is empty.
func databaseURL(s string) string {
	if s == "" {
		return defaultDatabaseURL
	}
	return s
}

// checkDatabaseURL accepts a PostgreSQL URL, a sqlite: URL, or nothing: the default
// SQLite file.
func checkDatabaseURL(s string) error {
	if s == "" {
		return nil
	}
	if _, isSQLite, err := sqlstore.SQLitePath(s); isSQLite {
		if err != nil {
			return fmt.Errorf("SECKILL_DATABASE_URL (--database-url): %v", err)
		}
		return nil
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") || u.Host == "" {
		return fmt.Errorf("SECKILL_DATABASE_URL (--database-url): want postgres://user@host:port/db or sqlite:PATH, got %q", redactURL(s))
	}
	return nil
}

// redactURL hides a password in a URL before it reaches a message.
func redactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "<unparsable>"
	}
	return u.Redacted()
}
