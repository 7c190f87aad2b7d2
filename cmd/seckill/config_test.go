package main

import (
	"github.com/seckill/seckill/adapters/turnstile"

	"math"
	"os"
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

// Every numeric setting has a range where it makes sense; a value outside it stops
// start-up with one line naming the setting and its range (issue: a 1 ns request
// timeout answered every call 503, a 10G body limit started as if it were sane).
func TestConfigRanges(t *testing.T) {
	for _, tc := range []struct {
		env       string
		ok, wrong []string
		want      string // the message's range, for the first wrong value
	}{
		{"SECKILL_REQUEST_TIMEOUT", []string{"10ms", "2s", "5m"}, []string{"1ns", "9ms", "5m1s", "0", "-1s"}, "1ns is not between 10ms and 5m"},
		{"SECKILL_SHUTDOWN_TIMEOUT", []string{"1s", "15s", "1h"}, []string{"999ms", "0", "61m"}, "999ms is not between 1s and 1h"},
		{"SECKILL_WARM_INTERVAL", []string{"1s", "30s", "1h"}, []string{"1ms", "0", "2h"}, "1ms is not between 1s and 1h"},
		{"SECKILL_BODY_LIMIT", []string{"1K", "16K", "10M"}, []string{"512B", "10G", "11M", "0"}, "512B is not between 1K and 10M"},
		{"SECKILL_SOLD_OUT_TTL", []string{"0", "1ms", "1s", "1m"}, []string{"1ns", "-1s", "2m"}, "1ns is not between 1ms and 1m, or 0 (off)"},
		{"SECKILL_BATCH_SIZE", []string{"1", "100", "10000"}, []string{"0", "10001", "-1"}, "0 is not between 1 and 10000"},
		{"SECKILL_CLAIM_IDLE", []string{"1s", "30s", "24h"}, []string{"1ns", "0", "25h"}, "1ns is not between 1s and 24h"},
		{"SECKILL_MAX_DELIVERIES", []string{"1", "5", "1000"}, []string{"0", "1001"}, "0 is not between 1 and 1000"},
		{"SECKILL_TRIM_INTERVAL", []string{"100ms", "10s", "1h"}, []string{"1ns", "0", "2h"}, "1ns is not between 100ms and 1h"},
		{"SECKILL_MAX_INFLIGHT", []string{"0", "1", "10000", "1000000"}, []string{"-1", "1000001"}, "-1 is not between 1 and 1000000, or 0 (off)"},
		{"SECKILL_MAX_STREAMS", []string{"1", "10000", "1000000"}, []string{"0", "-1", "1000001"}, "0 is not between 1 and 1000000"},
		{"SECKILL_GRAB_BURST", []string{"0", "1", "10000000"}, []string{"-1", "10000001"}, "-1 is not between 1 and 10000000, or 0 (off)"},
		{"SECKILL_IP_RATE", []string{"0", "1", "1000000"}, []string{"-1", "1000001"}, "-1 is not between 1 and 1000000, or 0 (off)"},
		{"SECKILL_IP_BURST", []string{"0", "1", "1000000"}, []string{"-1", "1000001"}, "-1 is not between 1 and 1000000, or 0 (off)"},
		{"SECKILL_USER_BURST", []string{"1", "1000"}, []string{"0", "1001"}, "0 is not between 1 and 1000"},
		{"SECKILL_REDIS_MIN_REPLICAS", []string{"0", "1", "100"}, []string{"-1", "101"}, "-1 is not between 1 and 100, or 0 (off)"},
		{"SECKILL_MAX_BACKLOG", []string{"0", "1", "100000000"}, []string{"-1", "100000001"}, "-1 is not between 1 and 100000000, or 0 (off)"},
		{"SECKILL_PAYMENT_TIMEOUT", []string{"1s", "15m", "720h"}, []string{"999ms", "0", "721h"}, "999ms is not between 1s and 720h"},
		{"SECKILL_RECONCILE_INTERVAL", []string{"0", "100ms", "5m", "24h"}, []string{"1ns", "-1s", "25h"}, "1ns is not between 100ms and 24h, or 0 (off)"},
		{"SECKILL_KEY_GRACE", []string{"1m", "24h", "720h"}, []string{"1ns", "59s", "0", "721h"}, "1ns is not between 1m and 720h"},
		{"SECKILL_RECONCILE_GRACE", []string{"1ms", "30s", "24h"}, []string{"999µs", "0", "25h"}, "999µs is not between 1ms and 24h"},
	} {
		name := strings.TrimPrefix(tc.env, "SECKILL_")
		flag := "--" + strings.ReplaceAll(strings.ToLower(name), "_", "-")
		for _, v := range tc.ok {
			t.Setenv(tc.env, v)
			cfg := serveDefaults(t)
			if err := cfg.Validate(); err != nil {
				t.Errorf("%s=%s: Validate() = %v, want it accepted", tc.env, v, err)
			}
		}
		for i, v := range tc.wrong {
			t.Setenv(tc.env, v)
			cfg := serveDefaults(t)
			err := cfg.Validate()
			prefix := tc.env + " (" + flag + "): "
			if err == nil || !strings.HasPrefix(err.Error(), prefix) || strings.Contains(err.Error(), "\n") {
				t.Errorf("%s=%s: Validate() = %v, want one line starting %q", tc.env, v, err, prefix)
				continue
			}
			if i == 0 && err.Error() != prefix+tc.want {
				t.Errorf("%s=%s: Validate() = %q, want %q", tc.env, v, err, prefix+tc.want)
			}
		}
		// Unset (t.Setenv restores it after the test): the default again.
		if err := os.Unsetenv(tc.env); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("SECKILL_BODY_LIMIT", "lots")
	if cfg := serveDefaults(t); cfg.Validate() == nil || cfg.Validate().Error() != `SECKILL_BODY_LIMIT (--body-limit): "lots" is not a size like 16K or 1M` {
		t.Errorf("SECKILL_BODY_LIMIT=lots: Validate() = %v", cfg.Validate())
	}
}

// The in-process Redis is this process's own: a serve without the worker role would
// take grabs that no worker ever persists.
func TestConfigInProcessRedisRunsTheWorker(t *testing.T) {
	for _, tc := range []struct {
		redis, roles string
		ok           bool
	}{
		{"", "api,worker", true},
		{"", "worker", true},
		{"", "api", false},
		{"redis://127.0.0.1:6379/0", "api", true},
	} {
		cfg := serveDefaults(t)
		cfg.RedisURL, cfg.Roles = tc.redis, tc.roles
		err := cfg.Validate()
		if (err == nil) != tc.ok || (err != nil && !strings.HasPrefix(err.Error(), "SECKILL_ROLES (--roles): ")) {
			t.Errorf("redis %q, roles %q: Validate() = %v, want ok %v", tc.redis, tc.roles, err, tc.ok)
		}
	}
}

// The webhook settings: a URL comes with a secret, whsec_ and the base64 of at least 24
// bytes; anything else stops start-up with one line naming the setting, and never
// quotes the secret.
func TestConfigWebhook(t *testing.T) {
	const good = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw" // 24 bytes
	for _, tc := range []struct{ url, secret, want string }{
		{"", "", ""},
		{"https://hooks.example.com/seckill", good, ""},
		{"http://127.0.0.1:9000", good, ""},
		{"", good, ""},
		{"hooks.example.com", good, "SECKILL_WEBHOOK_URL (--webhook-url): "},
		{"ftp://hooks.example.com", good, "SECKILL_WEBHOOK_URL (--webhook-url): "},
		{"http://", good, "SECKILL_WEBHOOK_URL (--webhook-url): "},
		{"https://hooks.example.com", "", "SECKILL_WEBHOOK_SECRET (--webhook-secret): "},
		{"https://hooks.example.com", "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "SECKILL_WEBHOOK_SECRET (--webhook-secret): "},
		{"https://hooks.example.com", "whsec_not base64!", "SECKILL_WEBHOOK_SECRET (--webhook-secret): "},
		{"https://hooks.example.com", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2La", "SECKILL_WEBHOOK_SECRET (--webhook-secret): "}, // 19 bytes
	} {
		cfg := serveDefaults(t)
		cfg.WebhookURL, cfg.WebhookSecret = tc.url, tc.secret
		err := cfg.Validate()
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%q, %q: Validate() = %v", tc.url, tc.secret, err)
		case tc.want != "" && (err == nil || !strings.HasPrefix(err.Error(), tc.want) || strings.Contains(err.Error(), "\n")):
			t.Errorf("%q, %q: Validate() = %v, want one line starting %q", tc.url, tc.secret, err, tc.want)
		case err != nil && tc.secret != "" && strings.Contains(err.Error(), tc.secret):
			t.Errorf("%q: the error quotes the secret: %v", tc.url, err)
		}
	}
}

// The challenge settings: proof of work needs nothing; Turnstile needs its secret, its
// site key and an http(s) siteverify URL, else start-up stops with one line naming the
// setting, never quoting the secret.
func TestConfigChallenge(t *testing.T) {
	const secret = "0x4AAAAAAAsecret-value"
	for _, tc := range []struct{ kind, secret, sitekey, url, want string }{
		{"pow", "", "", turnstileDefault, ""},
		{"turnstile", secret, "0x4AAAAAAAsite", turnstileDefault, ""},
		{"turnstile", secret, "0x4AAAAAAAsite", "http://127.0.0.1:9000/siteverify", ""},
		{"turnstile", "", "0x4AAAAAAAsite", turnstileDefault, "SECKILL_TURNSTILE_SECRET (--turnstile-secret): "},
		{"turnstile", secret, "", turnstileDefault, "SECKILL_TURNSTILE_SITEKEY (--turnstile-sitekey): "},
		{"turnstile", secret, "0x4AAAAAAAsite", "challenges.cloudflare.com", "SECKILL_TURNSTILE_URL (--turnstile-url): "},
	} {
		cfg := serveDefaults(t)
		cfg.Challenge, cfg.TurnstileSecret, cfg.TurnstileSiteKey, cfg.TurnstileURL = tc.kind, tc.secret, tc.sitekey, tc.url
		err := cfg.Validate()
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%+v: Validate() = %v", tc, err)
		case tc.want != "" && (err == nil || !strings.HasPrefix(err.Error(), tc.want) || strings.Contains(err.Error(), "\n")):
			t.Errorf("%+v: Validate() = %v, want one line starting %q", tc, err, tc.want)
		case err != nil && strings.Contains(err.Error(), secret):
			t.Errorf("the error quotes the secret: %v", err)
		}
	}
	if cfg := serveDefaults(t); cfg.Challenge != "pow" || cfg.TurnstileURL != turnstileDefault {
		t.Fatalf("defaults: challenge %q, siteverify %q; want pow and Cloudflare's", cfg.Challenge, cfg.TurnstileURL)
	}
}

// turnstileDefault is the siteverify URL serve uses when none is set.
const turnstileDefault = turnstile.DefaultURL

// SECKILL_CORS_ORIGINS takes exact origins as browsers send them; anything else stops
// start-up with one line naming it.
func TestConfigCORSOrigins(t *testing.T) {
	cfg := serveDefaults(t)
	cfg.CORSOrigins = " https://www.shop.example, http://127.0.0.1:8081 ,"
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	if got, _ := cfg.corsOrigins(); !slices.Equal(got, []string{"https://www.shop.example", "http://127.0.0.1:8081"}) {
		t.Fatalf("origins %v", got)
	}
	for _, value := range []string{"*", "www.shop.example", "https://www.shop.example/", "https://Shop.example",
		"ftp://shop.example", "https://u@shop.example", "https://shop.example/path", "https://shop.example?q"} {
		cfg := serveDefaults(t)
		cfg.CORSOrigins = value
		if err := cfg.Validate(); err == nil || !strings.HasPrefix(err.Error(), "SECKILL_CORS_ORIGINS (--cors-origins): ") {
			t.Errorf("%q: Validate() = %v, want an error naming SECKILL_CORS_ORIGINS", value, err)
		}
	}
}
