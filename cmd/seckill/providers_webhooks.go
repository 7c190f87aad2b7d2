package main

import (
	"go.uber.org/zap"

	"github.com/seckill/seckill/adapters/httpapi"
	"github.com/seckill/seckill/adapters/system"
	"github.com/seckill/seckill/adapters/webhook"
	"github.com/seckill/seckill/application"
	"github.com/seckill/seckill/domain"
	"github.com/seckill/seckill/ports"
)

// deliverWebhooks is the webhook dispatcher, with the contract's timings, counting
// each attempt; nil when webhooks are off. Its clock is the host's, the one the
// outbox's rows are stamped by.
func deliverWebhooks(cfg Config, hooks ports.WebhookOutbox, window domain.PaymentWindow, m *metrics, log *zap.Logger) (*application.DeliverWebhooks, error) {
	if cfg.WebhookURL == "" {
		return nil, nil
	}
	sender, err := webhook.NewSender(cfg.WebhookURL, cfg.webhookSecrets()...)
	if err != nil {
		return nil, err
	}
	return application.NewDeliverWebhooks(hooks, sender, httpapi.WebhookBody(window), system.Clock{}, application.WebhookOptions{Endpoint: cfg.WebhookURL},
		application.WebhookObserver{
			Attempt: m.webhookAttempt,
			Problem: func(err error) { log.Warn("webhooks", zap.Error(err)) },
		}), nil
}

// retryDelivery is the admin's retry of a webhook delivery, by the host's clock (the
// outbox's), enabling the configured endpoint again.
func retryDelivery(cfg Config, hooks ports.WebhookDeliveries) *application.RetryDelivery {
	return application.NewRetryDelivery(hooks, system.Clock{}, cfg.WebhookURL)
}
