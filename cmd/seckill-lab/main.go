// Command seckill-lab measures a seckill from outside, as the service's lab, kept out
// of the service's binary: `demo` runs a whole flash sale against a `seckill serve` of
// its own, `loadtest` fires one at a running service, both checking the three
// promises, `compare` runs the same sale against a service of each
// stock strategy side by side, `seed` fills a database and Redis with generated
// sales for benchmarks, and `cost` measures the CPU every server process spends on a
// grab against a hello-world request. `seckill-lab --help` lists the flags.
//
// Exit status: 0 when every promise was checked and kept; 1 when a promise was broken,
// nothing was served (no request got a sale's answer: the service was down or failed
// every grab), or the command failed; 2 for a bad flag or setting; 3 when the run could
// not verify its sale: no promise was seen broken, but the orders persisted could not
// be counted (the service stopped answering its stats).
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/alecthomas/kong"

	"github.com/seckill/seckill/cmd/internal/load"
)

type cli struct {
	Demo     demoCmd     `cmd:"" help:"Run a whole flash sale against a seckill serve of its own on a loopback port; exit 1 if a promise was broken or nothing was served, 3 if the orders could not be counted."`
	Loadtest loadtestCmd `cmd:"" help:"Fire a flash sale at a running seckill (--url) and report; exit 1 if a promise was broken or nothing was served, 3 if the orders could not be counted."`
	Compare  compareCmd  `cmd:"" help:"Fire the same flash sale at a seckill serve of each stock strategy in turn and print them side by side."`
	Seed     seedCmd     `cmd:"" help:"Fill the database and Redis with generated, consistent sales (for benchmarks)."`
	Cost     costCmd     `cmd:"" help:"Measure the CPU every server process spends on one successful grab, against a hello-world request."`
}

// exitUnverified is the exit status of a run that could not verify its sale.
const exitUnverified = 3

func main() {
	var c cli
	parser := kong.Must(&c,
		kong.Name("seckill-lab"),
		kong.Description("Measure a seckill: a demo sale, load tests, the stock strategies compared, generated data."),
	)
	kctx, err := parser.Parse(os.Args[1:])
	if err != nil {
		fmt.Fprintf(os.Stderr, "seckill-lab: %v\n", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	kctx.BindTo(ctx, (*context.Context)(nil))
	err = kctx.Run()
	stop()
	if err == nil {
		return
	}
	fmt.Fprintf(os.Stderr, "seckill-lab: %v\n", err)
	if errors.Is(err, load.ErrUnverified) {
		os.Exit(exitUnverified)
	}
	os.Exit(1)
}
