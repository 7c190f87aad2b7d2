package main

import (
	"context"

	"go.uber.org/zap"

	"github.com/seckill/seckill/domain"
)

// recordDeadlines records, once at start-up, the payment deadline of the orders
// awaiting payment stored without one — before deadlines were recorded, or by an
// older instance — by the window this instance runs with (created_at plus
// SECKILL_PAYMENT_TIMEOUT), so their deadline is kept from then on through a restart
// with another timeout (DESIGN.md v1.3 "Time"). The sweeper meanwhile judges them by
// the same window. A failure is returned (the job logs it): they keep being judged by the window in force.
func recordDeadlines(ctx context.Context, a *app, cfg Config, log *zap.Logger) error {
	n, err := a.Orders.RecordDeadlines(ctx, domain.PaymentWindow(cfg.PaymentTimeout))
	if n > 0 {
		log.Info("recorded the payment deadlines of orders stored without one", zap.Int("orders", n),
			zap.Duration("payment_timeout", cfg.PaymentTimeout))
	}
	return err
}
