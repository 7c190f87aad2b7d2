package main

import (
	"math"
	"slices"
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

// Every number must be finite: NaN passes every comparison-based range check.
func TestConfigRefusesNonFiniteRates(t *testing.T) {
	for _, tc := range []struct {
		name string
		set  func(*Config, float64)
	}{
		{"SECKILL_GRAB_RATE", func(c *Config, v float64) { c.GrabRate = v }},
		{"SECKILL_USER_RATE", func(c *Config, v float64) { c.UserRate = v }},
	} {
		for _, v := range []float64{math.NaN(), math.Inf(1), math.Inf(-1), 1e300} {
			cfg := serveDefaults(t)
			tc.set(&cfg, v)
			if err := cfg.Validate(); err == nil || !strings.HasPrefix(err.Error(), tc.name+" ") {
				t.Errorf("%s = %v: Validate() = %v, want an error naming it", tc.name, v, err)
			}
		}
	}
}

func TestConfigTrustedProxies(t *testing.T) {
	for value, want := range map[string][]string{
		"":                                       nil,
		"10.0.0.0/8":                             {"10.0.0.0/8"},
		" 10.1.2.3/8 , 192.0.2.7,2001:db8::/32 ": {"10.0.0.0/8", "192.0.2.7/32", "2001:db8::/32"}, //nolint:gocritic // the spaces are the case under test
		"::1":                                    {"::1/128"},
	} {
		cfg := serveDefaults(t)
		cfg.TrustedProxies = value
		if err := cfg.Validate(); err != nil {
			t.Errorf("%q: Validate() = %v", value, err)
			continue
		}
		got, _ := cfg.trustedProxies()
		var names []string
		for _, n := range got {
			names = append(names, n.String())
		}
		if !slices.Equal(names, want) {
			t.Errorf("%q: ranges %v, want %v", value, names, want)
		}
	}
	for _, value := range []string{"10.0.0.0/33", "example.com", "10.0.0.0/8,nope", "fe80::1%eth0"} {
		cfg := serveDefaults(t)
		cfg.TrustedProxies = value
		if err := cfg.Validate(); err == nil || !strings.HasPrefix(err.Error(), "SECKILL_TRUSTED_PROXIES (--trusted-proxies): ") {
			t.Errorf("%q: Validate() = %v, want an error naming SECKILL_TRUSTED_PROXIES", value, err)
		}
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

// SECKILL_REDIS_SENTINELS and SECKILL_REDIS_MASTER_NAME come together, each sentinel
// is host:port, and a URL beside them names one server; a bad value is one line naming it.
func TestConfigRedisSentinels(t *testing.T) {
	for _, tc := range []struct {
		sentinels, master, url string
		wantErr                string
	}{
		{"127.0.0.1:26379", "seckill", "", ""},
		{"127.0.0.1:26379, sentinel-2.example:26379,[::1]:26379", "seckill", "redis://:pw@ignored:6379/2", ""},
		{"127.0.0.1:26379", "", "", "SECKILL_REDIS_SENTINELS (--redis-sentinels) and SECKILL_REDIS_MASTER_NAME"},
		{"", "seckill", "", "SECKILL_REDIS_SENTINELS (--redis-sentinels) and SECKILL_REDIS_MASTER_NAME"},
		{"127.0.0.1", "seckill", "", `SECKILL_REDIS_SENTINELS (--redis-sentinels): "127.0.0.1" is not host:port`},
		{"127.0.0.1:26379,", "seckill", "", `SECKILL_REDIS_SENTINELS (--redis-sentinels): "" is not host:port`},
		{":26379", "seckill", "", `SECKILL_REDIS_SENTINELS (--redis-sentinels): ":26379" is not host:port`},
		{"127.0.0.1:0", "seckill", "", `SECKILL_REDIS_SENTINELS (--redis-sentinels): "127.0.0.1:0" is not host:port`},
		{"127.0.0.1:http", "seckill", "", `SECKILL_REDIS_SENTINELS (--redis-sentinels): "127.0.0.1:http" is not host:port`},
		{"127.0.0.1:26379", " seckill", "", "SECKILL_REDIS_MASTER_NAME (--redis-master-name)"},
		{"127.0.0.1:26379", "seckill", "redis://a:7000?addr=b:7001", "SECKILL_REDIS_URL (--redis-url): with SECKILL_REDIS_SENTINELS"},
	} {
		cfg := serveDefaults(t)
		cfg.RedisSentinels, cfg.RedisMasterName, cfg.RedisURL, cfg.JWTSecret = tc.sentinels, tc.master, tc.url, "0123456789abcdef"
		err := cfg.Validate()
		if tc.wantErr == "" {
			if err != nil {
				t.Errorf("%+v: Validate() = %v, want nil", tc, err)
			}
			continue
		}
		if err == nil || !strings.HasPrefix(err.Error(), tc.wantErr) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%+v: Validate() = %v, want one line starting %q", tc, err, tc.wantErr)
		}
	}
	// With sentinels and no URL, the service is not the zero-setup one.
	cfg := serveDefaults(t)
	cfg.RedisSentinels, cfg.RedisMasterName = "127.0.0.1:26379", "seckill"
	if cfg.embeddedRedis() {
		t.Error("sentinels set, yet the in-process Redis would run")
	}
}
