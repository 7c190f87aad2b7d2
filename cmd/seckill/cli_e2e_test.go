package main

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/seckill/seckill/adapters/testenv"
)

// --version prints one line naming the build; a build that recorded no revision says
// why (seckillBinary's build may be in a git worktree, or under -buildvcs=false).
func TestVersion(t *testing.T) {
	out, err := runCmd(seckillBinary(t), os.Environ(), "--version")
	if err != nil {
		t.Fatalf("--version: %v\n%s", err, out)
	}
	if lines := strings.Split(strings.TrimSpace(out), "\n"); len(lines) != 1 || !strings.HasPrefix(out, "seckill ") ||
		!regexp.MustCompile(`revision ([0-9a-f]{40}|unknown: go run, a git worktree and -buildvcs=false record none; go build in a git clone does)`).MatchString(out) {
		t.Fatalf("--version printed %q, want one line: seckill <version> (… revision <commit or why unknown>)", out)
	}
}

// go build in a git clone of the repository records the commit, and --version names
// it, as the README says.
func TestVersionOfABuildNamesItsCommit(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("git is not installed")
		}
		t.Skip("git is not installed")
	}
	top, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		t.Skipf("not in a git checkout: %v", err)
	}
	head, err := exec.Command("git", "rev-parse", "HEAD").Output()
	if err != nil {
		t.Fatal(err)
	}
	clone := filepath.Join(t.TempDir(), "seckill")
	if out, err := exec.Command("git", "clone", "-q", strings.TrimSpace(string(top)), clone).CombinedOutput(); err != nil {
		t.Fatalf("git clone: %v\n%s", err, out)
	}
	checkout := exec.Command("git", "checkout", "-q", strings.TrimSpace(string(head)))
	checkout.Dir = clone
	if out, err := checkout.CombinedOutput(); err != nil {
		t.Fatalf("git checkout: %v\n%s", err, out)
	}
	bin := filepath.Join(t.TempDir(), "seckill")
	build := exec.Command("go", "build", "-o", bin, "./cmd/seckill")
	// The machine's own GOFLAGS may turn stamping off; a reader's go build has it on.
	build.Dir, build.Env = clone, append(os.Environ(), "GOFLAGS=-buildvcs=true")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := runCmd(bin, os.Environ(), "--version")
	if want := "revision " + strings.TrimSpace(string(head)) + " "; err != nil || !strings.Contains(out, want) {
		t.Fatalf("--version of a go build in a clone: %v %q, want it to name %q", err, out, want)
	}
}

// An unreachable Redis stops serve with seckill's one line: go-redis's own messages
// about each pooled connection it failed to dial go to the debug log.
func TestUnreachableRedisIsOneLine(t *testing.T) {
	out, err := runCmd(seckillBinary(t), append(os.Environ(), "SECKILL_REDIS_URL=redis://127.0.0.1:1/0",
		"SECKILL_DATABASE_URL=sqlite:"+t.TempDir()+"/s.db", "SECKILL_HTTP_ADDR=127.0.0.1:0"), "serve")
	if err == nil {
		t.Fatalf("serve with an unreachable Redis succeeded: %s", out)
	}
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		// The SQLite warning is a JSON log line; the failure is the plain one.
		if !strings.HasPrefix(l, "{") {
			lines = append(lines, l)
		}
	}
	if len(lines) != 1 || !strings.Contains(lines[0], "connect to redis") {
		t.Fatalf("want one line about redis, got %q", out)
	}
}

// SECKILL_OTEL_EXPORTER=stdout writes the spans of a grab and of the batch that
// persisted it (flushed at exit); an unknown exporter stops serve with one line.
func TestServeTracesToStdout(t *testing.T) {
	out, err := runCmd(seckillBinary(t), zeroSetupEnv("SECKILL_OTEL_EXPORTER=jaeger"), "serve")
	if lines := strings.Split(strings.TrimSpace(out), "\n"); err == nil || len(lines) != 1 || !strings.Contains(out, "otel-exporter") {
		t.Fatalf("serve with SECKILL_OTEL_EXPORTER=jaeger: %v, %q; want one line naming it", err, out)
	}

	in := startInstance(t, "SECKILL_OTEL_EXPORTER=stdout")
	id := in.createVoucher(3, 1)
	status, body := in.call(http.MethodPost, "/api/v1/vouchers/"+id+"/grab", in.token(9, false), nil)
	if status != http.StatusAccepted {
		t.Fatalf("grab: %d %v", status, body)
	}
	order := body["order_id"].(string)
	testenv.Eventually(t, 30*time.Second, "order persisted", func() (bool, string) {
		status, o := in.call(http.MethodGet, "/api/v1/orders/"+order, in.token(9, false), nil)
		return status == http.StatusOK && o["status"] == "awaiting_payment", fmt.Sprintf("%d %v", status, o)
	})
	in.stop()
	logs := in.logs.String()
	for _, want := range []string{`"Name":"POST /api/v1/vouchers/:id/grab"`, `"Name":"fulfill batch"`, `"seckill.order_id","Value":{"Type":"STRING","Value":"` + order} {
		if !strings.Contains(logs, want) {
			t.Errorf("the spans written lack %s", want)
		}
	}
}

// A bad sentinel setting stops every command that reaches Redis with exit status 2 and
// one line naming it; unreachable sentinels stop serve with seckill's one line.
func TestSentinelSettingsAreOneLine(t *testing.T) {
	base := append(os.Environ(), "SECKILL_REDIS_URL=", "SECKILL_DATABASE_URL=sqlite:"+t.TempDir()+"/s.db",
		"SECKILL_HTTP_ADDR=127.0.0.1:0")
	for _, args := range [][]string{{"serve"}, {"reconcile"}} {
		out, err := runCmd(seckillBinary(t), append(base, "SECKILL_REDIS_SENTINELS=127.0.0.1", "SECKILL_REDIS_MASTER_NAME=seckill"), args...)
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 2 {
			t.Fatalf("%v with a sentinel address without a port: %v, want exit status 2\n%s", args, err, out)
		}
		if lines := strings.Split(strings.TrimSpace(out), "\n"); len(lines) != 1 || !strings.Contains(lines[0], "SECKILL_REDIS_SENTINELS") {
			t.Fatalf("%v: want one line naming SECKILL_REDIS_SENTINELS, got %q", args, out)
		}
	}
	out, err := runCmd(seckillBinary(t), append(base, "SECKILL_REDIS_SENTINELS=127.0.0.1:1", "SECKILL_REDIS_MASTER_NAME=seckill"), "serve")
	if err == nil {
		t.Fatalf("serve with unreachable sentinels succeeded: %s", out)
	}
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if !strings.HasPrefix(l, "{") {
			lines = append(lines, l)
		}
	}
	if len(lines) != 1 || !strings.Contains(lines[0], `connect to redis master "seckill" of the sentinels 127.0.0.1:1`) {
		t.Fatalf("want one line about the sentinels, got %q", out)
	}
}

// With SECKILL_JWT_SECRET set, serve prints a short banner: where it listens, the live
// page, how to mint tokens — and no tokens of its own.
func TestServeBannerWithASecret(t *testing.T) {
	in := startInstance(t)
	host := strings.TrimPrefix(in.base, "http://")
	testenv.Eventually(t, 30*time.Second, "the banner", func() (bool, string) {
		logs := in.logs.String()
		return strings.Contains(logs, "seckill token --user N [--admin]"), logs
	})
	logs := in.logs.String()
	for _, want := range []string{"Listening on " + host + " (this machine only", "Live sale page: http://" + host + "/ui/"} {
		if !strings.Contains(logs, want) {
			t.Errorf("the banner lacks %q:\n%s", want, logs)
		}
	}
	for _, unwanted := range []string{"Admin token", "trying and testing", e2eSecret} {
		if strings.Contains(logs, unwanted) {
			t.Errorf("the banner shows %q:\n%s", unwanted, logs)
		}
	}
}
