package main

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Unset, the log format follows stderr: console for a person at a terminal, json for
// a file or a pipe; a configured one always wins.
func TestLogFormat(t *testing.T) {
	for _, tc := range []struct {
		configured string
		terminal   bool
		want       string
	}{
		{"", true, "console"},
		{"", false, "json"},
		{"json", true, "json"},
		{"console", false, "console"},
	} {
		if got := logFormat(tc.configured, tc.terminal); got != tc.want {
			t.Errorf("logFormat(%q, terminal %v) = %q, want %q", tc.configured, tc.terminal, got, tc.want)
		}
	}
}

// A service for trying and testing listens on this machine only unless told
// otherwise; any other on every interface.
func TestListenAddr(t *testing.T) {
	for _, tc := range []struct {
		redis, db, addr, want string
	}{
		{"", "", "", "127.0.0.1:8080"},
		{"", "", ":9000", ":9000"},
		{"redis://127.0.0.1:6379/0", "", "", "127.0.0.1:8080"},
		{"", "postgres://u@127.0.0.1:5432/seckill", "", "127.0.0.1:8080"},
		{"redis://127.0.0.1:6379/0", "postgres://u@127.0.0.1:5432/seckill", "", ":8080"},
		{"redis://127.0.0.1:6379/0", "postgres://u@127.0.0.1:5432/seckill", "10.0.0.1:80", "10.0.0.1:80"},
	} {
		cfg := serveDefaults(t)
		cfg.RedisURL, cfg.DatabaseURL, cfg.HTTPAddr = tc.redis, tc.db, tc.addr
		if got := cfg.listenAddr(); got != tc.want {
			t.Errorf("redis %q, database %q, SECKILL_HTTP_ADDR %q: listens on %q, want %q", tc.redis, tc.db, tc.addr, got, tc.want)
		}
	}
}

// The secret serve makes up is written once, readable by its owner only, and read
// back at every later start; a file holding no usable secret is an error naming it.
func TestKeptSecret(t *testing.T) {
	path := filepath.Join(t.TempDir(), "seckill.db.secret")
	first, err := keptSecret(path)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := fi.Mode().Perm(); got != 0o600 {
		t.Errorf("%s has mode %v, want 0600", path, got)
	}
	if len(first) < minSecretLen {
		t.Errorf("made-up secret %q is shorter than %d bytes", first, minSecretLen)
	}
	again, err := keptSecret(path)
	if err != nil || again != first {
		t.Fatalf("second read: %q, %v; want the first secret %q", again, err, first)
	}
	if left, _ := filepath.Glob(path + ".*"); len(left) != 0 {
		t.Errorf("temporary files left beside the secret: %v", left)
	}
	if err := os.WriteFile(path, []byte("short\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := keptSecret(path); err == nil || !strings.Contains(err.Error(), path) {
		t.Errorf("a short secret file: %v, want an error naming it", err)
	}
}

// With the secret configured the banner is short: where it listens, the live page,
// how to mint tokens, and no tokens of its own.
func TestBannerWithAConfiguredSecret(t *testing.T) {
	var out strings.Builder
	b := banner{addr: &net.TCPAddr{IP: net.IPv6unspecified, Port: 8080}, secret: "0123456789abcdef"}
	if err := b.print(&out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Listening on [::]:8080 (every interface)", "Live sale page: http://localhost:8080/ui/", "seckill token --user N [--admin]"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("banner lacks %q:\n%s", want, out.String())
		}
	}
	for _, unwanted := range []string{"Admin token", "trying and testing", "0123456789abcdef"} {
		if strings.Contains(out.String(), unwanted) {
			t.Errorf("banner shows %q:\n%s", unwanted, out.String())
		}
	}
}
