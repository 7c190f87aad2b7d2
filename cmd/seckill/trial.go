package main

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/gofrs/flock"

	"github.com/seckill/seckill/adapters/httpapi"
)

// This file holds what serve does for the zero-setup mode (trying and testing): one
// in-process Redis per database file, a JWT secret kept beside the database file, a
// listener on this machine only, and the start-up banner.

// trialHTTPAddr is where a service for trying and testing listens when
// SECKILL_HTTP_ADDR is unset: this machine only. defaultHTTPAddr is everyone else's.
const (
	trialHTTPAddr   = "127.0.0.1:8080"
	defaultHTTPAddr = ":8080"
)

// listenAddr is the address serve listens on: SECKILL_HTTP_ADDR when set, else
// trialHTTPAddr for a service for trying and testing and defaultHTTPAddr otherwise.
func (c *Config) listenAddr() string {
	switch {
	case c.HTTPAddr != "":
		return c.HTTPAddr
	case c.trial():
		return trialHTTPAddr
	}
	return defaultHTTPAddr
}

// lockDatabase takes an exclusive lock on path+".lock" for the rest of the process's
// life, so that no second serve with an in-process Redis of its own runs on the same
// database file: two such processes each count the stock in their own Redis and
// would sell the same units twice. The lock is flock(2)'s (LockFileEx on Windows),
// which the operating system drops when the process ends however it ends, kill -9
// included, so it never outlives its holder. The file stays; it holds the holder's
// pid, for the message of the next one. It returns a function that releases the lock,
// or one line saying who holds it.
func lockDatabase(path string) (func(), error) {
	lockPath := path + ".lock"
	lock := flock.New(lockPath)
	ok, err := lock.TryLock()
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", lockPath, err)
	}
	if !ok {
		holder := "another process"
		if b, err := os.ReadFile(lockPath); err == nil {
			if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
				holder = fmt.Sprintf("another seckill serve (pid %d)", pid)
			}
		}
		return nil, fmt.Errorf("%s is in use by %s with an in-process Redis of its own; two would sell the same units twice: stop it, or start this one in another directory or with SECKILL_DATABASE_URL naming another file (the lock is %s)",
			path, holder, lockPath)
	}
	// The pid is only for the message above: the lock is what counts.
	_ = os.WriteFile(lockPath, []byte(strconv.Itoa(os.Getpid())+"\n"), 0o600)
	return func() { _ = lock.Unlock() }, nil
}

// secretSuffix names the file beside a SQLite database that keeps the JWT secret a
// service for trying and testing made up, so tokens stay valid across restarts.
const secretSuffix = ".secret"

// madeUpSecret is a JWT secret serve makes up: 32 random bytes, in hex.
func madeUpSecret() (string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("make a JWT secret: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}

// keptSecret returns the JWT secret kept in path, making one up and writing it there
// (mode 0600) when the file does not exist yet. The file appears whole or not at all
// (written aside, then linked into place), so two processes starting at once agree on
// one secret. A file that holds less than minSecretLen bytes is an error naming it.
func keptSecret(path string) (string, error) {
	secret, err := readSecret(path)
	if errors.Is(err, fs.ErrNotExist) {
		if err := writeSecret(path); err != nil {
			return "", err
		}
		secret, err = readSecret(path)
	}
	return secret, err
}

// readSecret returns the JWT secret kept in path, or an error wrapping fs.ErrNotExist
// when there is no such file. A file that holds less than minSecretLen bytes is an
// error naming it.
func readSecret(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("read the JWT secret: %w", err)
	}
	secret := strings.TrimSpace(string(b))
	if len(secret) < minSecretLen {
		return "", fmt.Errorf("%s holds no JWT secret of at least %d bytes: remove it to have a new one made up", path, minSecretLen)
	}
	return secret, nil
}

// secretFile is the file that keeps the JWT secret serve makes up for a SQLite
// database (databaseURL names one, or is empty: the default seckill.db): beside the
// database file. It is "" for PostgreSQL, where a made-up secret lasts one run.
func secretFile(databaseURL string) string {
	path, isSQLite := (&Common{DatabaseURL: databaseURL}).sqliteFile()
	if !isSQLite {
		return ""
	}
	return path + secretSuffix
}

// writeSecret writes a made-up secret to path unless the file exists by then.
func writeSecret(path string) error {
	secret, err := madeUpSecret()
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("keep the JWT secret: %w", err)
	}
	defer os.Remove(tmp.Name())
	// CreateTemp makes the file 0600: only its owner may read the secret.
	_, err = tmp.WriteString(secret + "\n")
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Link(tmp.Name(), path)
	}
	if err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("keep the JWT secret: %w", err)
	}
	return nil
}

// jwtSecret settles the JWT secret when SECKILL_JWT_SECRET is unset (Validate allows
// that only for trying and testing): with a SQLite database, the one kept beside its
// file (made up at the first start); otherwise one made up for this run. It returns
// the file that keeps it ("" when made up for this run only).
func (c *Config) jwtSecret() (kept string, err error) {
	if kept = secretFile(c.DatabaseURL); kept != "" {
		c.JWTSecret, err = keptSecret(kept)
		return kept, err
	}
	c.JWTSecret, err = madeUpSecret()
	return "", err
}

// banner is what serve prints once it has started: where it listens, the live page
// and how to mint tokens; for a secret serve chose itself, ready-to-use tokens and
// curl lines too.
type banner struct {
	addr net.Addr
	// trial names what makes the service one for trying and testing; empty when
	// nothing does.
	trial string
	// chosen is set when serve chose the JWT secret itself; keptIn names the file
	// that keeps it, empty when it was made up for this run only.
	chosen bool
	keptIn string
	secret string
}

// base is the host:port to reach addr at from this machine.
func base(addr net.Addr) string {
	tcp, ok := addr.(*net.TCPAddr)
	if !ok {
		return addr.String()
	}
	if tcp.IP.IsUnspecified() {
		return net.JoinHostPort("localhost", strconv.Itoa(tcp.Port))
	}
	return tcp.String()
}

// print writes the banner to w.
func (b banner) print(w io.Writer) error {
	where := "every interface"
	if tcp, ok := b.addr.(*net.TCPAddr); ok && tcp.IP.IsLoopback() {
		where = fmt.Sprintf("this machine only; SECKILL_HTTP_ADDR=:%d listens on every interface", tcp.Port)
	}
	host := base(b.addr)
	var s strings.Builder
	s.WriteString("\n")
	if b.trial != "" {
		fmt.Fprintf(&s, "seckill is running for trying and testing, not production (%s).\n", b.trial)
	}
	fmt.Fprintf(&s, "Listening on %s (%s).\nLive sale page: http://%s/ui/\n", b.addr, where, host)
	if !b.chosen {
		s.WriteString("Tokens: seckill token --user N [--admin], with this service's SECKILL_JWT_SECRET exported.\n\n")
		_, err := io.WriteString(w, s.String())
		return err
	}
	tokens := httpapi.NewTokens([]byte(b.secret))
	admin, err := tokens.Mint(1, true, 24*time.Hour)
	if err != nil {
		return err
	}
	user, err := tokens.Mint(42, false, 24*time.Hour)
	if err != nil {
		return err
	}
	fmt.Fprintf(&s, `
Admin token (user 1):  %[1]s
User token  (user 42): %[2]s

  curl -s -XPOST %[3]s/api/v1/vouchers -H "Authorization: Bearer %[1]s" \
    -H 'Content-Type: application/json' -d '{"title":"Coffee","stock":100,"begins_at":"2020-01-01T00:00:00Z","ends_at":"2099-01-01T00:00:00Z"}'
  curl -s -XPOST %[3]s/api/v1/vouchers/1/grab -H "Authorization: Bearer %[2]s"
  curl -s %[3]s/api/v1/orders -H "Authorization: Bearer %[2]s"

For README's "A sale, step by step", paste into your shell:

  ADMIN=%[1]s
  ALICE=%[2]s
  BASE=%[3]s

`, admin, user, host)
	if b.keptIn != "" {
		abs, err := filepath.Abs(b.keptIn)
		if err != nil {
			abs = b.keptIn
		}
		fmt.Fprintf(&s, `The JWT secret is kept in %[1]s: these tokens work across restarts (for 24 hours).
To mint more (seckill token --user N [--admin]) or point seckill-lab loadtest here, first:

  export SECKILL_JWT_SECRET=$(cat %[2]s)

`, abs, shellQuote(abs))
	} else {
		fmt.Fprintf(&s, `The JWT secret was made up for this run: these tokens stop working at the next start.
To mint more (seckill token --user N [--admin]) or point seckill-lab loadtest here, first:

  export SECKILL_JWT_SECRET=%s

`, b.secret)
	}
	_, err = io.WriteString(w, s.String())
	return err
}

// shellQuote quotes s for a POSIX shell, as one word.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
