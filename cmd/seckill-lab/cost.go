package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/cmd/internal/load"
)

// costCmd measures what one successful grab costs every server process together, in
// CPU time, against what one request to a hello-world server costs it.
type costCmd struct {
	Seckill     string `name:"seckill" help:"The seckill binary to measure (default: the seckill beside this command, else the one on PATH)."`
	Hello       string `name:"hello" required:"" help:"The hello-world server binary of the baseline (go build ./cmd/internal/hello): it is run as HELLO ADDR."`
	Grabs       int    `name:"grabs" default:"20000" help:"Successful grabs per round (each a fresh user's; the voucher has as many units)."`
	Concurrency int    `name:"concurrency" default:"64" help:"Requests in flight at once, over as many keep-alive connections."`
	Rounds      int    `name:"rounds" default:"3" help:"Rounds, each the hello-world baseline, the grabs, and the baseline again."`
	JSON        bool   `name:"json" help:"Print the rounds as JSON instead of a table."`
}

// The issue 28 targets: per successful grab, every server process together, Redis
// and PostgreSQL, as multiples of a hello-world request.
const (
	targetTotal    = 3.0
	targetRedis    = 0.5
	targetPostgres = 0.5
)

// Validate checks the flags and finds the binaries before Run (kong calls it; a
// failure exits 2).
func (c *costCmd) Validate() error {
	switch {
	case c.Grabs < 1000 || c.Grabs > 10_000_000:
		return fmt.Errorf("--grabs: %d is not between 1000 and 10000000 (fewer is below the CPU clock's resolution)", c.Grabs)
	case c.Concurrency < 1 || c.Concurrency > 10_000:
		return fmt.Errorf("--concurrency: %d is not between 1 and 10000", c.Concurrency)
	case c.Rounds < 1 || c.Rounds > 100:
		return fmt.Errorf("--rounds: %d is not between 1 and 100", c.Rounds)
	}
	hello, err := exec.LookPath(c.Hello)
	if err != nil {
		return fmt.Errorf("--hello: %w", err)
	}
	c.Hello = hello
	bin, err := seckillBinary(c.Seckill)
	if err != nil {
		return fmt.Errorf("--seckill: %w", err)
	}
	c.Seckill = bin
	return nil
}

// costRound is one round's figures, in µs of CPU (user + system, from /proc) per
// request: the hello-world server's per request answered, and per successful grab the
// service's (API and worker, the worker's share included by waiting until every order
// is persisted), Redis's and PostgreSQL's (the postmaster and all its children).
type costRound struct {
	Round int `json:"round"`
	// Hello is the mean of the hello-world requests sent before the grabs and after
	// them (HelloBefore, HelloAfter).
	Hello       float64 `json:"hello_us"`
	HelloBefore float64 `json:"hello_before_us"`
	HelloAfter  float64 `json:"hello_after_us"`
	Service     float64 `json:"service_us"`
	Redis       float64 `json:"redis_us"`
	Postgres    float64 `json:"postgres_us"`
	Total       float64 `json:"total_us"`
	// The same as multiples of Hello.
	ServiceX  float64 `json:"service_x"`
	RedisX    float64 `json:"redis_x"`
	PostgresX float64 `json:"postgres_x"`
	TotalX    float64 `json:"total_x"`
	// Grabs is the successful grabs of the round; HelloRPS (the mean of the two
	// hello-world runs) and GrabRPS the rates the client saw.
	Grabs    int     `json:"grabs"`
	HelloRPS float64 `json:"hello_rps"`
	GrabRPS  float64 `json:"grab_rps"`
	// RedisCalls is Redis's commands per successful grab, by command (INFO
	// commandstats), every client of that Redis counted.
	RedisCalls map[string]float64 `json:"redis_calls_per_grab"`
	// RedisMicros is the µs Redis spent in each command per successful grab, as INFO
	// commandstats times them (a script's commands inside the script's time too).
	RedisMicros map[string]float64 `json:"redis_us_per_grab"`
}

// Run starts the hello-world server and `seckill serve` (default settings, its own key
// prefix and secret) on the Redis and PostgreSQL of SECKILL_REDIS_URL and
// SECKILL_DATABASE_URL, which must run on this machine (their CPU is read from
// /proc), then runs the rounds and prints them with their medians.
func (c *costCmd) Run(ctx context.Context) error {
	redisURL, dbURL := os.Getenv("SECKILL_REDIS_URL"), os.Getenv("SECKILL_DATABASE_URL")
	if redisURL == "" || !strings.HasPrefix(dbURL, "postgres") {
		return errors.New("SECKILL_REDIS_URL and SECKILL_DATABASE_URL (a postgres:// URL) name the Redis and PostgreSQL to measure; both must run on this machine")
	}
	opts, err := redis.ParseURL(redisURL)
	if err != nil {
		return fmt.Errorf("SECKILL_REDIS_URL: %w", err)
	}
	rdb := redis.NewClient(opts)
	defer rdb.Close()
	redisPID, err := redisProcess(ctx, rdb)
	if err != nil {
		return err
	}
	pgPID, err := postmaster(ctx, dbURL)
	if err != nil {
		return err
	}
	if err := migrateUp(ctx, c.Seckill, dbURL); err != nil {
		return err
	}
	helloAddr, err := freeAddr()
	if err != nil {
		return err
	}
	hello := exec.Command(c.Hello, helloAddr)
	hello.Stderr = os.Stderr
	if err := hello.Start(); err != nil {
		return fmt.Errorf("start %s: %w", c.Hello, err)
	}
	defer func() { _ = hello.Process.Kill(); _ = hello.Wait() }()
	svc, err := serveStrategy(ctx, c.Seckill, "lua", dbURL)
	if err != nil {
		return err
	}
	defer func() { _ = svc.stop() }()
	if err := waitListening(ctx, helloAddr); err != nil {
		return err
	}

	rounds := make([]costRound, 0, c.Rounds)
	for i := range c.Rounds {
		r, err := c.round(ctx, i+1, "http://"+helloAddr, hello.Process.Pid, svc, rdb, redisPID, pgPID)
		if err != nil {
			return fmt.Errorf("round %d: %w", i+1, err)
		}
		fmt.Fprintf(os.Stderr, "seckill-lab cost: round %d: %.2f× a hello-world request\n", r.Round, r.TotalX)
		rounds = append(rounds, r)
	}
	if c.JSON {
		return json.NewEncoder(os.Stdout).Encode(rounds)
	}
	return writeCost(os.Stdout, c, rounds)
}

// round measures the hello-world server answering c.Grabs requests, then the service
// answering as many grabs of a fresh voucher, until every order is persisted, then the
// hello-world server again.
func (c *costCmd) round(ctx context.Context, n int, helloBase string, helloPID int, svc *service,
	rdb *redis.Client, redisPID, pgPID int) (costRound, error) {
	tokens := load.Minter(svc.secret)
	flags := load.Flags{Users: c.Grabs, Stock: c.Grabs, Concurrency: c.Concurrency, Timeout: 5 * time.Minute}
	// Users never seen before in this run, as in a flash sale: no key of an earlier
	// round (a user's index of reservations, say) is there already.
	first := int64(n-1)*int64(c.Grabs) + 1

	// The baseline: the same requests (path, token, client) to a server that answers
	// each with a small JSON body and does nothing else, once before the grabs and
	// once after, so that a machine whose speed drifts during the round (a shared
	// host's other tenants) weighs on the baseline as on the grabs.
	hello := func() (time.Duration, load.Result, error) {
		before := cpuTime(helloPID)
		res, err := load.Run(ctx, load.Options{Base: helloBase, Voucher: "1", Tokens: tokens, Users: c.Grabs,
			Concurrency: c.Concurrency, FirstUser: first})
		if err != nil {
			return 0, res, fmt.Errorf("hello world: %w", err)
		}
		if res.Answered != c.Grabs {
			return 0, res, fmt.Errorf("hello world answered %d of %d requests", res.Answered, c.Grabs)
		}
		return cpuTime(helloPID) - before, res, nil
	}
	h0, hres0, err := hello()
	if err != nil {
		return costRound{}, err
	}

	if err := compactAOF(ctx, rdb); err != nil {
		return costRound{}, err
	}
	stats0, err := commandStats(ctx, rdb)
	if err != nil {
		return costRound{}, err
	}
	var s0, r0, p0 time.Duration
	res, rep, err := load.Sell(ctx, load.Target{
		Base: svc.base, Title: fmt.Sprintf("seckill-lab cost round %d", n), Tokens: tokens, FirstUser: first,
		During: func() func(load.Result) {
			s0, r0, p0 = cpuTime(svc.cmd.Process.Pid), cpuTime(redisPID), cpuTime(pgPID)
			return func(load.Result) {}
		},
	}, flags)
	if err != nil {
		return costRound{}, err
	}
	if err := rep.Err(); err != nil {
		return costRound{}, err
	}
	if res.Reserved != c.Grabs {
		return costRound{}, fmt.Errorf("%d of %d grabs reserved (other answers: %v)", res.Reserved, c.Grabs, res.OtherExamples)
	}
	s1, r1, p1 := cpuTime(svc.cmd.Process.Pid), cpuTime(redisPID), cpuTime(pgPID)
	stats1, err := commandStats(ctx, rdb)
	if err != nil {
		return costRound{}, err
	}
	h1, hres1, err := hello()
	if err != nil {
		return costRound{}, err
	}
	r := costRound{Round: n, Hello: micros(h0+h1, 2*c.Grabs), HelloBefore: micros(h0, c.Grabs), HelloAfter: micros(h1, c.Grabs),
		HelloRPS: (hres0.RPS + hres1.RPS) / 2}
	if r.Hello == 0 {
		return costRound{}, fmt.Errorf("the hello-world server's CPU for %d requests was below /proc's clock (%v): raise --grabs", 2*c.Grabs, clockTick)
	}
	r.Grabs, r.GrabRPS = res.Reserved, res.RPS
	r.Service, r.Redis, r.Postgres = micros(s1-s0, r.Grabs), micros(r1-r0, r.Grabs), micros(p1-p0, r.Grabs)
	r.Total = r.Service + r.Redis + r.Postgres
	r.ServiceX, r.RedisX, r.PostgresX, r.TotalX = r.Service/r.Hello, r.Redis/r.Hello, r.Postgres/r.Hello, r.Total/r.Hello
	r.RedisCalls, r.RedisMicros = make(map[string]float64), make(map[string]float64)
	for cmd, st := range stats1 {
		if d := st.calls - stats0[cmd].calls; d > 0 {
			r.RedisCalls[cmd] = float64(d) / float64(r.Grabs)
			r.RedisMicros[cmd] = float64(st.usec-stats0[cmd].usec) / float64(r.Grabs)
		}
	}
	return r, nil
}

// compactAOF rewrites Redis's append-only file, when it keeps one, and waits until the
// rewrite is done, so that a round does not pay for rewriting what earlier rounds
// wrote (a rewrite copies the whole dataset: its cost grows with the run, not with the
// round's grabs). A rewrite the round's own writes set off is counted.
func compactAOF(ctx context.Context, rdb *redis.Client) error {
	if on, err := rdb.ConfigGet(ctx, "appendonly").Result(); err != nil || on["appendonly"] != "yes" {
		return err
	}
	if err := rdb.BgRewriteAOF(ctx).Err(); err != nil && !strings.Contains(err.Error(), "already in progress") {
		return fmt.Errorf("redis: BGREWRITEAOF: %w", err)
	}
	deadline := time.Now().Add(5 * time.Minute)
	for {
		info, err := rdb.Info(ctx, "persistence").Result()
		if err != nil {
			return fmt.Errorf("redis: INFO persistence: %w", err)
		}
		if !strings.Contains(info, "aof_rewrite_in_progress:1") && !strings.Contains(info, "aof_rewrite_scheduled:1") {
			return nil
		}
		if time.Now().After(deadline) {
			return errors.New("redis: the append-only file's rewrite did not end within 5 minutes")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// micros is d per n requests, in µs.
func micros(d time.Duration, n int) float64 {
	return float64(d) / float64(time.Microsecond) / float64(n)
}

// cmdStat is one command's line of INFO commandstats: its calls, and the µs Redis
// spent in them (a script's commands are counted on their own and in the script's).
type cmdStat struct{ calls, usec int64 }

// commandStats reads INFO commandstats.
func commandStats(ctx context.Context, rdb *redis.Client) (map[string]cmdStat, error) {
	info, err := rdb.Info(ctx, "commandstats").Result()
	if err != nil {
		return nil, fmt.Errorf("redis: INFO commandstats: %w", err)
	}
	out := map[string]cmdStat{}
	for line := range strings.SplitSeq(info, "\n") {
		name, rest, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || !strings.HasPrefix(name, "cmdstat_") {
			continue
		}
		var st cmdStat
		for field := range strings.SplitSeq(rest, ",") {
			k, v, _ := strings.Cut(field, "=")
			switch k {
			case "calls":
				st.calls, _ = strconv.ParseInt(v, 10, 64)
			case "usec":
				st.usec, _ = strconv.ParseInt(v, 10, 64)
			}
		}
		out[strings.TrimPrefix(name, "cmdstat_")] = st
	}
	return out, nil
}

// waitListening waits until something accepts connections at addr.
func waitListening(ctx context.Context, addr string) error {
	deadline := time.Now().Add(readyTimeout)
	for {
		conn, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			return conn.Close()
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("nothing listens at %s after %v: %w", addr, readyTimeout, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// writeCost writes the rounds, their medians and the targets for people.
func writeCost(w io.Writer, c *costCmd, rounds []costRound) error {
	fmt.Fprintf(w, "CPU per successful grab (µs, user + system from /proc), %d grabs a round, %d in flight, against a hello-world request\n",
		c.Grabs, c.Concurrency)
	fmt.Fprintf(w, "  %-6s %8s %9s %9s %9s %9s %9s %11s %10s\n",
		"round", "hello", "service", "redis", "postgres", "total", "× hello", "hello req/s", "grabs/s")
	for _, r := range rounds {
		fmt.Fprintf(w, "  %-6d %8.1f %9.1f %9.1f %9.1f %9.1f %8.2f× %11.0f %10.0f\n",
			r.Round, r.Hello, r.Service, r.Redis, r.Postgres, r.Total, r.TotalX, r.HelloRPS, r.GrabRPS)
	}
	med := func(f func(costRound) float64) float64 {
		v := make([]float64, len(rounds))
		for i, r := range rounds {
			v[i] = f(r)
		}
		slices.Sort(v)
		return v[len(v)/2]
	}
	service, redisX, pg, total := med(func(r costRound) float64 { return r.ServiceX }), med(func(r costRound) float64 { return r.RedisX }),
		med(func(r costRound) float64 { return r.PostgresX }), med(func(r costRound) float64 { return r.TotalX })
	fmt.Fprintf(w, "  median × hello: service %.2f×, redis %.2f× (target ≤ %.1f×), postgres %.2f× (≤ %.1f×), all together %.2f× (≤ %.0f×)\n",
		service, redisX, targetRedis, pg, targetPostgres, total, targetTotal)
	names := make([]string, 0, len(rounds[0].RedisCalls))
	for name := range rounds[0].RedisCalls {
		names = append(names, name)
	}
	slices.Sort(names)
	parts := make([]string, 0, len(names))
	for _, name := range names {
		parts = append(parts, fmt.Sprintf("%s %.3f (%.2f µs)", name, med(func(r costRound) float64 { return r.RedisCalls[name] }),
			med(func(r costRound) float64 { return r.RedisMicros[name] })))
	}
	_, err := fmt.Fprintf(w, "  redis commands per grab (median), with the µs Redis timed in them: %s\n", strings.Join(parts, ", "))
	return err
}
