// Package clitest runs the commands under cmd/ as their end-to-end tests do: built
// once per test binary, each run a separate process whose output and exit status the
// test checks, as an operator would see them.
package clitest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

var (
	buildMu  sync.Mutex
	buildDir string
	built    = map[string]error{}
)

// Build builds the command of the package pkg (a module path, e.g.
// github.com/seckill/seckill/cmd/seckill) once per test binary and returns the path of
// the binary. Every command is built into the same directory, so a command that looks
// for another beside itself finds it.
func Build(t testing.TB, pkg string) string {
	t.Helper()
	buildMu.Lock()
	defer buildMu.Unlock()
	if buildDir == "" {
		dir, err := os.MkdirTemp("", "seckill-bin")
		if err != nil {
			t.Fatal(err)
		}
		buildDir = dir
	}
	bin := filepath.Join(buildDir, filepath.Base(pkg))
	err, ok := built[pkg]
	if !ok {
		out, cerr := exec.Command("go", "build", "-o", bin, pkg).CombinedOutput()
		if cerr != nil {
			err = fmt.Errorf("go build %s: %v\n%s", pkg, cerr, out)
		}
		built[pkg] = err
	}
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// RemoveBuilds removes every binary Build built (tens of megabytes each, under
// $TMPDIR). Call it from TestMain once the tests have run.
func RemoveBuilds() {
	buildMu.Lock()
	defer buildMu.Unlock()
	if buildDir != "" {
		_ = os.RemoveAll(buildDir)
		buildDir, built = "", map[string]error{}
	}
}

// Run runs bin with args in the working directory dir (empty: the test's) and the
// environment env, and returns its stdout, its stderr and its exit status. It fails
// the test when the command does not finish within timeout or does not start.
func Run(t testing.TB, bin, dir string, env []string, timeout time.Duration, args ...string) (string, string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = env
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	name := filepath.Base(bin) + " " + strings.Join(args, " ")
	if ctx.Err() != nil {
		t.Fatalf("%s did not finish within %v:\nstdout %s\nstderr %s", name, timeout, &stdout, &stderr)
	}
	var exit *exec.ExitError
	switch {
	case err == nil:
		return stdout.String(), stderr.String(), 0
	case errors.As(err, &exit):
		return stdout.String(), stderr.String(), exit.ExitCode()
	default:
		t.Fatalf("run %s: %v", name, err)
		return "", "", 0
	}
}

// WithoutSettings is this process's environment without any SECKILL_* variable, as
// on a machine where nothing is configured, followed by extra.
func WithoutSettings(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "SECKILL_") {
			env = append(env, kv)
		}
	}
	return append(env, extra...)
}

// SaleReport decodes the one JSON object a sale's report prints with --json, and
// checks that it has every number the contract names.
func SaleReport(t testing.TB, stdout, stderr string) map[string]any {
	t.Helper()
	if got, want := strings.Count(stdout, "\n"), 1; got != want {
		t.Fatalf("stdout has %d lines, want %d:\n%s\nstderr:\n%s", got, want, stdout, stderr)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(stdout), &m); err != nil {
		t.Fatalf("stdout is not JSON: %v\n%s", err, stdout)
	}
	for _, k := range []string{"requests", "reserved", "sold_out", "already_purchased", "other", "oversold",
		"duplicates", "orders_persisted", "p50_ms", "p99_ms", "max_ms", "rps", "persist_ms"} {
		if _, ok := m[k].(float64); !ok {
			t.Fatalf("report lacks the number %q: %s", k, stdout)
		}
	}
	return m
}

// WantCounts compares the report's values with want.
func WantCounts(t testing.TB, m map[string]any, want map[string]float64) {
	t.Helper()
	for k, v := range want {
		if got := m[k]; got != v {
			t.Fatalf("%s = %v, want %v (report %v)", k, got, v, m)
		}
	}
}
