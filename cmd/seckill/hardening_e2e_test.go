package main

import (
	"context"
	"errors"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/seckill/seckill/adapters/sqlstore"
	"github.com/seckill/seckill/adapters/testenv"
)

// TestServeRejectsNonFiniteNumbers: NaN and ±Inf are accepted by the float parser
// and pass every comparison-based range check; serve must refuse them at start.
func TestServeRejectsNonFiniteNumbers(t *testing.T) {
	bin := seckillBinary(t)
	for _, setting := range []string{"SECKILL_USER_RATE=NaN", "SECKILL_GRAB_RATE=NaN", "SECKILL_GRAB_RATE=+Inf", "SECKILL_USER_RATE=-Inf", "SECKILL_GRAB_RATE=inf"} {
		t.Run(setting, func(t *testing.T) {
			out, err := runCmd(bin, append(os.Environ(), "SECKILL_REDIS_URL=redis://127.0.0.1:1/0",
				"SECKILL_DATABASE_URL=postgres://u@127.0.0.1:1/db", "SECKILL_JWT_SECRET="+e2eSecret,
				"SECKILL_HTTP_ADDR="+freeAddr(t), setting), "serve")
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() != 2 {
				t.Fatalf("serve with %s: err %v, output %q", setting, err, out)
			}
			name, _, _ := strings.Cut(setting, "=")
			if lines := strings.Split(strings.TrimSpace(out), "\n"); len(lines) != 1 || !strings.Contains(out, name) {
				t.Fatalf("want one line naming %s, got %q", name, out)
			}
		})
	}
}

// TestServeRefusesADatabaseBehindItsSchema: against a PostgreSQL database never
// migrated, or missing a migration, serve exits 2 with one line saying what to run,
// instead of answering every call 500.
func TestServeRefusesADatabaseBehindItsSchema(t *testing.T) {
	bin := seckillBinary(t)
	dbURL := testenv.PostgresURL(t)
	env := append(os.Environ(),
		"SECKILL_HTTP_ADDR="+freeAddr(t),
		"SECKILL_REDIS_URL="+testenv.RedisURL(t),
		"SECKILL_DATABASE_URL="+dbURL,
		"SECKILL_JWT_SECRET="+e2eSecret,
		"SECKILL_KEY_PREFIX=e"+testenv.Unique(),
	)
	refuses := func(what string) {
		t.Helper()
		out, err := runCmd(bin, env, "serve")
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 2 {
			t.Fatalf("serve on %s: err %v, output %q", what, err, out)
		}
		if lines := strings.Split(strings.TrimSpace(out), "\n"); len(lines) != 1 || !strings.Contains(out, "seckill migrate up") {
			t.Fatalf("serve on %s: want one line naming `seckill migrate up`, got %q", what, out)
		}
	}
	refuses("a database never migrated")

	if out, err := runCmd(bin, env, "migrate", "up"); err != nil {
		t.Fatalf("migrate up: %v\n%s", err, out)
	}
	forgetNewestMigration(t, dbURL)
	refuses("a database missing its newest migration")
}

// TestReadyzFailsWhileTheSchemaIsBehind: a schema that falls behind while serve runs
// makes it not ready.
func TestReadyzFailsWhileTheSchemaIsBehind(t *testing.T) {
	in := startInstance(t)
	if status, body := in.call(http.MethodGet, "/readyz", "", nil); status != http.StatusOK {
		t.Fatalf("/readyz on a migrated database: %d %v", status, body)
	}
	forgetNewestMigration(t, in.dbURL)
	status, body := in.call(http.MethodGet, "/readyz", "", nil)
	if checks, _ := body["checks"].(map[string]any); status != http.StatusServiceUnavailable || checks["database"] != "down" {
		t.Fatalf("/readyz with the schema behind: %d %v, want 503 with the database down", status, body)
	}
}

// forgetNewestMigration makes the database at dbURL look partly migrated: its newest
// migration is no longer recorded as applied.
func forgetNewestMigration(t *testing.T, dbURL string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	db, err := sqlstore.Open(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, "DELETE FROM bun_migrations WHERE id = (SELECT max(id) FROM bun_migrations)"); err != nil {
		t.Fatal(err)
	}
}

// TestServeAnswersMalformedRequestsInJSON: what net/http answers by itself, before
// Echo, is the contract's JSON error body on the real server too.
func TestServeAnswersMalformedRequestsInJSON(t *testing.T) {
	in := startInstance(t)
	conn, err := net.Dial("tcp", strings.TrimPrefix(in.base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := conn.Write([]byte("GET /api/v1/vouchers/%zz HTTP/1.1\r\nHost: x\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	raw := make([]byte, 4096)
	n, _ := conn.Read(raw)
	got := string(raw[:n])
	if !strings.HasPrefix(got, "HTTP/1.1 400 ") || !strings.Contains(got, "Content-Type: application/json") || !strings.Contains(got, `"code":"invalid_request"`) {
		t.Fatalf("malformed request answered %q", got)
	}
}
