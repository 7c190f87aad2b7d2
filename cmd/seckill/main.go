// Command seckill is the flash-sale voucher service: `serve` runs the API, `migrate`
// manages the database schema, `token` mints a JWT for local use and `voucher update`
// changes a sale through the API; the demo and the load tools are seckill-lab's. Settings come
// from flags and SECKILL_* environment variables, flags winning; `seckill --help`
// lists them.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"

	"github.com/alecthomas/kong"
)

type cli struct {
	Serve     serveCmd     `cmd:"" help:"Run the HTTP API and the background jobs."`
	Migrate   migrateCmd   `cmd:"" help:"Apply, roll back or show the database schema migrations."`
	Token     tokenCmd     `cmd:"" help:"Print a signed JWT for local use."`
	Reconcile reconcileCmd `cmd:"" help:"Check that Redis and the database agree per voucher; exit 1 while drift remains."`
	Voucher   voucherCmd   `cmd:"" help:"An admin's changes of a voucher, through the API (voucher update)."`

	Version kong.VersionFlag `help:"Print the module version and VCS revision, and exit."`
}

func main() {
	os.Exit(run(os.Args[1:]))
}

// run parses args, runs the chosen command and returns the exit status: 0 on success,
// 1 when the command failed, 2 for a bad flag or setting. Errors are one line on stderr.
func run(args []string) int {
	var c cli
	parser, err := kong.New(&c,
		kong.Name("seckill"),
		kong.Description("A flash-sale voucher service: exactly N sold, never twice to one user, no order lost."),
		kong.Exit(func(code int) { panic(exitCode(code)) }),
		kong.Vars{"version": version()},
	)
	if err != nil {
		fmt.Fprintf(os.Stderr, "seckill: %v\n", err)
		return 2
	}
	return runParsed(parser, args)
}

// version describes this build from its build information (versionOf).
func version() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "seckill (no build information)"
	}
	return versionOf(info)
}

// versionOf is the version line of a build: the module's version ("(devel)" when built
// from a checkout), the Go version, and the VCS revision and time, with "+dirty" when
// the tree had uncommitted changes. `go build` in a git clone records the revision; go
// run, a git worktree (whose .git is a file the go command does not follow) and
// -buildvcs=false record none, and the line says so rather than only "unknown".
func versionOf(info *debug.BuildInfo) string {
	rev, at, dirty := "", "", ""
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			at = " " + s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = "+dirty"
			}
		}
	}
	if rev == "" {
		return fmt.Sprintf("seckill %s (%s, revision unknown: go run, a git worktree and -buildvcs=false record none; go build in a git clone does)",
			info.Main.Version, info.GoVersion)
	}
	return fmt.Sprintf("seckill %s (%s, revision %s%s%s)", info.Main.Version, info.GoVersion, rev, dirty, at)
}

// exitCode carries kong's requested exit (after --help) out of Parse.
type exitCode int

func runParsed(parser *kong.Kong, args []string) (status int) {
	defer func() {
		if r := recover(); r != nil {
			code, ok := r.(exitCode)
			if !ok {
				panic(r)
			}
			status = int(code)
		}
	}()
	kctx, err := parser.Parse(args)
	if err != nil {
		fmt.Fprintf(os.Stderr, "seckill: %v\n", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	kctx.BindTo(ctx, (*context.Context)(nil))
	if err := kctx.Run(); err != nil {
		fmt.Fprintf(os.Stderr, "seckill: %v\n", err)
		var bad settingError
		if errors.As(err, &bad) {
			return 2
		}
		return 1
	}
	return 0
}

// settingError is a problem with the settings that only running finds (a database
// whose schema is behind): it exits with status 2, as a bad flag does.
type settingError struct {
	error
}

func (e settingError) Unwrap() error { return e.error }
