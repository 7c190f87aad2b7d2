package httpapi

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestEveryErrorCodeIsDocumented fails when an error code the API can answer is
// missing from docs/api.md's table of errors or from the OpenAPI document's enum of
// codes: the codes of sentinelAnswers, and every
// code the package's sources set literally (Code: "…": Echo's own errors, the grab's
// answers, the malformed request line, …).
func TestEveryErrorCodeIsDocumented(t *testing.T) {
	used := map[string]bool{}
	for _, a := range sentinelAnswers {
		used[a.code] = true
	}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	literal := regexp.MustCompile(`Code:\s*"([a-z_]+)"`)
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range literal.FindAllSubmatch(src, -1) {
			used[string(m[1])] = true
		}
	}
	if len(used) < 20 {
		t.Fatalf("found only %d codes (%v): the search above is broken", len(used), used)
	}

	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "api.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, table, found := strings.Cut(string(doc), "| when | status | code |\n")
	if !found {
		t.Fatal(`docs/api.md has no table of errors ("| when | status | code |")`)
	}
	table, _, _ = strings.Cut(table, "\n\n")
	listed := map[string]bool{}
	for line := range strings.Lines(table) {
		cells := strings.Split(strings.TrimSpace(line), "|")
		if len(cells) < 4 {
			continue
		}
		for _, m := range regexp.MustCompile("`([a-z_]+)`").FindAllStringSubmatch(cells[len(cells)-2], -1) {
			listed[m[1]] = true
		}
	}
	var spec struct {
		Components struct {
			Schemas struct {
				ErrorDetail struct {
					Properties struct {
						Code struct {
							Enum []string `json:"enum"`
						} `json:"code"`
					} `json:"properties"`
				} `json:"ErrorDetail"`
			} `json:"schemas"`
		} `json:"components"`
	}
	raw, err := os.ReadFile("openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &spec); err != nil {
		t.Fatal(err)
	}
	enum := spec.Components.Schemas.ErrorDetail.Properties.Code.Enum
	for code := range used {
		if !listed[code] {
			t.Errorf("the API answers code %q, which docs/api.md's table of errors does not list", code)
		}
		if !slices.Contains(enum, code) {
			t.Errorf("the API answers code %q, which openapi.json's ErrorDetail.code does not list", code)
		}
	}
}
