package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/seckill/seckill/cmd/internal/load"
)

// labDatabase returns the database a lab command's services use, migrated with bin:
// SECKILL_DATABASE_URL's, or with nothing configured a SQLite file of the command's
// own (never the working directory's seckill.db), which the returned function removes.
func labDatabase(ctx context.Context, bin, name string) (dbURL string, remove func(), err error) {
	remove = func() {}
	dbURL = os.Getenv("SECKILL_DATABASE_URL")
	if dbURL == "" {
		dir, err := os.MkdirTemp("", "seckill-"+name+"-")
		if err != nil {
			return "", nil, fmt.Errorf("make a directory for the %s's database: %w", name, err)
		}
		remove = func() { _ = os.RemoveAll(dir) }
		dbURL = "sqlite:" + filepath.Join(dir, name+".db")
	}
	if err := migrateUp(ctx, bin, dbURL); err != nil {
		remove()
		return "", nil, err
	}
	return dbURL, remove, nil
}

// seckillBinary returns the seckill binary to run: the one named, or the one beside
// this command's own, or the one on PATH.
func seckillBinary(named string) (string, error) {
	if named != "" {
		return exec.LookPath(named)
	}
	if self, err := os.Executable(); err == nil {
		beside := filepath.Join(filepath.Dir(self), "seckill")
		if fi, err := os.Stat(beside); err == nil && !fi.IsDir() {
			return beside, nil
		}
	}
	if bin, err := exec.LookPath("seckill"); err == nil {
		return bin, nil
	}
	return "", errors.New("no seckill binary beside seckill-lab nor on PATH; build both (go build -o bin/ ./cmd/seckill ./cmd/seckill-lab) or name one")
}

// service is one `seckill serve` a lab command runs.
type service struct {
	base, prefix, secret string
	cmd                  *exec.Cmd
	exited               chan struct{}
	logs                 *logBuffer
}

// readyTimeout bounds how long a service may take to start; stopTimeout how long it
// may take to stop once told (serve's shutdown timeout, 15 s by default, and a drain
// of what the in-process Redis holds).
const (
	readyTimeout = time.Minute
	stopTimeout  = time.Minute
)

// migrateUp runs `seckill migrate up` (the binary bin) on the database dbURL.
func migrateUp(ctx context.Context, bin, dbURL string) error {
	migrate := exec.CommandContext(ctx, bin, "migrate", "up")
	migrate.Env = append(os.Environ(), "SECKILL_DATABASE_URL="+dbURL)
	if out, err := migrate.CombinedOutput(); err != nil {
		return fmt.Errorf("seckill migrate up: %w: %s", err, bytes.TrimSpace(out))
	}
	return nil
}

// serveStrategy runs `seckill serve` (the binary bin) with strategy on a free loopback
// port, a fresh key prefix and secret, both roles, no periodic reconciliation (a sale
// is over in seconds), the database dbURL and for everything else the SECKILL_*
// settings of this process, and returns once it is ready.
func serveStrategy(ctx context.Context, bin, strategy, dbURL string) (*service, error) {
	var b [24]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, fmt.Errorf("secret: %w", err)
	}
	prefix := os.Getenv("SECKILL_KEY_PREFIX")
	if prefix == "" {
		prefix = "seckill"
	}
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	svc := &service{
		base: "http://" + addr, prefix: prefix + "-lab-" + hex.EncodeToString(b[:4]), secret: hex.EncodeToString(b[4:]),
		exited: make(chan struct{}), logs: &logBuffer{},
	}
	level := os.Getenv("SECKILL_LOG_LEVEL")
	if level == "" {
		level = "warn" // the lab's own report is what matters
	}
	svc.cmd = exec.Command(bin, "serve")
	svc.cmd.Env = append(os.Environ(),
		"SECKILL_STOCK_STRATEGY="+strategy, "SECKILL_DATABASE_URL="+dbURL,
		"SECKILL_HTTP_ADDR="+addr, "SECKILL_METRICS_ADDR=", "SECKILL_KEY_PREFIX="+svc.prefix,
		"SECKILL_JWT_SECRET="+svc.secret, "SECKILL_ROLES=api,worker", "SECKILL_CONSUMER=",
		"SECKILL_RECONCILE_INTERVAL=0", "SECKILL_LOG_LEVEL="+level,
	)
	svc.cmd.Stdout, svc.cmd.Stderr = svc.logs, svc.logs
	if err := svc.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start seckill serve: %w", err)
	}
	go func() {
		_ = svc.cmd.Wait()
		close(svc.exited)
	}()
	if err := load.WaitReady(ctx, svc.base, readyTimeout, svc.exited); err != nil {
		_ = svc.stop()
		return nil, fmt.Errorf("seckill serve: %w:\n%s", err, svc.logs)
	}
	return svc, nil
}

// stop sends serve SIGTERM and waits for it to exit: an error when it does not within
// stopTimeout (it is killed then) or exits other than 0.
func (s *service) stop() error {
	select {
	case <-s.exited:
	default:
		_ = s.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-s.exited:
		case <-time.After(stopTimeout):
			_ = s.cmd.Process.Kill()
			<-s.exited
			return fmt.Errorf("seckill serve did not stop within %v of SIGTERM:\n%s", stopTimeout, s.logs)
		}
	}
	if !s.cmd.ProcessState.Success() {
		return fmt.Errorf("seckill serve exited with %v:\n%s", s.cmd.ProcessState, s.logs)
	}
	return nil
}

// freeAddr returns a loopback address nobody listens on now.
func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("find a free port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// logBuffer holds what a service wrote, for the error that needs it.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return strings.TrimSpace(b.buf.String())
}
