package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/seckill/seckill/adapters/sqlstore"
	"github.com/seckill/seckill/adapters/testenv"
)

// TestReadmeWalkthroughRunsAsWritten: the README's "A sale, step by step", pasted into
// sh as it is — after the ADMIN=, ALICE= and BASE= lines a zero-setup serve prints for
// it — prints what the README says it prints, but for the ids, request ids and times
// it cannot know.
func TestReadmeWalkthroughRunsAsWritten(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	readme := string(raw)
	start := strings.Index(readme, "## A sale, step by step")
	if start < 0 {
		t.Fatal(`README.md has no "## A sale, step by step"`)
	}
	blocks := fencedBlocks(readme[start:])
	if len(blocks) < 3 {
		t.Fatalf("the walkthrough has %d code blocks, want the tokens, the script and what it prints", len(blocks))
	}
	script, want := blocks[1], blocks[2]

	// A zero-setup serve that chose its own secret prints the lines the walkthrough
	// starts from.
	dir := t.TempDir()
	addr := freeAddr(t)
	in := &instance{t: t, base: "http://" + addr, env: zeroSetupEnv("SECKILL_HTTP_ADDR="+addr, "SECKILL_LOG_LEVEL=warn"),
		logs: &syncBuffer{}, dir: dir, dbURL: sqlstore.SQLiteScheme + filepath.Join(dir, "seckill.db")}
	in.start()
	t.Cleanup(in.stop)
	var pasted []string
	testenv.Eventually(t, 30*time.Second, "the banner's lines for the walkthrough", func() (bool, string) {
		pasted = pasted[:0]
		for _, l := range strings.Split(in.logs.String(), "\n") {
			l = strings.TrimSpace(l)
			for _, name := range []string{"ADMIN=", "ALICE=", "BASE="} {
				if strings.HasPrefix(l, name) {
					pasted = append(pasted, l)
				}
			}
		}
		return len(pasted) == 3, in.logs.String()
	})
	// Bounded: the walkthrough waits for its order to be persisted.
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "sh", "-c", strings.Join(pasted, "\n")+"\n"+script)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the walkthrough failed: %v\n%s", err, out)
	}
	got := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	wantLines := strings.Split(strings.TrimRight(want, "\n"), "\n")
	if len(got) != len(wantLines) {
		t.Fatalf("the walkthrough printed %d lines, the README %d:\n%s", len(got), len(wantLines), out)
	}
	for i, w := range wantLines {
		// The CSV export's records end in CRLF (RFC 4180); the README shows lines.
		got[i] = strings.TrimSuffix(got[i], "\r")
		if !printedAs(w).MatchString(got[i]) {
			t.Fatalf("line %d of the walkthrough:\n got %s\nwant %s (as the README prints it)", i+1, got[i], w)
		}
	}
}

// fencedBlocks returns the contents of the fenced code blocks of md, in order.
func fencedBlocks(md string) []string {
	var blocks []string
	var cur []string
	in := false
	for _, l := range strings.Split(md, "\n") {
		switch {
		case strings.HasPrefix(l, "```") && !in:
			in, cur = true, nil
		case strings.HasPrefix(l, "```") && in:
			in = false
			blocks = append(blocks, strings.Join(cur, "\n")+"\n")
		case in:
			cur = append(cur, l)
		}
	}
	return blocks
}

// printedAs turns a line of the README's "What it prints" into the pattern of the lines
// it stands for: "…" stands for anything, and order ids, request ids and times (an
// order's, an audit entry's) for any of their kind.
func printedAs(line string) *regexp.Regexp {
	parts := strings.Split(line, "…")
	for i, p := range parts {
		p = regexp.QuoteMeta(p)
		p = regexp.MustCompile(`"(order_id|request_id)":"[^"]*"`).ReplaceAllString(p, `"$1":"[0-9A-Za-z]+"`)
		p = regexp.MustCompile(`"(created_at|expires_at|at)":"[^"]*"`).ReplaceAllString(p, `"$1":"[0-9T:.Z-]+"`)
		parts[i] = p
	}
	return regexp.MustCompile(fmt.Sprintf("^%s$", strings.Join(parts, ".*")))
}
