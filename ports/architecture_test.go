package ports_test

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// TestDependencyRule enforces the dependency rule of ARCHITECTURE.md: the core (domain, ports, application)
// imports no adapter, no command and no infrastructure library. domain imports the
// standard library only.
func TestDependencyRule(t *testing.T) {
	const module = "github.com/seckill/seckill/"
	allowedInCore := map[string][]string{
		"domain":      {},
		"ports":       {module + "domain"},
		"application": {module + "domain", module + "ports"},
	}
	for pkg, allowed := range allowedInCore {
		out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", "../"+pkg).Output()
		if err != nil {
			t.Fatalf("go list %s: %v", pkg, err)
		}
		for _, dep := range strings.Fields(string(out)) {
			if dep == module+pkg || slices.Contains(allowed, dep) {
				continue
			}
			t.Errorf("%s depends on %s; the core may import only %v and the standard library", pkg, dep, allowed)
		}
	}
}

// TestServiceBinaryLinksNoLab keeps the lab out of the service's binary: cmd/seckill
// links none of the packages behind seckill-lab (the load generator, the burst, the
// fault-injection checker, the benchmarks' baseline server); they are seckill-lab's
// and the tests'.
func TestServiceBinaryLinksNoLab(t *testing.T) {
	const module = "github.com/seckill/seckill/"
	lab := []string{module + "cmd/internal/load", module + "cmd/internal/burst", module + "cmd/internal/history", module + "cmd/internal/hello", module + "cmd/internal/clitest"}
	out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", "../cmd/seckill").Output()
	if err != nil {
		t.Fatalf("go list cmd/seckill: %v", err)
	}
	for _, dep := range strings.Fields(string(out)) {
		if slices.Contains(lab, dep) {
			t.Errorf("cmd/seckill links %s, a package of the lab (seckill-lab and the tests only)", dep)
		}
	}
}
