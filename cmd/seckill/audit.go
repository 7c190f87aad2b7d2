package main

import (
	"context"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/seckill/seckill/application"
	"github.com/seckill/seckill/domain"
)

// periodicReconciler is who the audit log names for the repairs of the periodic
// reconciliation (`seckill reconcile --repair` names "cli:" and the OS user).
var periodicReconciler = domain.Author{Actor: "reconcile"}

// reconcileLease names the lease of the periodic reconciliation (sqlstore.Leases).
const reconcileLease = "reconcile"

// maxReconcileRound bounds one round of the periodic reconciliation; the next round
// carries on where it stopped.
const maxReconcileRound = 30 * time.Second

// audit runs one round of the periodic reconciliation, on one instance at a time: the
// one holding the lease, which it keeps from round to round and which passes to
// another instance once it has not been renewed for an interval and a round. The
// round checks vouchers for at most min(interval, maxReconcileRound), then records
// where it stopped with the lease, so the next round — here or on the instance that
// took the lease over — carries on from there. It repairs what it finds (every repair
// is idempotent and safe during a live sale) and logs each drift with whether it was
// repaired; a voucher it could not check is logged and counted
// (seckill_reconcile_unchecked_total), and checked again at the next pass.
func audit(ctx context.Context, a *app, interval time.Duration, log *zap.Logger) error {
	budget := min(interval, maxReconcileRound)
	holder := a.Queue.Consumer()
	state, ok, err := a.Leases.Acquire(ctx, reconcileLease, holder, interval+budget+time.Minute)
	if err != nil {
		return fmt.Errorf("take the lease: %w", err)
	}
	if !ok {
		log.Debug("reconcile: another instance holds the lease")
		return nil
	}
	after, _ := domain.ParseVoucherID(state) // empty or unreadable: a new pass
	res, err := a.Reconcile.Round(ctx, application.RoundCmd{After: after, Budget: budget, Repair: true, By: periodicReconciler})
	if err != nil {
		return err
	}
	next := ""
	if res.Next != 0 {
		next = res.Next.String()
	}
	_, err = a.Leases.Save(ctx, reconcileLease, holder, next)
	if err != nil {
		err = fmt.Errorf("keep where the round stopped: %w", err)
	}
	a.Metrics.reconciled(res.Reports)
	for _, u := range res.Unchecked {
		a.Metrics.unchecked.Inc()
		log.Error("reconcile: voucher not checked; checked again at the next pass",
			zap.Stringer("voucher", u.VoucherID), zap.Error(u.Err))
	}
	for _, r := range res.Reports {
		for _, d := range r.Drifts {
			fields := []zap.Field{zap.Stringer("voucher", r.VoucherID), zap.String("kind", string(d.Kind)),
				zap.Int("count", d.Count), zap.Strings("examples", d.Examples)}
			if d.Repaired {
				log.Warn("drift between redis and the database, repaired", fields...)
				continue
			}
			log.Error("drift between redis and the database, not repaired; see seckill reconcile",
				append(fields, zap.String("repair_error", d.RepairError))...)
		}
	}
	return err
}
