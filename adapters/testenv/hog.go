package testenv

import (
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"testing"
)

// HogVar names the variable that, set to a number, makes Hog start that many spinning processes instead of one
// per CPU: 0 turns the hog off (to compare a busy run with a quiet one).
const HogVar = "SECKILL_TEST_HOG"

// Hog keeps the machine's CPUs busy until the test ends, as other work on a shared
// machine (a laptop, a CI runner, a noisy neighbor) does: it starts one child process
// per CPU, each spinning at full speed in a shell loop, and kills them at cleanup. A
// test that must hold on a busy machine runs its load while they spin. It returns how
// many it started.
func Hog(t testing.TB) int {
	t.Helper()
	n := runtime.NumCPU()
	if v := os.Getenv(HogVar); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 0 {
			t.Fatalf("%s=%q: want a number of processes", HogVar, v)
		}
	}
	for range n {
		cmd := exec.Command("sh", "-c", "while :; do :; done")
		if err := cmd.Start(); err != nil {
			t.Fatalf("start a CPU hog: %v", err)
		}
		t.Cleanup(func() {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		})
	}
	return n
}
