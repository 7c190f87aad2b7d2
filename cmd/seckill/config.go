package main

import (
	"encoding/base64"
	"errors"
	"fmt"
	"math"
	"net"
	"net/netip"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/gommon/bytes"
	"github.com/mattn/go-isatty"
	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/seckill/seckill/adapters/redisstore"
	"github.com/seckill/seckill/adapters/sqlstore"
)

// Common holds the settings of every command that reaches Redis and the database.
type Common struct {
	StrategyConfig `embed:""`

	RedisURL       string        `name:"redis-url" env:"SECKILL_REDIS_URL" help:"Redis URL, e.g. redis://127.0.0.1:6379/0; unset, serve runs an in-process Redis (for trying and testing: it keeps nothing across restarts)."`
	DatabaseURL    string        `name:"database-url" env:"SECKILL_DATABASE_URL" help:"PostgreSQL URL, e.g. postgres://user@127.0.0.1:5432/seckill?sslmode=disable, or sqlite:PATH for a SQLite file; unset, the SQLite file seckill.db in the working directory, for trying and testing."`
	KeyPrefix      string        `name:"key-prefix" env:"SECKILL_KEY_PREFIX" default:"seckill" help:"Prefix of every Redis key seckill writes."`
	KeyGrace       time.Duration `name:"key-grace" env:"SECKILL_KEY_GRACE" default:"24h" help:"How long a voucher's Redis keys outlive the end of its sale."`
	ReconcileGrace time.Duration `name:"reconcile-grace" env:"SECKILL_RECONCILE_GRACE" default:"30s" help:"Reservations younger than this are not judged by reconciliation."`
	LogLevel       string        `name:"log-level" env:"SECKILL_LOG_LEVEL" default:"info" help:"debug, info, warn or error."`
	LogFormat      string        `name:"log-format" env:"SECKILL_LOG_FORMAT" help:"json or console; unset, console when stderr is a terminal and json otherwise."`
	OtelExporter   string        `name:"otel-exporter" env:"SECKILL_OTEL_EXPORTER" default:"none" enum:"none,stdout,otlp" help:"Where OpenTelemetry traces go: none, stdout (JSON on stderr) or otlp (OTLP/HTTP to OTEL_EXPORTER_OTLP_ENDPOINT)."`

	RedisSentinels  string `name:"redis-sentinels" env:"SECKILL_REDIS_SENTINELS" help:"Redis Sentinels to ask for the master, host:port[,host:port...]; with SECKILL_REDIS_MASTER_NAME, Redis is that master, followed through failovers (SECKILL_REDIS_URL then gives only the password and database)."`
	RedisMasterName string `name:"redis-master-name" env:"SECKILL_REDIS_MASTER_NAME" help:"Name of the master the Redis Sentinels watch (with SECKILL_REDIS_SENTINELS)."`
}

// Config is every setting of `seckill serve`, read once from flags and SECKILL_*
// variables and validated before anything starts. Adapters receive explicit values
// from it and never read the environment themselves.
type Config struct {
	Common `embed:""`

	HTTPAddr        string        `name:"http-addr" env:"SECKILL_HTTP_ADDR" help:"Address the API listens on; unset, :8080 (every interface), or 127.0.0.1:8080 (this machine only) with the in-process Redis or a SQLite database (trying and testing)."`
	MetricsAddr     string        `name:"metrics-addr" env:"SECKILL_METRICS_ADDR" help:"Address of a listener serving only GET /metrics; unset, /metrics is on the API's listener."`
	JWTSecret       string        `name:"jwt-secret" env:"SECKILL_JWT_SECRET" help:"HS256 secret that signs bearer tokens (at least 16 bytes); unset with the in-process Redis or a SQLite database (trying and testing), a random one is made and an admin token printed."`
	RequestTimeout  time.Duration `name:"request-timeout" env:"SECKILL_REQUEST_TIMEOUT" default:"2s" help:"Deadline of each request; past it the answer is 503."`
	ShutdownTimeout time.Duration `name:"shutdown-timeout" env:"SECKILL_SHUTDOWN_TIMEOUT" default:"15s" help:"How long SIGTERM waits for in-flight requests."`
	WarmInterval    time.Duration `name:"warm-interval" env:"SECKILL_WARM_INTERVAL" default:"30s" help:"How often active vouchers missing from Redis are loaded again, and sale states left behind by an edit take the database's terms."`
	BodyLimit       string        `name:"body-limit" env:"SECKILL_BODY_LIMIT" default:"16K" help:"Largest request body accepted (e.g. 16K, 1M)."`

	SoldOutTTL    time.Duration `name:"sold-out-ttl" env:"SECKILL_SOLD_OUT_TTL" default:"1s" help:"How long an instance answers sold_out without asking Redis once a voucher sold out (0 disables)."`
	Roles         string        `name:"roles" env:"SECKILL_ROLES" default:"api,worker" help:"What this process runs: api, worker, or both (comma-separated)."`
	Consumer      string        `name:"consumer" env:"SECKILL_CONSUMER" help:"This process's consumer name in the fulfillment group; unique per process (default: host-pid-random)."`
	BatchSize     int           `name:"batch-size" env:"SECKILL_BATCH_SIZE" default:"100" help:"Reservations a worker persists per transaction."`
	ClaimIdle     time.Duration `name:"claim-idle" env:"SECKILL_CLAIM_IDLE" default:"30s" help:"How long a reservation may sit unacknowledged in any worker before another claims it."`
	MaxDeliveries int64         `name:"max-deliveries" env:"SECKILL_MAX_DELIVERIES" default:"5" help:"Deliveries after which a reservation that still fails goes to the dead letter and is compensated."`
	TrimInterval  time.Duration `name:"trim-interval" env:"SECKILL_TRIM_INTERVAL" default:"10s" help:"How often acknowledged stream entries are trimmed."`

	MaxInflight int     `name:"max-inflight" env:"SECKILL_MAX_INFLIGHT" default:"10000" help:"Grab requests one instance works on at once; beyond it 503 at once (0 disables)."`
	GrabRate    float64 `name:"grab-rate" env:"SECKILL_GRAB_RATE" default:"0" help:"Grab requests one instance admits a second (token bucket; 0 disables)."`
	GrabBurst   int     `name:"grab-burst" env:"SECKILL_GRAB_BURST" default:"0" help:"Grab requests admitted at once before SECKILL_GRAB_RATE applies (0: one second's worth)."`
	IPRate      int     `name:"ip-rate" env:"SECKILL_IP_RATE" default:"100" help:"Requests a second one client address may make to the public voucher reads, shared by all instances (0 disables)."`
	IPBurst     int     `name:"ip-burst" env:"SECKILL_IP_BURST" default:"200" help:"Public reads one client address may make at once."`
	MaxStreams  int     `name:"max-streams" env:"SECKILL_MAX_STREAMS" default:"10000" help:"Event streams (server-sent events) one instance holds open at once; beyond it 503."`

	TrustedProxies string        `name:"trusted-proxies" env:"SECKILL_TRUSTED_PROXIES" help:"Comma-separated CIDRs (or addresses) of the proxies in front of the service; from them, X-Forwarded-For names the client for per-address limits and logs (default: none, the connection's address)."`
	CORSOrigins    string        `name:"cors-origins" env:"SECKILL_CORS_ORIGINS" help:"Comma-separated origins (scheme://host[:port], exact) whose pages a browser lets call the API (CORS); default none: no CORS headers."`
	PublicMaxAge   time.Duration `name:"public-max-age" env:"SECKILL_PUBLIC_MAX_AGE" default:"1s" help:"How long a browser or CDN may reuse the public voucher reads without asking again (Cache-Control max-age, whole seconds; 0 revalidates every time)."`

	UserRate         float64 `name:"user-rate" env:"SECKILL_USER_RATE" default:"5" help:"Grabs a second one user may make of one voucher, shared by all instances (0 disables)."`
	UserBurst        int     `name:"user-burst" env:"SECKILL_USER_BURST" default:"5" help:"Grabs one user may make at once before SECKILL_USER_RATE applies."`
	RedisMinReplicas int     `name:"redis-min-replicas" env:"SECKILL_REDIS_MIN_REPLICAS" default:"0" help:"Replicas that must confirm each grab (one WAIT per batch) before it is answered 202 (0: none)."`
	MaxBacklog       int     `name:"max-backlog" env:"SECKILL_MAX_BACKLOG" default:"100000" help:"Reservations of one voucher that may wait to be persisted before new grabs answer 503 (0 disables)."`

	PaymentTimeout    time.Duration `name:"payment-timeout" env:"SECKILL_PAYMENT_TIMEOUT" default:"15m" help:"An order unpaid this long expires and its units go back on sale."`
	ReconcileInterval time.Duration `name:"reconcile-interval" env:"SECKILL_RECONCILE_INTERVAL" default:"5m" help:"How often serve checks that Redis and the database agree, and logs any drift (0 disables)."`

	DrawBatch int           `name:"draw-batch" env:"SECKILL_DRAW_BATCH" default:"1000" help:"Winners' orders and backfill places a draw takes per Redis call."`
	DrawLease time.Duration `name:"draw-lease" env:"SECKILL_DRAW_LEASE" default:"15s" help:"How long the instance running the draws holds their lease unrenewed; after it, another instance carries on an unfinished draw."`

	Challenge        string `name:"challenge" env:"SECKILL_CHALLENGE" default:"pow" enum:"pow,turnstile" help:"How a voucher with \"challenge\": \"pow\" is proven: pow (proof of work, built in) or turnstile (Cloudflare Turnstile; needs SECKILL_TURNSTILE_SECRET and SECKILL_TURNSTILE_SITEKEY)."`
	TurnstileSecret  string `name:"turnstile-secret" env:"SECKILL_TURNSTILE_SECRET" help:"The Turnstile widget's secret key (with SECKILL_CHALLENGE=turnstile)."`
	TurnstileSiteKey string `name:"turnstile-sitekey" env:"SECKILL_TURNSTILE_SITEKEY" help:"The Turnstile widget's site key, handed to clients (with SECKILL_CHALLENGE=turnstile)."`
	TurnstileURL     string `name:"turnstile-url" env:"SECKILL_TURNSTILE_URL" default:"https://challenges.cloudflare.com/turnstile/v0/siteverify" help:"Turnstile's siteverify endpoint."`

	WebhookURL    string `name:"webhook-url" env:"SECKILL_WEBHOOK_URL" help:"http(s) URL every order and voucher event is POSTed to (Standard Webhooks); unset, webhooks are off and no event is kept. Give every instance the same."`
	WebhookSecret string `name:"webhook-secret" env:"SECKILL_WEBHOOK_SECRET" help:"Key the webhooks are signed with: whsec_ and the base64 of at least 24 bytes; several, comma-separated, sign each delivery with each (to rotate one without a gap); required with SECKILL_WEBHOOK_URL."`
}

// minWebhookKey is the shortest webhook signing key serve accepts, in bytes.
const minWebhookKey = 24

// checkWebhook validates the webhook settings: a URL, when set, is an absolute http
// or https URL and comes with a secret; a secret, when set, is whsec_ and the base64
// of at least minWebhookKey bytes. The secret is never quoted back.
func (c *Config) checkWebhook() error {
	if c.WebhookURL != "" {
		u, err := url.Parse(c.WebhookURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("SECKILL_WEBHOOK_URL (--webhook-url): %q is not an http or https URL", c.WebhookURL)
		}
		if c.WebhookSecret == "" {
			return errors.New("SECKILL_WEBHOOK_SECRET (--webhook-secret): required with SECKILL_WEBHOOK_URL")
		}
	}
	if c.WebhookSecret == "" {
		return nil
	}
	for i, secret := range c.webhookSecrets() {
		key, ok := strings.CutPrefix(secret, "whsec_")
		raw, err := base64.StdEncoding.DecodeString(key)
		if !ok || err != nil || len(raw) < minWebhookKey {
			return fmt.Errorf("SECKILL_WEBHOOK_SECRET (--webhook-secret): secret %d must be whsec_ and the base64 of at least %d bytes", i+1, minWebhookKey)
		}
	}
	return nil
}

// webhookSecrets are the secrets of WebhookSecret, comma-separated: each delivery is
// signed with each (several while one is rotated).
func (c *Config) webhookSecrets() []string {
	var out []string
	for _, s := range strings.Split(c.WebhookSecret, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// checkChallenge validates the challenge settings: Turnstile needs its secret and
// site key, and a siteverify URL that is an absolute http or https URL. The secret is
// never quoted back.
func (c *Config) checkChallenge() error {
	if c.Challenge != "turnstile" {
		return nil
	}
	if c.TurnstileSecret == "" {
		return errors.New("SECKILL_TURNSTILE_SECRET (--turnstile-secret): required with SECKILL_CHALLENGE=turnstile")
	}
	if c.TurnstileSiteKey == "" {
		return errors.New("SECKILL_TURNSTILE_SITEKEY (--turnstile-sitekey): required with SECKILL_CHALLENGE=turnstile")
	}
	u, err := url.Parse(c.TurnstileURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("SECKILL_TURNSTILE_URL (--turnstile-url): %q is not an http or https URL", c.TurnstileURL)
	}
	return nil
}

// runsAPI and runsWorker read Roles (validated by Validate).
func (c *Config) runsAPI() bool    { return slices.Contains(c.roles(), "api") }
func (c *Config) runsWorker() bool { return slices.Contains(c.roles(), "worker") }

func (c *Config) roles() []string {
	var out []string
	for _, r := range strings.Split(c.Roles, ",") {
		if r = strings.TrimSpace(r); r != "" {
			out = append(out, r)
		}
	}
	return out
}

// minSecretLen is the shortest JWT secret serve accepts.
const minSecretLen = 16

// validate checks the common settings and returns the first problem as one line
// naming the setting.
func (c *Common) validate() error {
	if err := c.StrategyConfig.Validate(); err != nil {
		return err
	}
	if err := checkRedisURL(c.RedisURL); err != nil {
		return err
	}
	if err := c.checkSentinels(); err != nil {
		return err
	}
	if err := checkDatabaseURL(c.DatabaseURL); err != nil {
		return err
	}
	if _, err := zapcore.ParseLevel(c.LogLevel); err != nil || c.LogLevel == "" {
		return fmt.Errorf("SECKILL_LOG_LEVEL (--log-level): %q is not one of debug, info, warn, error", c.LogLevel)
	}
	if c.LogFormat != "" && c.LogFormat != "json" && c.LogFormat != "console" {
		return fmt.Errorf("SECKILL_LOG_FORMAT (--log-format): %q is not json or console", c.LogFormat)
	}
	if c.KeyPrefix == "" || strings.ContainsAny(c.KeyPrefix, "{} \t\n") {
		return fmt.Errorf("SECKILL_KEY_PREFIX (--key-prefix): %q must be non-empty, without braces or spaces", c.KeyPrefix)
	}
	return inRange(
		durationSetting("SECKILL_KEY_GRACE (--key-grace)", c.KeyGrace, time.Minute, 30*day, false),
		durationSetting("SECKILL_RECONCILE_GRACE (--reconcile-grace)", c.ReconcileGrace, time.Millisecond, day, false),
	)
}

// Validate checks every setting and returns the first problem as one line naming the
// setting. Kong calls it before Run; a failure exits with status 2.
func (c *Config) Validate() error {
	if err := c.Common.validate(); err != nil {
		return err
	}
	// In a mode for trying and testing, serve makes up a secret itself.
	if !(c.JWTSecret == "" && c.trial()) && len(c.JWTSecret) < minSecretLen {
		return fmt.Errorf("SECKILL_JWT_SECRET (--jwt-secret): must be at least %d bytes", minSecretLen)
	}
	if addr := c.listenAddr(); !strings.Contains(addr, ":") {
		return fmt.Errorf("SECKILL_HTTP_ADDR (--http-addr): %q is not host:port", addr)
	}
	roles := c.roles()
	if len(roles) == 0 {
		return fmt.Errorf("SECKILL_ROLES (--roles): %q names no role; use api, worker or api,worker", c.Roles)
	}
	for _, r := range roles {
		if r != "api" && r != "worker" {
			return fmt.Errorf("SECKILL_ROLES (--roles): unknown role %q; use api, worker or api,worker", r)
		}
	}
	if c.embeddedRedis() && !c.runsWorker() {
		// No other process can reach this one's in-process Redis: without its own
		// worker, no reservation would ever become an order.
		return fmt.Errorf("SECKILL_ROLES (--roles): %q without worker needs a shared Redis (SECKILL_REDIS_URL): the in-process one is this process's own", c.Roles)
	}
	if strings.ContainsAny(c.Consumer, " \t\n") {
		return fmt.Errorf("SECKILL_CONSUMER (--consumer): %q must not contain spaces", c.Consumer)
	}
	// NaN compares false with everything and would pass every range check below;
	// NaN and ±Inf are no rate at all.
	if err := finite(
		rate{"SECKILL_GRAB_RATE (--grab-rate)", c.GrabRate},
		rate{"SECKILL_USER_RATE (--user-rate)", c.UserRate},
	); err != nil {
		return err
	}
	if c.GrabRate < 0 || c.GrabRate > maxGrabRate {
		return fmt.Errorf("SECKILL_GRAB_RATE (--grab-rate): %v is not between 0 (off) and %d", c.GrabRate, maxGrabRate)
	}
	if c.UserRate < 0 || c.UserRate > 1000 {
		return fmt.Errorf("SECKILL_USER_RATE (--user-rate): %v is not between 0 (off) and 1000", c.UserRate)
	}
	if err := inRange(c.ranges()...); err != nil {
		return err
	}
	if err := c.checkWebhook(); err != nil {
		return err
	}
	if err := c.checkChallenge(); err != nil {
		return err
	}
	if _, err := c.corsOrigins(); err != nil {
		return err
	}
	_, err := c.trustedProxies()
	return err
}

// day is 24 hours, for the ranges below.
const day = 24 * time.Hour

// ranges are serve's numeric settings, each with the range where it makes sense:
// outside it a value is a mistake (a 1 ns request timeout answers every call 503, a
// 10 GB body limit is memory no machine has), and start-up stops with one line naming
// it. The table of settings in docs/operations.md lists the same ranges.
func (c *Config) ranges() []bounded {
	const off = true // 0 turns the setting off
	return []bounded{
		durationSetting("SECKILL_REQUEST_TIMEOUT (--request-timeout)", c.RequestTimeout, 10*time.Millisecond, 5*time.Minute, false),
		durationSetting("SECKILL_SHUTDOWN_TIMEOUT (--shutdown-timeout)", c.ShutdownTimeout, time.Second, time.Hour, false),
		durationSetting("SECKILL_WARM_INTERVAL (--warm-interval)", c.WarmInterval, time.Second, time.Hour, false),
		sizeSetting("SECKILL_BODY_LIMIT (--body-limit)", c.BodyLimit, 1e3, 10e6),
		durationSetting("SECKILL_SOLD_OUT_TTL (--sold-out-ttl)", c.SoldOutTTL, time.Millisecond, time.Minute, off),
		countSetting("SECKILL_BATCH_SIZE (--batch-size)", int64(c.BatchSize), 1, 10_000, false),
		durationSetting("SECKILL_CLAIM_IDLE (--claim-idle)", c.ClaimIdle, time.Second, day, false),
		countSetting("SECKILL_MAX_DELIVERIES (--max-deliveries)", c.MaxDeliveries, 1, 1000, false),
		durationSetting("SECKILL_TRIM_INTERVAL (--trim-interval)", c.TrimInterval, 100*time.Millisecond, time.Hour, false),
		countSetting("SECKILL_MAX_INFLIGHT (--max-inflight)", int64(c.MaxInflight), 1, 1_000_000, off),
		countSetting("SECKILL_MAX_STREAMS (--max-streams)", int64(c.MaxStreams), 1, 1_000_000, false),
		countSetting("SECKILL_GRAB_BURST (--grab-burst)", int64(c.GrabBurst), 1, maxGrabRate, off),
		countSetting("SECKILL_IP_RATE (--ip-rate)", int64(c.IPRate), 1, 1_000_000, off),
		countSetting("SECKILL_IP_BURST (--ip-burst)", int64(c.IPBurst), 1, 1_000_000, off),
		countSetting("SECKILL_USER_BURST (--user-burst)", int64(c.UserBurst), 1, 1000, false),
		countSetting("SECKILL_REDIS_MIN_REPLICAS (--redis-min-replicas)", int64(c.RedisMinReplicas), 1, 100, off),
		countSetting("SECKILL_MAX_BACKLOG (--max-backlog)", int64(c.MaxBacklog), 1, 100_000_000, off),
		durationSetting("SECKILL_PAYMENT_TIMEOUT (--payment-timeout)", c.PaymentTimeout, time.Second, 30*day, false),
		durationSetting("SECKILL_RECONCILE_INTERVAL (--reconcile-interval)", c.ReconcileInterval, 100*time.Millisecond, day, off),
		countSetting("SECKILL_DRAW_BATCH (--draw-batch)", int64(c.DrawBatch), 1, 100_000, false),
		durationSetting("SECKILL_DRAW_LEASE (--draw-lease)", c.DrawLease, time.Second, time.Hour, false),
		durationSetting("SECKILL_PUBLIC_MAX_AGE (--public-max-age)", c.PublicMaxAge, time.Second, time.Hour, true),
	}
}

// corsOrigins parses CORSOrigins: origins as a browser sends them in Origin —
// http or https, a host, a port if not the scheme's, nothing after — comma-separated.
func (c *Config) corsOrigins() ([]string, error) {
	var out []string
	for _, s := range strings.Split(c.CORSOrigins, ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		u, err := url.Parse(s)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil ||
			u.Path != "" || u.RawQuery != "" || u.Fragment != "" || s != u.Scheme+"://"+u.Host || strings.ToLower(s) != s {
			return nil, fmt.Errorf("SECKILL_CORS_ORIGINS (--cors-origins): %q is not an origin like https://shop.example.com (lower case, no path)", s)
		}
		out = append(out, s)
	}
	return out, nil
}

// trustedProxies parses TrustedProxies: CIDRs, or single addresses, comma-separated.
func (c *Config) trustedProxies() ([]*net.IPNet, error) {
	var out []*net.IPNet
	for _, s := range strings.Split(c.TrustedProxies, ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		p, err := netip.ParsePrefix(s)
		if err != nil {
			a, aerr := netip.ParseAddr(s)
			if aerr != nil || a.Zone() != "" {
				return nil, fmt.Errorf("SECKILL_TRUSTED_PROXIES (--trusted-proxies): %q is not a CIDR like 10.0.0.0/8 or an address", s)
			}
			p = netip.PrefixFrom(a, a.BitLen())
		}
		p = p.Masked()
		out = append(out, &net.IPNet{IP: p.Addr().AsSlice(), Mask: net.CIDRMask(p.Bits(), p.Addr().BitLen())})
	}
	return out, nil
}

// maxGrabRate bounds SECKILL_GRAB_RATE: far above what one instance can serve, and
// low enough that the token bucket's arithmetic stays exact.
const maxGrabRate = 10_000_000

// rate is a named number for finite.
type rate struct {
	name string
	v    float64
}

// finite returns an error naming the first rate that is NaN or infinite.
func finite(rates ...rate) error {
	for _, r := range rates {
		if math.IsNaN(r.v) || math.IsInf(r.v, 0) {
			return fmt.Errorf("%s: %v is not a finite number", r.name, r.v)
		}
	}
	return nil
}

// bounded is a numeric setting and its range, for inRange: its value, how to show a
// number of it, and whether 0 turns it off.
type bounded struct {
	name        string
	v, min, max int64
	off         bool
	show        func(int64) string
	// invalid, when set, says what is wrong with a value that is no number at all.
	invalid string
}

// durationSetting is a duration setting between lo and hi; off allows 0 too.
func durationSetting(name string, v, lo, hi time.Duration, off bool) bounded {
	return bounded{name: name, v: int64(v), min: int64(lo), max: int64(hi), off: off,
		show: func(n int64) string { return shortDuration(time.Duration(n)) }}
}

// countSetting is a count between lo and hi; off allows 0 too.
func countSetting(name string, v, lo, hi int64, off bool) bounded {
	return bounded{name: name, v: v, min: lo, max: hi, off: off, show: func(n int64) string { return strconv.FormatInt(n, 10) }}
}

// sizeSetting is a size in Echo's notation (16K, 1M, 512B) between lo and hi bytes.
func sizeSetting(name, v string, lo, hi int64) bounded {
	n, err := bytes.Parse(v)
	b := bounded{name: name, v: n, min: lo, max: hi, show: shortSize}
	if err != nil {
		b.invalid = fmt.Sprintf("%q is not a size like 16K or 1M", v)
	}
	return b
}

// inRange returns one line naming the first setting outside its range.
func inRange(settings ...bounded) error {
	for _, s := range settings {
		if s.invalid != "" {
			return fmt.Errorf("%s: %s", s.name, s.invalid)
		}
		if (s.off && s.v == 0) || (s.v >= s.min && s.v <= s.max) {
			continue
		}
		offNote := ""
		if s.off {
			offNote = ", or 0 (off)"
		}
		return fmt.Errorf("%s: %s is not between %s and %s%s", s.name, s.show(s.v), s.show(s.min), s.show(s.max), offNote)
	}
	return nil
}

// shortDuration writes d as Go's duration syntax without its zero tails ("5m", not
// "5m0s"), so a range reads as the values one would set.
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// shortSize writes n bytes in the notation SECKILL_BODY_LIMIT takes (16K, 1M, 512B;
// decimal units, as Echo reads them: 1K is 1000 bytes).
func shortSize(n int64) string {
	for _, u := range []struct {
		suffix string
		size   int64
	}{{"G", 1e9}, {"M", 1e6}, {"K", 1e3}} {
		if n != 0 && n%u.size == 0 {
			return strconv.FormatInt(n/u.size, 10) + u.suffix
		}
	}
	return strconv.FormatInt(n, 10) + "B"
}

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

// logFormat is the log format to use: the configured one, or when none is, console
// for a terminal (a person reads it, and JSON would bury serve's banner) and json for
// anything else (a file, a pipe, a log collector).
func logFormat(configured string, terminal bool) string {
	switch {
	case configured != "":
		return configured
	case terminal:
		return "console"
	}
	return "json"
}

// newLogger builds the process logger, writing to stderr, at the configured level and
// format (see logFormat).
func newLogger(level, format string) (*zap.Logger, error) {
	lvl, err := zapcore.ParseLevel(level)
	if err != nil {
		return nil, fmt.Errorf("log level: %w", err)
	}
	cfg := zap.NewProductionConfig()
	if logFormat(format, isatty.IsTerminal(os.Stderr.Fd())) == "console" {
		cfg = zap.NewDevelopmentConfig()
	}
	cfg.Level = zap.NewAtomicLevelAt(lvl)
	cfg.DisableStacktrace = true
	log, err := cfg.Build()
	if err != nil {
		return nil, fmt.Errorf("build logger: %w", err)
	}
	redis.SetLogger(redisLog{log.Named("redis")})
	return log, nil
}
