package stocktest_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestOnlyTestsImportIt keeps the contract suites out of production code: no package
// of the module may import one from a non-test file.
func TestOnlyTestsImportIt(t *testing.T) {
	const module = "github.com/seckill/seckill"
	suites := map[string]bool{
		module + "/adapters/stocktest": true,
		module + "/adapters/ordertest": true,
		module + "/adapters/queuetest": true,
		module + "/adapters/audittest": true,
		module + "/adapters/idemtest":  true,
	}
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}}{{range .Imports}} {{.}}{{end}}", module+"/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	packages := 0
	for line := range strings.Lines(string(out)) {
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		packages++
		for _, imp := range fields[1:] {
			if suites[imp] {
				t.Errorf("%s imports %s from a non-test file; only tests may", fields[0], imp)
			}
		}
	}
	// The listing covers the module, not just this package.
	if packages < 2 {
		t.Fatalf("go list listed %d packages: %q", packages, out)
	}
}
