package main

import (
	"fmt"
	"strings"
	"time"

	"go.uber.org/zap/zapcore"
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

// runsAPI and runsWorker read Roles (validated by Validate).
func (c *Config) runsAPI() bool    { return c.runs(roleAPI) }
func (c *Config) runsWorker() bool { return c.runs(roleWorker) }

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
