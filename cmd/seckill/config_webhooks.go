package main

import (
	"encoding/base64"
	"errors"
	"fmt"
	"net/url"
	"strings"
)

// minWebhookKey is the shortest webhook signing key serve accepts, in bytes.
const minWebhookKey = 24

// checkWebhook validates the webhook settings: a URL, when set, is an absolute http
// or https URL and comes with a secret; a secret, when set, is whsec_ and the base64
// of at least minWebhookKey bytes. The secret is never quoted back.
func (c *Config) checkWebhook() error {
	if c.WebhookURL != "" {
		u, err := url.Parse(c.WebhookURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("SECKILL_WEBHOOK_URL (--webhook-url): %q is not an http or https URL", c.WebhookURL)
		}
		if c.WebhookSecret == "" {
			return errors.New("SECKILL_WEBHOOK_SECRET (--webhook-secret): required with SECKILL_WEBHOOK_URL")
		}
	}
	if c.WebhookSecret == "" {
		return nil
	}
	for i, secret := range c.webhookSecrets() {
		key, ok := strings.CutPrefix(secret, "whsec_")
		raw, err := base64.StdEncoding.DecodeString(key)
		if !ok || err != nil || len(raw) < minWebhookKey {
			return fmt.Errorf("SECKILL_WEBHOOK_SECRET (--webhook-secret): secret %d must be whsec_ and the base64 of at least %d bytes", i+1, minWebhookKey)
		}
	}
	return nil
}

// webhookSecrets are the secrets of WebhookSecret, comma-separated: each delivery is
// signed with each (several while one is rotated).
func (c *Config) webhookSecrets() []string {
	var out []string
	for _, s := range strings.Split(c.WebhookSecret, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}
