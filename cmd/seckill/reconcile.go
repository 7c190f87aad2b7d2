package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/user"
	"strings"

	"github.com/seckill/seckill/application"
	"github.com/seckill/seckill/domain"
)

type reconcileCmd struct {
	Common `embed:""`

	Voucher string `name:"voucher" help:"Check only this voucher (default: every voucher whose sale has not ended)."`
	Repair  bool   `name:"repair" help:"Fix the drift found (idempotent, safe during a live sale)."`
	JSON    bool   `name:"json" help:"Print the findings as one JSON object."`
}

// errDrift makes reconcile exit 1 when drift remains.
var errDrift = errors.New("drift remains")

// Validate checks the flags before Run.
func (c *reconcileCmd) Validate() error {
	if c.Voucher != "" {
		if _, err := domain.ParseVoucherID(c.Voucher); err != nil {
			return fmt.Errorf("--voucher: %q is not a positive integer", c.Voucher)
		}
	}
	if c.embeddedRedis() {
		// The in-process Redis lives inside serve; there is nothing to reconcile with.
		return errors.New("SECKILL_REDIS_URL (--redis-url) or SECKILL_REDIS_SENTINELS (--redis-sentinels): is required by reconcile")
	}
	return c.Common.validate()
}

// Run checks, repairs on request, prints the findings, and fails when drift remains.
func (c *reconcileCmd) Run(ctx context.Context) error {
	log, err := newLogger(c.LogLevel, c.LogFormat)
	if err != nil {
		return err
	}
	defer func() { _ = log.Sync() }()
	rc, cleanup, err := buildReconcile(ctx, c.Common, log)
	if err != nil {
		return err
	}
	defer cleanup()
	var id domain.VoucherID
	if c.Voucher != "" {
		id, _ = domain.ParseVoucherID(c.Voucher)
	}
	reports, err := rc.Handle(ctx, application.ReconcileCmd{Voucher: id, Repair: c.Repair,
		By: domain.Author{Actor: "cli:" + osUser()}})
	if errors.Is(err, domain.ErrNotFound) {
		return fmt.Errorf("voucher %s does not exist", c.Voucher)
	}
	if err != nil {
		return err
	}
	if c.JSON {
		err = printReconcileJSON(os.Stdout, reports)
	} else {
		err = printReconcile(os.Stdout, reports, c.Repair)
	}
	if err != nil {
		return err
	}
	for _, r := range reports {
		if !r.Consistent() {
			return errDrift
		}
	}
	return nil
}

// osUser names who runs this command, for the audit log: the OS account's name, or
// $USER, or "unknown".
func osUser() string {
	if u, err := user.Current(); err == nil && u.Username != "" {
		return u.Username
	}
	return cmp.Or(os.Getenv("USER"), "unknown")
}

func printReconcileJSON(w io.Writer, reports []application.VoucherReconciliation) error {
	consistent := true
	for _, r := range reports {
		consistent = consistent && r.Consistent()
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(map[string]any{"consistent": consistent, "vouchers": reports})
}

func printReconcile(w io.Writer, reports []application.VoucherReconciliation, repair bool) error {
	var b strings.Builder
	if len(reports) == 0 {
		b.WriteString("no voucher on sale to check\n")
	}
	for _, r := range reports {
		if len(r.Drifts) == 0 {
			fmt.Fprintf(&b, "voucher %s: consistent\n", r.VoucherID)
			continue
		}
		fmt.Fprintf(&b, "voucher %s: %d kind(s) of drift\n", r.VoucherID, len(r.Drifts))
		for _, d := range r.Drifts {
			state := "found"
			switch {
			case d.Repaired:
				state = "repaired"
			case repair:
				state = "NOT repaired: " + d.RepairError
			}
			fmt.Fprintf(&b, "  %-28s %5d  %s\n", d.Kind, d.Count, state)
			for _, e := range d.Examples {
				fmt.Fprintf(&b, "      e.g. %s\n", e)
			}
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}
