package main

import (
	"os"
	"testing"

	"github.com/seckill/seckill/cmd/internal/clitest"
)

// TestMain runs the package's tests, then removes the binaries they built, so runs
// leave nothing behind in $TMPDIR.
func TestMain(m *testing.M) {
	code := m.Run()
	clitest.RemoveBuilds()
	os.Exit(code)
}
