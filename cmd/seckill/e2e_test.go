package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/adapters/httpapi"
	"github.com/seckill/seckill/adapters/redisstore"
	"github.com/seckill/seckill/adapters/testenv"
	"github.com/seckill/seckill/domain"
)

const e2eSecret = "e2e-secret-0123456789abcdef"

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// seckillBinary builds the command once per test run; the end-to-end tests run it as
// a separate process, exactly as an operator would. It is built with the
// seckilltestclock tag, so a test can play a host whose clock is off
// (SECKILL_TEST_CLOCK_SKEW, testclock.go); without that variable it is the release
// build.
func seckillBinary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "seckill-bin")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "seckill")
		out, err := exec.Command("go", "build", "-tags", "seckilltestclock", "-o", binPath, ".").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

// instance is one running `seckill serve` on real Redis and PostgreSQL.
type instance struct {
	t      testing.TB
	base   string
	env    []string
	cmd    *exec.Cmd
	logs   *syncBuffer
	tokens *httpapi.Tokens
	redis  redis.UniversalClient
	keys   redisstore.Keys
	dbURL  string
	// dir is serve's working directory; empty, the test's.
	dir string
}

// syncBuffer is a buffer a running process writes to while the test reads it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// startInstance migrates a fresh database and starts serve on a free port, with
// extra SECKILL_* settings (later entries win).
func startInstance(t *testing.T, extraEnv ...string) *instance {
	t.Helper()
	bin := seckillBinary(t)
	rdb := testenv.Redis(t)
	dbURL := testenv.PostgresURL(t)
	prefix := "e" + testenv.Unique()
	t.Cleanup(func() {
		if err := testenv.DeleteKeys(context.Background(), rdb, prefix+":*"); err != nil {
			t.Errorf("delete the keys of %s: %v", prefix, err)
		}
	})
	addr := freeAddr(t)
	env := append(os.Environ(),
		"SECKILL_HTTP_ADDR="+addr,
		"SECKILL_REDIS_URL="+testenv.RedisURL(t),
		"SECKILL_DATABASE_URL="+dbURL,
		"SECKILL_JWT_SECRET="+e2eSecret,
		"SECKILL_KEY_PREFIX="+prefix,
		"SECKILL_LOG_LEVEL=warn",
	)
	env = append(env, extraEnv...)
	if out, err := runCmd(bin, env, "migrate", "up"); err != nil {
		t.Fatalf("migrate up: %v\n%s", err, out)
	}
	in := &instance{t: t, base: "http://" + addr, env: env, logs: &syncBuffer{},
		tokens: httpapi.NewTokens([]byte(e2eSecret)), redis: rdb, keys: redisstore.Keys{Prefix: prefix}, dbURL: dbURL}
	in.start()
	t.Cleanup(in.stop)
	return in
}

// freeAddr returns a loopback address with a port nobody listens on.
func freeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func runCmd(bin string, env []string, args ...string) (string, error) {
	cmd := exec.Command(bin, args...)
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func (in *instance) start() {
	in.t.Helper()
	in.cmd = exec.Command(seckillBinary(in.t), "serve")
	in.cmd.Env = in.env
	in.cmd.Dir = in.dir
	in.cmd.Stdout = in.logs
	in.cmd.Stderr = in.logs
	if err := in.cmd.Start(); err != nil {
		in.t.Fatal(err)
	}
	testenv.Eventually(in.t, 15*time.Second, "serve ready", func() (bool, string) {
		res, err := http.Get(in.base + "/readyz")
		if err != nil {
			return false, err.Error()
		}
		_ = res.Body.Close()
		return res.StatusCode == http.StatusOK, fmt.Sprintf("readyz %d; logs:\n%s", res.StatusCode, in.logs)
	})
}

// stop sends SIGTERM and waits for a clean exit.
func (in *instance) stop() {
	if in.cmd == nil || in.cmd.ProcessState != nil {
		return
	}
	_ = in.cmd.Process.Signal(os.Interrupt)
	done := make(chan error, 1)
	go func() { done <- in.cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			in.t.Errorf("serve exited with %v:\n%s", err, in.logs)
		}
	case <-time.After(20 * time.Second):
		_ = in.cmd.Process.Kill()
		in.t.Errorf("serve did not stop on SIGTERM:\n%s", in.logs)
	}
}

func (in *instance) token(user domain.UserID, admin bool) string {
	in.t.Helper()
	tok, err := in.tokens.Mint(user, admin, time.Hour)
	if err != nil {
		in.t.Fatal(err)
	}
	return tok
}

// call sends one request and decodes the JSON answer.
func (in *instance) call(method, path, token string, body any) (int, map[string]any) {
	in.t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, in.base+path, rd)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		in.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	var out map[string]any
	raw, _ := io.ReadAll(res.Body)
	if len(raw) > 0 && json.Unmarshal(raw, &out) != nil {
		in.t.Fatalf("%s %s: not JSON: %q", method, path, raw)
	}
	return res.StatusCode, out
}

// createVoucher puts a voucher on sale now and returns its id.
func (in *instance) createVoucher(stock, limit int) string {
	in.t.Helper()
	now := time.Now().UTC()
	return in.createSale(stock, limit, now.Add(-time.Minute), now.Add(time.Hour))
}

// createSale puts a voucher on sale from begins to ends and returns its id.
func (in *instance) createSale(stock, limit int, begins, ends time.Time) string {
	in.t.Helper()
	status, v := in.call(http.MethodPost, "/api/v1/vouchers", in.token(1, true), map[string]any{
		"title": "Flash", "stock": stock, "per_user_limit": limit,
		"begins_at": begins.UTC(), "ends_at": ends.UTC(),
	})
	if status != http.StatusCreated {
		in.t.Fatalf("create voucher: %d %v", status, v)
	}
	return v["id"].(string)
}

func (in *instance) streamLen(id string) int64 {
	in.t.Helper()
	vid, err := domain.ParseVoucherID(id)
	if err != nil {
		in.t.Fatal(err)
	}
	n, err := in.redis.XLen(context.Background(), in.keys.Stream(vid)).Result()
	if err != nil {
		in.t.Fatal(err)
	}
	return n
}

func TestServeRejectsABadSettingInOneLine(t *testing.T) {
	bin := seckillBinary(t)
	out, err := runCmd(bin, append(os.Environ(), "SECKILL_REDIS_URL=redis://127.0.0.1:1/0",
		"SECKILL_DATABASE_URL=postgres://u@127.0.0.1:1/db", "SECKILL_JWT_SECRET="+e2eSecret,
		"SECKILL_REQUEST_TIMEOUT=soon"), "serve")
	var exit *exec.ExitError
	if err == nil || !errors.As(err, &exit) || exit.ExitCode() != 2 {
		t.Fatalf("serve with a bad setting: err %v, output %q", err, out)
	}
	if lines := strings.Split(strings.TrimSpace(out), "\n"); len(lines) != 1 || !strings.Contains(out, "SECKILL_REQUEST_TIMEOUT") {
		t.Fatalf("want one line naming SECKILL_REQUEST_TIMEOUT, got %q", out)
	}
}
