package main

import (
	"strings"
	"testing"
)

// serveDefaults is serve's configuration with every setting at its default.
func serveDefaults(t *testing.T) Config {
	t.Helper()
	for _, name := range []string{"SECKILL_REDIS_URL", "SECKILL_DATABASE_URL", "SECKILL_JWT_SECRET"} {
		t.Setenv(name, "")
	}
	cfg, err := serveSettings()
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// A JWT secret may be left out only where serve runs for trying and testing (the
// in-process Redis, or a SQLite database); then it makes one up.
func TestConfigJWTSecretIsMadeUpOnlyForTrying(t *testing.T) {
	const redisURL, pgURL = "redis://127.0.0.1:6379/0", "postgres://u@127.0.0.1:5432/seckill"
	for _, tc := range []struct {
		redis, db, secret string
		ok                bool
	}{
		{"", "", "", true},
		{redisURL, "", "", true},
		{redisURL, "sqlite:x.db", "", true},
		{"", pgURL, "", true},
		{redisURL, pgURL, "", false},
		{redisURL, pgURL, "too-short", false},
		{"", "", "too-short", false},
		{redisURL, pgURL, "0123456789abcdef", true},
	} {
		cfg := serveDefaults(t)
		cfg.RedisURL, cfg.DatabaseURL, cfg.JWTSecret = tc.redis, tc.db, tc.secret
		err := cfg.Validate()
		if (err == nil) != tc.ok || (err != nil && !strings.HasPrefix(err.Error(), "SECKILL_JWT_SECRET (--jwt-secret): ")) {
			t.Errorf("redis %q, database %q, secret %q: Validate() = %v, want ok %v", tc.redis, tc.db, tc.secret, err, tc.ok)
		}
	}
}

func TestConfigDatabaseURL(t *testing.T) {
	for url, ok := range map[string]bool{
		"":                                       true, // the default SQLite file
		"sqlite:seckill.db":                      true,
		"sqlite:///var/lib/seckill/seckill.db":   true,
		"postgres://u@127.0.0.1:5432/seckill":    true,
		"postgresql://u:pw@db.example:5432/shop": true,
		"sqlite:":                                false,
		"sqlite:x.db?mode=ro":                    false,
		"mysql://u@127.0.0.1/seckill":            false,
		"postgres:///seckill":                    false,
		"seckill.db":                             false,
	} {
		cfg := serveDefaults(t)
		cfg.DatabaseURL, cfg.JWTSecret = url, "0123456789abcdef"
		err := cfg.Validate()
		if (err == nil) != ok || (err != nil && (!strings.HasPrefix(err.Error(), "SECKILL_DATABASE_URL (--database-url): ") || strings.Contains(err.Error(), "pw@"))) {
			t.Errorf("database %q: Validate() = %v, want ok %v", url, err, ok)
		}
	}
	if got, want := databaseURL(""), "sqlite:seckill.db"; got != want {
		t.Errorf("databaseURL(\"\") = %q, want %q", got, want)
	}
}

// SECKILL_REDIS_URL may name more seeds of a cluster as addr parameters; they are
// checked at start-up, as the rest of the URL is.
func TestConfigRedisURL(t *testing.T) {
	for url, ok := range map[string]bool{
		"redis://127.0.0.1:6379/0":                                       true,
		"redis://127.0.0.1:7000?addr=127.0.0.1:7001&addr=127.0.0.1:7002": true,
		"rediss://u:pw@redis.example:6380?addr=redis2.example:6380":      true,
		"redis://127.0.0.1:7000?addr=127.0.0.1":                          false,
		"redis://127.0.0.1:7000?addr=127.0.0.1:7001&bogus=1":             false,
		"http://127.0.0.1:6379":                                          false,
	} {
		cfg := serveDefaults(t)
		cfg.RedisURL, cfg.JWTSecret = url, "0123456789abcdef"
		err := cfg.Validate()
		if (err == nil) != ok || (err != nil && (!strings.HasPrefix(err.Error(), "SECKILL_REDIS_URL (--redis-url): ") || strings.Contains(err.Error(), "pw@"))) {
			t.Errorf("redis %q: Validate() = %v, want ok %v", url, err, ok)
		}
	}
}
