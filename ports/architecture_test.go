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

// TestStrategiesOnlyChosenInCmd keeps the comparison's stock strategies
// (adapters/strategies/…: watchstock, the Redis WATCH/MULTI transaction, and sqlstock,
// the PostgreSQL transaction) out of the default path: no package imports one but the
// strategies themselves and cmd/seckill, whose strategy choice (strategy.go) picks
// it. Tests may import them (the shared suites run the script and a strategy side by
// side).
func TestStrategiesOnlyChosenInCmd(t *testing.T) {
	const module = "github.com/seckill/seckill/"
	const strategies = module + "adapters/strategies/"
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}} {{join .Imports " "}}`, "../...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	found := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		pkg := fields[0]
		if strings.HasPrefix(pkg, strategies) {
			found[strings.TrimPrefix(pkg, strategies)] = true
			continue
		}
		for _, imp := range fields[1:] {
			if strings.HasPrefix(imp, strategies) && pkg != module+"cmd/seckill" {
				t.Errorf("%s imports %s; only cmd/seckill's strategy choice may", pkg, imp)
			}
		}
	}
	for _, name := range []string{"watchstock", "sqlstock"} {
		if !found[name] {
			t.Errorf("no package %s%s: the check does not cover it", strategies, name)
		}
	}
}
