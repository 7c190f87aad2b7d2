package main

import (
	"os"
	"path/filepath"
	"testing"
)

// TestMain runs the package's tests, then removes the binary seckillBinary built (a
// directory of its own under $TMPDIR, tens of megabytes), so runs leave nothing behind.
func TestMain(m *testing.M) {
	code := m.Run()
	if binPath != "" {
		_ = os.RemoveAll(filepath.Dir(binPath))
	}
	os.Exit(code)
}
