package main

import (
	"context"
	"time"

	"go.uber.org/zap"
)

// healAfterRestarts heals every live voucher's sale state from the database
// (Reconcile.Heal) each time the Redis client sees that the server restarted — perhaps
// from an older snapshot — or failed over to a replica that may have been behind
// (redisstore.Restarts: a new run_id on a new connection). The grab path answers 503
// from the first command after the change until the heal succeeds; a failed heal is
// retried every second.
//
// Each heal that stands is recorded with the servers' run_ids (sqlstore.Heals), so an
// instance that starts later knows whether the servers it finds are the ones last
// healed (suspectUnhealed).
func healAfterRestarts(ctx context.Context, a *app, log *zap.Logger) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-a.Restarts.Changed():
		}
		if a.Restarts.Healing() {
			log.Warn("redis restarted or failed over (its run_id changed): grabs wait while the live vouchers are healed from the database")
		}
		for a.Restarts.Healing() && ctx.Err() == nil {
			if err := healOnce(ctx, a, log); err != nil {
				log.Warn("heal after a redis restart; retrying", zap.Error(err))
				select {
				case <-ctx.Done():
				case <-time.After(time.Second):
				}
			}
		}
	}
}

// healOnce heals every live voucher (Reconcile.Heal) and, when no newer change of
// server overtook it, opens the grab path again and records the servers healed.
func healOnce(ctx context.Context, a *app, log *zap.Logger) error {
	gen := a.Restarts.Generation()
	servers := a.Restarts.Servers()
	if err := a.Reconcile.Heal(ctx); err != nil {
		return err
	}
	if !a.Restarts.Healed(gen) {
		return nil // the servers changed again meanwhile: the caller heals again
	}
	if err := a.Heals.Record(ctx, servers); err != nil {
		log.Warn("record the heal; the next instance to start heals again", zap.Error(err))
	}
	log.Info("live vouchers healed from the database: grabs are taken again")
	return nil
}

// suspectUnhealed has the live vouchers healed before any grab when a Redis server
// this instance finds is not the one last healed (another run_id, or none recorded):
// it may have restarted from an older snapshot while every instance was down with
// it, so no running process saw the change (redisstore.Restarts sees only changes
// after it started watching). A record that cannot be read counts as unhealed. The
// first heal runs here, before the API listens, so an instance does not start by
// answering 503; one that fails leaves the grab path closed, and healAfterRestarts
// retries it.
func suspectUnhealed(ctx context.Context, a *app, log *zap.Logger) {
	servers := a.Restarts.Servers()
	if len(servers) == 0 {
		return // not watched: the in-process Redis starts empty with the process
	}
	healed, err := a.Heals.Healed(ctx)
	if err != nil {
		log.Warn("read which redis servers were healed; healing the live vouchers to be safe", zap.Error(err))
	}
	for server, runID := range servers {
		if healed[server] == runID {
			continue
		}
		a.Restarts.Suspect()
		if err := healOnce(ctx, a, log); err != nil {
			log.Warn("heal redis servers not healed since they started; grabs wait, and the heal is retried", zap.Error(err))
		}
		return
	}
}
