package main

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/seckill/seckill/cmd/internal/clitest"
)

// runSplit runs the binary and returns its stdout, its stderr and its exit status.
func runSplit(t *testing.T, env []string, timeout time.Duration, args ...string) (string, string, int) {
	t.Helper()
	return runSplitIn(t, "", env, timeout, args...)
}

// runSplitIn is runSplit in the working directory dir (empty: the test's).
func runSplitIn(t *testing.T, dir string, env []string, timeout time.Duration, args ...string) (string, string, int) {
	t.Helper()
	return clitest.Run(t, seckillBinary(t), dir, env, timeout, args...)
}

// The demo and the load tools are seckill-lab's: the service's binary has none of
// them, and names the command it does not know in one line.
func TestLabCommandsAreNotTheService(t *testing.T) {
	env := append(os.Environ(), "SECKILL_REDIS_URL=", "SECKILL_DATABASE_URL=")
	for _, args := range [][]string{
		{"demo"}, {"loadtest", "--url", "http://127.0.0.1:1"}, {"compare"}, {"seed"},
	} {
		stdout, stderr, status := runSplit(t, env, 30*time.Second, args...)
		out := stdout + stderr
		if status != 2 {
			t.Fatalf("%v: exit %d, want 2: %q", args, status, out)
		}
		if lines := strings.Split(strings.TrimSpace(out), "\n"); len(lines) != 1 || !strings.Contains(out, args[0]) {
			t.Fatalf("%v: want one line naming %s, got %q", args, args[0], out)
		}
	}
}
